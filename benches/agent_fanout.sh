#!/usr/bin/env bash
# What one agent of a fleet costs at --fanout 20 with --paths 8 (issue 39),
# beside a bare C prober doing the same probes (benches/prober_c/prober.c in
# its stamps mode: Synapse's default kernel stamps), in one run, alternating.
# 20 peers (a C epoll echo on 20 ports of 127.0.0.1, CPU 1), each probed 10
# times a second (the agent's default interval): 200 probes/s, which the
# agent spreads over 8 source ports, 25/s each. Per round: the prober's CPU
# (the whole process, every thread, from /proc over SECONDS after 5 s), its
# RSS at the end, and for the agent the median time to render /metrics
# (20 scrapes with curl).
#
#   benches/agent_fanout.sh [ROUNDS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; secs=${2:-20}; peers=20; first=23100
bin=${SYNAPSE_BIN:-target/release/synapse}
[ -x "$bin" ] || cargo build --release --quiet
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
gcc -O2 -o "$dir/prober" benches/prober_c/prober.c
gcc -O2 -o "$dir/echo" benches/prober_c/echo.c

"$dir/echo" "$first" "$peers" 1 > "$dir/echo.out" &
until grep -q ready "$dir/echo.out" 2>/dev/null; do sleep 0.1; done

# The fleet's list: the 20 peers, as discovery would hand them over.
: > "$dir/peers.toml"
for ((i = 0; i < peers; i++)); do
  printf '[peers.h%02d]\naddress = "127.0.0.1:%d"\nlabel = ["rack=r%d"]\n' \
    "$i" $((first + i)) $((i % 4)) >> "$dir/peers.toml"
done

ticks() { awk '{print $14 + $15}' "$1"; } # /proc/.../stat -> utime + stime
hz=$(getconf CLK_TCK)
cpu_over() { # STAT_FILE -> % of one core over $secs
  local a b; a=$(ticks "$1"); sleep "$secs"; b=$(ticks "$1")
  echo "scale=2; 100 * ($b - $a) / $hz / $secs" | bc
}
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

run_agent() {
  "$bin" agent --no-ui --reflect none --name h99 --cpu 0 \
    --peers-file "$dir/peers.toml" --fanout 20 --paths 8 \
    --label rack=r0 --series-label rack --metrics-listen 127.0.0.1:23099 \
    >/dev/null 2>"$dir/agent.log" &
  local pid=$!
  sleep 5
  local cpu; cpu=$(cpu_over "/proc/$pid/stat")
  local rss; rss=$(rss_kib "$pid")
  local render
  render=$(for _ in $(seq 20); do
      curl -s -o /dev/null -w '%{time_total}\n' http://127.0.0.1:23099/metrics
    done | sort -n | awk '{v[NR] = $1} END {printf "%.0f", (v[10] + v[11]) / 2 * 1e6}')
  local lines; lines=$(curl -s http://127.0.0.1:23099/metrics | grep -vc '^#')
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  echo "$cpu $rss $render $lines"
}

run_c() {
  "$dir/prober" "$first" "$peers" 10 $((secs + 6)) 1000 0 stamps > "$dir/c.out" &
  local pid=$!
  sleep 5
  local cpu; cpu=$(cpu_over "/proc/$pid/stat")
  local rss; rss=$(rss_kib "$pid")
  wait "$pid"
  echo "$cpu $rss"
}

for ((r = 1; r <= rounds; r++)); do
  order="agent c"; ((r % 2 == 0)) && order="c agent"
  for c in $order; do
    if [ "$c" = agent ]; then res=$(run_agent); else res=$(run_c); fi
    printf '%s %s\n' "$c" "$res" | tee -a "$dir/results" >&2
    echo "result $c $res"
  done
done

median() { sort -n | awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s", m}'; }
echo "one agent at --fanout 20 --paths 8, 20 peers x 10/s (200 probes/s), $rounds rounds of $secs s:"
for c in agent c; do
  cpu=$(awk -v c="$c" '$1 == c {print $2}' "$dir/results" | median)
  rss=$(awk -v c="$c" '$1 == c {print $3}' "$dir/results" | median)
  if [ "$c" = agent ]; then
    render=$(awk '$1 == "agent" {print $4}' "$dir/results" | median)
    lines=$(awk '$1 == "agent" {print $5}' "$dir/results" | median)
    printf '%-6s CPU %5.2f %% of a core, RSS %s KiB, /metrics rendered in %s us (%s series)\n' "$c" "$cpu" "$rss" "$render" "$lines"
  else
    printf '%-6s CPU %5.2f %% of a core, RSS %s KiB\n' "$c" "$cpu" "$rss"
  fi
done
