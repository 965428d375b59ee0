#!/usr/bin/env bash
# The agent's own reflector while its prober probes PEERS peers (default
# 1000) at 10 probes/s each: a ping-pong client against it, alternating
# with the same client against an idle `synapse server`, ROUNDS rounds
# (default 3) of 20,000 packets each. Prints p50 and p99 of every round and
# the ratio of medians: what a busy agent costs the peers that measure it.
#
#   benches/agent_reflector.sh [PEERS] [ROUNDS]   (CLIENT_ARGS: more client flags)
set -euo pipefail
cd "$(dirname "$0")/.."
peers=${1:-1000}; rounds=${2:-3}; first=21000
agent_port=24000; server_port=24001
bin=target/release/synapse
[ -x "$bin" ] || cargo build --release --quiet
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT

python3 benches/fleet_reflector.py "$first" "$peers" > "$dir/fleet.out" &
until grep -q ready "$dir/fleet.out" 2>/dev/null; do sleep 0.1; done
for ((i = 0; i < peers; i++)); do
  printf '[peers.p%04d]\naddress = "127.0.0.1:%d"\n' "$i" $((first + i))
done > "$dir/peers.toml"

"$bin" agent --no-ui --name bench --interval 100ms --max-pps 100000 \
  --reflect "127.0.0.1:$agent_port" --stamp-port 0 --peers-file "$dir/peers.toml" \
  --metrics-listen 127.0.0.1:0 > /dev/null 2> "$dir/agent.log" &
"$bin" server --no-ui --bind "127.0.0.1:$server_port" > /dev/null 2>&1 &
sleep 5 # the prober under way

p50_p99() { # PORT -> "p50 p99" in ns
  "$bin" client --no-ui --json --packets 20000 ${CLIENT_ARGS:-} "127.0.0.1:$1" 2>/dev/null |
    python3 -c 'import json, sys; r = json.load(sys.stdin)["rtt_ns"]; print(r["p50"], r["p99"])'
}
for ((r = 1; r <= rounds; r++)); do
  echo "idle server $(p50_p99 $server_port)" >> "$dir/rounds"
  echo "busy agent $(p50_p99 $agent_port)" >> "$dir/rounds"
done
awk '{ print "  " $0 }' "$dir/rounds"
awk '
  { key = $1; p50[key, ++n[key]] = $3; p99[key, n[key]] = $4 }
  function median(a, key, k,   v, i, j, t) {
    for (i = 1; i <= k; i++) v[i] = a[key, i]
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return v[int((k + 1) / 2)]
  }
  END {
    ip50 = median(p50, "idle", n["idle"]); bp50 = median(p50, "busy", n["busy"])
    ip99 = median(p99, "idle", n["idle"]); bp99 = median(p99, "busy", n["busy"])
    printf "median p50: idle server %.1f us, busy agent %.1f us, ratio %.2f\n", ip50 / 1000, bp50 / 1000, bp50 / ip50
    printf "median p99: idle server %.1f us, busy agent %.1f us, ratio %.2f\n", ip99 / 1000, bp99 / 1000, bp99 / ip99
    # Machine-readable (benches/run-all.sh): result WHICH P50_NS P99_NS ROUNDS
    printf "result idle %d %d %d\nresult busy %d %d %d\n", ip50, ip99, n["idle"], bp50, bp99, n["busy"]
  }' "$dir/rounds"
