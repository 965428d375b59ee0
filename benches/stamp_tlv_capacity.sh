#!/usr/bin/env bash
# The STAMP reflector's capacity with RFC 8972 TLVs on and off (issue 27):
# an open-loop generator (benches/reflector_c/stamp_flood.c: SOURCES
# sockets, default 8, each a session, taking turns to sendmmsg 64 / SOURCES
# copies of one STAMP test packet, pinned to CPU 0, draining the answers)
# offers RATE requests/s for 2 s to `synapse server`'s STAMP reflector
# (its echo thread idle on CPU 0, so the STAMP thread takes CPU 1; limits
# off). Two requests of the same 72 octets, alternated round by round
# (A B B A …), so a drift of the machine falls on both alike:
#
#   plain: a 44-octet RFC 8762 request, zero-padded to 72 (no TLV parsed);
#   tlvs:  the same with a Class of Service TLV (DSCP1 EF, EC1 ECT(0)) and a
#          Follow-Up Telemetry TLV: the reflector reads each request's TOS,
#          marks each answer (IP_TOS control message), asks the kernel for
#          its TX stamp (SO_TIMESTAMPING control message), reads that stamp
#          off the error queue before the session's next request and puts
#          it in that request's answer.
#
# Prints each round's answers per second of sending time (and a `result
# KIND PPS` line for benches/report.py), then the medians and their ratio
# (tlvs / plain).
#
#   benches/stamp_tlv_capacity.sh [ROUNDS [RATE]]   (default 10 rounds, 400k/s)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}; rate=${2:-400000}
sources=${SOURCES:-8}
bin=${SYNAPSE_BIN:-target/release/synapse}
[ -x "$bin" ] || cargo build --release --quiet
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
gcc -O2 -o "$dir/flood" benches/reflector_c/stamp_flood.c
python3 - "$dir" <<'EOF'
import struct, sys
d = sys.argv[1]
# RFC 8762 figure 3: sequence, T1 (NTP), error estimate S=0 scale 0 mult 1,
# SSID 0, 28 MBZ.
base = struct.pack(">I", 1) + struct.pack(">II", 0xEB0A1B2C, 0) + bytes([0, 1]) + bytes(30)
cos = bytes([0x80, 4, 0, 4, 46 << 2, 0, 2 << 6, 0])
follow_up = bytes([0x80, 7, 0, 16]) + bytes(16)
tlvs = base + cos + follow_up
open(f"{d}/tlvs", "wb").write(tlvs)
open(f"{d}/plain", "wb").write(base + bytes(len(tlvs) - len(base)))
EOF
port=26480

run() { # plain|tlvs → answers per second
  "$bin" server --no-ui --bind "127.0.0.1:$((port + 1))" --stamp-port "$port" --cpu 0 \
    --max-pps 0 --max-total-pps 0 > "$dir/server.txt" 2>&1 &
  local pid=$!
  sleep 0.5
  read -r _ sent _ answered _ seconds < <(taskset -c 0 "$dir/flood" 127.0.0.1 "$port" \
    $((rate * 2)) "$rate" "$dir/$1" "$sources" 0)
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  grep -q "STAMP totals" "$dir/server.txt" || { cat "$dir/server.txt" >&2; exit 1; }
  echo "$answered $seconds $sent" | awk '{printf "%.0f %d %d\n", $1 / $2, $1, $3}'
}

printf '%-6s %-6s %12s %10s %10s\n' round kind answered/s answered sent
declare -a plain tlvs
for r in $(seq 1 "$rounds"); do
  order=(plain tlvs); [ $((r % 2)) -eq 0 ] && order=(tlvs plain)
  for kind in "${order[@]}"; do
    read -r pps answered sent < <(run "$kind")
    printf '%-6s %-6s %12s %10s %10s\n' "$r" "$kind" "$pps" "$answered" "$sent"
    echo "result $kind $pps"
    if [ "$kind" = plain ]; then plain+=("$pps"); else tlvs+=("$pps"); fi
  done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mp=$(median "${plain[@]}"); mt=$(median "${tlvs[@]}")
printf 'median plain %.0f/s, tlvs %.0f/s, ratio tlvs/plain %.3f\n' "$mp" "$mt" "$(echo "$mt / $mp" | bc -l)"
