#!/usr/bin/env bash
# The agent's prober against a bare C prober doing the least the same job
# needs (benches/prober_c/prober.c), in one run, alternating: PEERS peers
# (default 1000) at 10 requests/s each on a 1 ms tick, against a C epoll
# echo on as many ports of 127.0.0.1 (benches/prober_c/echo.c, CPU 1).
# Each round measures each prober's CPU from /proc over SECONDS after 5 s.
#
#   benches/agent_vs_c.sh [ROUNDS] [SECONDS] [PEERS]
#   CONFIGS="syn user c c-stamps c-mmsg" (default: all five)
#     syn     synapse agent, default settings (software kernel stamps)
#     user    synapse agent --timestamps user
#     c       the bare C prober, recvfrom per reply
#     c-stamps  the bare C prober with Synapse's default kernel stamps
#     c-mmsg  the bare C prober, one recvmmsg per wake-up
#     c-sendmmsg  the same, and a tick's requests in one sendmmsg
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; secs=${2:-15}; peers=${3:-1000}; first=21000
configs=${CONFIGS:-syn user c c-stamps c-mmsg}
bin=target/release/synapse
[ -x "$bin" ] || cargo build --release --quiet
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
gcc -O2 -o "$dir/prober" benches/prober_c/prober.c
gcc -O2 -o "$dir/echo" benches/prober_c/echo.c

"$dir/echo" "$first" "$peers" 1 > "$dir/echo.out" &
until grep -q ready "$dir/echo.out" 2>/dev/null; do sleep 0.1; done

: > "$dir/peers.toml"
for ((i = 0; i < peers; i++)); do
  printf '[peers.p%04d]\naddress = "127.0.0.1:%d"\n' "$i" $((first + i)) >> "$dir/peers.toml"
done

ticks() { awk '{print $14 + $15}' "$1"; } # /proc/.../stat -> utime + stime
hz=$(getconf CLK_TCK)

cpu_over() { # STAT_FILE -> % of one core over $secs
  local a b; a=$(ticks "$1"); sleep "$secs"; b=$(ticks "$1")
  echo "scale=2; 100 * ($b - $a) / $hz / $secs" | bc
}

run_agent() { # EXTRA_ARGS...
  "$bin" agent --no-ui --reflect none --name bench --interval 100ms --cpu 0 \
    --max-pps 100000 --peers-file "$dir/peers.toml" --metrics-listen 127.0.0.1:0 "$@" \
    >/dev/null 2>"$dir/agent.log" &
  local pid=$!
  sleep 5
  local tid
  tid=$(grep -l synapse-prober /proc/"$pid"/task/*/comm | head -1 | xargs dirname | xargs basename)
  cpu_over "/proc/$pid/task/$tid/stat"
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
}

run_c() { # MODE
  "$dir/prober" "$first" "$peers" 10 $((secs + 6)) 1000 0 "$1" > "$dir/c.out" &
  local pid=$!
  sleep 5
  cpu_over "/proc/$pid/stat"
  wait "$pid"
}

one() { # CONFIG
  case $1 in
    syn) run_agent ;;
    user) run_agent --timestamps user ;;
    c) run_c one ;;
    c-stamps) run_c stamps ;;
    c-mmsg) run_c mmsg ;;
    c-sendmmsg) run_c sendmmsg ;;
  esac
}

for ((r = 1; r <= rounds; r++)); do
  order=$configs
  ((r % 2 == 0)) && order=$(echo "$configs" | tr ' ' '\n' | tac | tr '\n' ' ')
  for c in $order; do
    printf '%s %s\n' "$c" "$(one "$c")" | tee -a "$dir/results" >&2
  done
done

echo "prober CPU, % of one core, $peers peers x 10/s, $rounds rounds of $secs s:"
for c in $configs; do
  awk -v c="$c" '$1 == c {print $2}' "$dir/results" | sort -n |
    awk -v c="$c" '{v[NR] = $1; s = s " " $1} END {
      m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%-7s median %6.2f   rounds:%s\n", c, m, s }'
done
# Machine-readable (benches/run-all.sh): result CONFIG MEDIAN_CPU_PCT ROUNDS
for c in $configs; do
  awk -v c="$c" '$1 == c {print $2}' "$dir/results" | sort -n |
    awk -v c="$c" '{v[NR] = $1} END {
      m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "result %s %.2f %d\n", c, m, NR }'
done
