#!/usr/bin/env bash
# The blocking round trip (issue 25): Synapse's default client, which waits
# in the receive itself, against a bare blocking C ping-pong and sockperf,
# on loopback, client pinned to CPU 0 and reflector to CPU 1, PACKETS
# round trips each (default 100,000). ROUNDS rounds (default 5), the order
# reversed every other round; medians of p50 and p99 and their ratios to
# the bare C loop.
#
#   c-block       bare C client, blocking recv → bare C reflector, blocking
#   syn-block     synapse client (defaults: kernel stamps, blocking) → the C reflector
#   syn-user      synapse client --timestamps user → the C reflector
#   sockperf      sockperf ping-pong --full-rtt → sockperf server (it
#                 answers only its own messages, so it has its own server;
#                 both blocking, same pinning; 14-byte messages, its minimum)
#   c-busy-stamps bare C client spinning, with Synapse's default stamps on
#                 the socket (RX software on every packet, made and never
#                 read: cplain-0x18 of instrument_cost.sh) → C reflector spinning
#   syn-busy      synapse client --busy-poll (defaults) → C reflector spinning
#   base-block    with BASE_BIN=path/to/another/synapse: that build's client,
#                 blocking, → the C reflector (the change against the build before)
#
#   benches/blocking_vs_c.sh [ROUNDS]   (CONFIGS="c-block syn-block …", PACKETS=N)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; packets=${PACKETS:-100000}; port=26300
bin=${SYNAPSE_BIN:-target/release/synapse}
[ -x "$bin" ] || cargo build --release --quiet
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
gcc -O2 -o "$dir/client" benches/pingpong_c/client.c
gcc -O2 -o "$dir/reflector" benches/pingpong_c/reflector.c

reflector() { # block|spin|sockperf: starts it on $port, CPU 1
  case $1 in
    block) BLOCK=1 "$dir/reflector" "$port" 1 > /dev/null 2>&1 & ;;
    spin) "$dir/reflector" "$port" 1 > /dev/null 2>&1 & ;;
    sockperf) taskset -c 1 sockperf server -i 127.0.0.1 -p "$port" > /dev/null 2>&1 & ;;
  esac
  echo $! > "$dir/pid"
  sleep 0.5
}
stop_reflector() { kill "$(cat "$dir/pid")" 2>/dev/null; wait "$(cat "$dir/pid")" 2>/dev/null || true; }
synapse_client() { # CLIENT_ARGS… -> "p50 p99"
  "$bin" client "127.0.0.1:$port" --no-ui --json --packets "$packets" --cpu 0 "$@" 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin)["rtt_ns"]; print(d["p50"], d["p99"])'
}
sockperf_client() { # -> "p50 p99" in ns, round trips (--full-rtt)
  # About as many round trips as the others: its runs are timed.
  taskset -c 0 sockperf ping-pong -i 127.0.0.1 -p "$port" -m 14 -t "$((packets / 20000 + 1))" \
    --full-rtt 2>&1 | python3 -c '
import re, sys
p = dict(re.findall(r"percentile (\d+\.\d+) =\s+([\d.]+)", sys.stdin.read()))
print(round(float(p["50.000"]) * 1000), round(float(p["99.000"]) * 1000))'
}

run() { # CONFIG -> "p50 p99"
  case $1 in
    c-block) reflector block; BLOCK=1 "$dir/client" "$port" "$packets" 2000 0 ;;
    syn-block) reflector block; synapse_client ;;
    syn-user) reflector block; synapse_client --timestamps user ;;
    sockperf) reflector sockperf; sockperf_client ;;
    c-busy-stamps) reflector spin; PLAIN=1 "$dir/client" "$port" "$packets" 2000 0 0x18 ;;
    syn-busy) reflector spin; synapse_client --busy-poll ;;
    base-block) reflector block; bin=$BASE_BIN synapse_client ;;
    *) echo "unknown config $1" >&2; exit 2 ;;
  esac
  stop_reflector
}

read -r -a configs <<< "${CONFIGS:-c-block syn-block syn-user sockperf c-busy-stamps syn-busy}"
if ! command -v sockperf >/dev/null; then # the other rows still run
  echo "skip sockperf sockperf not installed (apt-get install sockperf)"
  kept=(); for c in "${configs[@]}"; do [ "$c" = sockperf ] || kept+=("$c"); done; configs=("${kept[@]}")
fi
for ((r = 1; r <= rounds; r++)); do
  order=("${configs[@]}")
  if ((r % 2 == 0)); then
    order=(); for ((i = ${#configs[@]} - 1; i >= 0; i--)); do order+=("${configs[$i]}"); done
  fi
  for c in "${order[@]}"; do echo "$c $(run "$c")"; done
done | tee "$dir/rows"
python3 - "$dir/rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, p50, p99 = line.split()
    rows.setdefault(name, []).append((int(p50), int(p99)))
med = {k: (statistics.median(p for p, _ in v), statistics.median(q for _, q in v)) for k, v in rows.items()}
ref = {"syn-busy": "c-busy-stamps", "c-busy-stamps": "c-busy-stamps"}
print(f"{'config':<14} {'p50':>7} {'p99':>8}  {'vs':<14} p50 ratio  p99 ratio   p50s")
for k, (p50, p99) in med.items():
    base = ref.get(k, "c-block")
    b50, b99 = med.get(base, (None, None))
    r50 = f"{p50 / b50:9.3f}" if b50 else "        -"
    r99 = f"{p99 / b99:9.3f}" if b99 else "        -"
    print(f"{k:<14} {p50:>7.0f} {p99:>8.0f}  {base:<14} {r50}  {r99}   {sorted(p for p, _ in rows[k])}")
# Machine-readable: result CONFIG P50_NS P99_NS ROUNDS, a line a round
for k in med:  # one line a round, in round order (report.py pairs them)
    for p50, p99 in rows[k]:
        print(f"result {k} {p50} {p99} {len(rows[k])}")
if "sockperf" in med and "syn-block" in med:
    print(f"syn-block / sockperf p50: {med['syn-block'][0] / med['sockperf'][0]:.3f}")
PY
