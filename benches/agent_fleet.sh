#!/usr/bin/env bash
# One agent probing PEERS peers (default 1000) at 10 probes/s each, against
# a Python epoll echo on as many loopback ports. Prints, from one run:
# - the prober thread's CPU (from /proc, over the measured seconds),
# - the agent's memory per peer (its RSS less that of the same agent with
#   one peer, divided by the peers),
# - /metrics render time and size, OpenMetrics text and protobuf (median of
#   20 scrapes each),
# - loss seen by the agent (the Python echo may drop under load; said so).
#
#   benches/agent_fleet.sh [PEERS] [SECONDS]   (AGENT_ARGS: more agent flags;
#                                               REFLECTOR_ARGS=--spin: see
#                                               fleet_reflector.py)
set -euo pipefail
cd "$(dirname "$0")/.."
peers=${1:-1000}; secs=${2:-30}; first=21000
bin=target/release/synapse
[ -x "$bin" ] || cargo build --release --quiet
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT

python3 benches/fleet_reflector.py "$first" "$peers" ${REFLECTOR_ARGS:-} > "$dir/reflector.out" &
until grep -q ready "$dir/reflector.out" 2>/dev/null; do sleep 0.1; done

write_peers() { # N FILE
  : > "$2"
  for ((i = 0; i < $1; i++)); do
    printf '[peers.p%04d]\naddress = "127.0.0.1:%d"\n' "$i" $((first + i)) >> "$2"
  done
}

start_agent() { # PEERS_FILE LOG
  "$bin" agent --no-ui --reflect none --name bench --interval 100ms \
    --max-pps 100000 --peers-file "$1" --metrics-listen 127.0.0.1:0 ${AGENT_ARGS:-} \
    >/dev/null 2>"$2" &
  echo $!
}

metrics_addr() { # LOG
  until grep -q "metrics on" "$1"; do sleep 0.1; done
  grep -o '127.0.0.1:[0-9]*' "$1" | head -1
}

rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

# The same agent with one peer: the fixed cost.
write_peers 1 "$dir/one.toml"
pid=$(start_agent "$dir/one.toml" "$dir/one.log"); metrics_addr "$dir/one.log" >/dev/null
sleep 5; base=$(rss_kib "$pid"); kill -INT "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done

write_peers "$peers" "$dir/all.toml"
pid=$(start_agent "$dir/all.toml" "$dir/all.log"); addr=$(metrics_addr "$dir/all.log")
sleep 5 # every peer's first probe, histograms filled
tid=$(grep -l synapse-prober /proc/"$pid"/task/*/comm | head -1 | xargs dirname | xargs basename)
ticks() { awk '{print $14 + $15}' "/proc/$pid/task/$tid/stat"; }
all() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
t0=$(ticks); a0=$(all); s0=$(date +%s.%N)
sleep "$secs"
t1=$(ticks); a1=$(all); s1=$(date +%s.%N)
hz=$(getconf CLK_TCK)
rss=$(rss_kib "$pid")

scrape() { # ACCEPT -> "seconds bytes" for 20 scrapes, median
  for _ in $(seq 20); do
    curl -s -o /dev/null -w '%{time_total} %{size_download}\n' -H "Accept: $1" "http://$addr/metrics"
  done | sort -n | awk 'NR == 10'
}
text=$(scrape 'application/openmetrics-text;version=1.0.0')
proto=$(scrape 'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited')
sent=$(curl -s "http://$addr/metrics" | awk '/^synapse_probes_sent_total/ {s += $2} END {print s}')
lost=$(curl -s "http://$addr/metrics" | awk '/^synapse_probes_lost_total/ {s += $2} END {print s}')
kill -INT "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done

awk -v p="$peers" -v secs="$(echo "$s1 - $s0" | bc)" -v t="$((t1 - t0))" -v a="$((a1 - a0))" -v hz="$hz" \
    -v rss="$rss" -v base="$base" -v text="$text" -v proto="$proto" -v sent="$sent" -v lost="$lost" 'BEGIN {
  split(text, tx, " "); split(proto, pb, " ");
  printf "peers %d at 10 probes/s each (%d probes/s), %.1f s measured\n", p, p * 10, secs
  printf "prober thread CPU       %6.2f %% of one core\n", 100 * t / hz / secs
  printf "whole agent CPU         %6.2f %% of one core (exporter, HTTP, prober)\n", 100 * a / hz / secs
  printf "memory per peer         %6.1f KiB (RSS %d KiB, one-peer agent %d KiB)\n", (rss - base) / (p - 1), rss, base
  printf "/metrics text           %6.1f ms, %d bytes (%d per peer)\n", tx[1] * 1000, tx[2], tx[2] / p
  printf "/metrics protobuf       %6.1f ms, %d bytes (%d per peer)\n", pb[1] * 1000, pb[2], pb[2] / p
  printf "probes sent %d, lost %d (%.3f %%; the Python echo may drop under load)\n", sent, lost, 100 * lost / (sent ? sent : 1)
  # Machine-readable (benches/run-all.sh)
  printf "result prober_cpu_pct %.2f\nresult agent_cpu_pct %.2f\n", 100 * t / hz / secs, 100 * a / hz / secs
  printf "result mem_per_peer_kib %.1f\nresult rss_kib %d %d\n", (rss - base) / (p - 1), rss, base
  printf "result text %.2f %d\nresult proto %.2f %d\n", tx[1] * 1000, tx[2], pb[1] * 1000, pb[2]
  printf "result probes %d %d\nresult measured %d %.1f\n", sent, lost, p, secs
}'
