#!/usr/bin/env bash
# What the reflector's limits cost (issue 13).
#
# 1. Per datagram: a C generator (benches/reflector_c/flood.c, pinned to
#    CPU 0) sends COUNT 8-byte datagrams at RATE/s to a blocking reflector
#    pinned to CPU 1, and the reflector thread's CPU time (utime + stime)
#    is divided by COUNT: answered (no limits), refused as "not allowed",
#    and refused as "rate". A refusal must cost no more than an answer.
# 2. A busy-poll ping-pong (client CPU 0, reflector CPU 1, --timestamps
#    user, 100,000 packets) against no limits (--max-pps 0 --max-total-pps 0),
#    the default limits, the default limits with an --allow list of two
#    networks (the second matching) and, with OLD_BIN, against a build from
#    before the limits; order A B C C B A, ROUNDS times; p50 and p99 medians.
#
#    Machine-readable lines (benches/run-all.sh reads them):
#      result dgram.KEY NS_PER_DATAGRAM ANSWERED     (one per round)
#      result pp.VARIANT P50_NS P99_NS ROUNDS        (medians)
#
#    (What authenticated STAMP costs per packet: cargo bench --bench
#    stamp_hmac.)
#
#   benches/reflector_limits.sh [ROUNDS]   (OLD_BIN=path COUNT=N RATE=N)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}; count=${COUNT:-200000}; rate=${RATE:-50000}
bin=target/release/synapse
[ -x "$bin" ] || cargo build --release --quiet
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
gcc -O2 -o "$dir/flood" benches/reflector_c/flood.c
hz=$(getconf CLK_TCK)

reflector_cpu_ns() { # PID -> CPU ns of its reflector thread
  for t in /proc/"$1"/task/*; do
    if [ "$(cat "$t/comm")" = synapse-reflect ]; then
      awk -v hz="$hz" '{ printf "%d\n", ($14 + $15) * 1e9 / hz }' "$t/stat"
    fi
  done
}

per_datagram() { # KEY LABEL SERVER_ARGS... -> one row
  local key=$1 label=$2; shift 2
  "$bin" server --no-ui --bind 127.0.0.1:25000 --stamp-port 0 --cpu 1 "$@" > /dev/null 2>&1 &
  local pid=$!
  sleep 0.5
  local before; before=$(reflector_cpu_ns "$pid")
  local out; out=$(taskset -c 0 "$dir/flood" 127.0.0.1 25000 "$count" "$rate" 8)
  local after; after=$(reflector_cpu_ns "$pid")
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  local ns; ns=$(echo "($after - $before) / $count" | bc -l)
  printf '%-22s %-26s %8.0f ns/datagram\n' "$label" "$out" "$ns"
  printf 'result dgram.%s %.0f %s\n' "$key" "$ns" "$(echo "$out" | awk '{print $4}')" >> "$dir/results"
}

echo "== per datagram: $count at $rate/s, blocking reflector on CPU 1"
for ((r = 1; r <= rounds; r++)); do
  per_datagram answered answered --max-pps 0 --max-total-pps 0
  per_datagram allow "refused: not allowed" --allow 10.0.0.0/8
  per_datagram rate "refused: rate" --max-pps 1000
done

p50_p99() { # REFLECTOR_BIN SERVER_ARGS... -> "p50 p99"
  local rbin=$1; shift
  "$rbin" server --no-ui --bind 127.0.0.1:25001 --stamp-port 0 --cpu 1 --busy-poll "$@" > /dev/null 2>&1 &
  local pid=$!
  sleep 0.5
  "$bin" client 127.0.0.1:25001 --no-ui --json --packets 100000 --busy-poll --cpu 0 \
    --timestamps user 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin)["rtt_ns"]; print(d["p50"], d["p99"])'
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
}

echo "== busy-poll ping-pong, p50 p99 (ns)"
variants=(no-limits defaults allow-list)
run() {
  case $1 in
    no-limits) p50_p99 "$bin" --max-pps 0 --max-total-pps 0 ;;
    defaults) p50_p99 "$bin" ;;
    allow-list) p50_p99 "$bin" --allow 10.0.0.0/8 --allow 127.0.0.1/32 ;;
    before) p50_p99 "$OLD_BIN" ;;
  esac
}
[ -n "${OLD_BIN:-}" ] && variants+=("before")
for ((r = 1; r <= rounds; r++)); do
  order=("${variants[@]}")
  for ((i = ${#variants[@]} - 1; i >= 0; i--)); do order+=("${variants[$i]}"); done
  for v in "${order[@]}"; do echo "$v $(run "$v")"; done
done | tee "$dir/pp"
python3 - "$dir/pp" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    *name, p50, p99 = line.split()
    rows.setdefault(" ".join(name), []).append((int(p50), int(p99)))
base = statistics.median(p for p, _ in rows["no-limits"])
base99 = statistics.median(q for _, q in rows["no-limits"])
for name, v in rows.items():
    p50 = statistics.median(p for p, _ in v); p99 = statistics.median(q for _, q in v)
    print(f"{name:<10} median p50 {p50:>6.0f} ns  p99 {p99:>6.0f} ns  "
          f"ratio to no limits p50 {p50 / base:.3f}  p99 {p99 / base99:.3f}  "
          f"(p50s {sorted(p for p, _ in v)})")
for name, v in rows.items():
    p50 = statistics.median(p for p, _ in v); p99 = statistics.median(q for _, q in v)
    print(f"result pp.{name} {p50:.0f} {p99:.0f} {len(v)}")
PY
cat "$dir/results"

