#!/usr/bin/env bash
# What the kernel lets CoS + Follow-Up cost, without Synapse: the flood of
# benches/stamp_tlv_capacity.sh (8 sources, CPU 0, a 72-octet request at
# RATE/s for 2 s) against a bare C echo on CPU 1 (benches/reflector_c/
# stamp_echo.c, the reflector's socket options), modes alternating:
#
#   0: plain `sendto` (the reference);
#   3: `sendmsg` with an IP_TOS control message;
#   4: `sendmsg` with an SO_TIMESTAMPING (TX software) control message and
#      one error-queue read per answer;
#   1: both, one error-queue read per answer;
#   2: both, one error-queue read per 8 answers.
#
# Prints each round's answers per second, then each mode's median and its
# ratio to mode 0.
#
#   benches/stamp_tlv_c_bound.sh [ROUNDS [RATE]]   (default 3 rounds, 400k/s)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}; rate=${2:-400000}
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
gcc -O2 -o "$dir/flood" benches/reflector_c/stamp_flood.c
gcc -O2 -o "$dir/echo" benches/reflector_c/stamp_echo.c
python3 -c "
import struct, sys
base = struct.pack('>I', 1) + struct.pack('>II', 0xEB0A1B2C, 0) + bytes([0, 1]) + bytes(58)
open(sys.argv[1], 'wb').write(base)" "$dir/req"
port=26680
declare -A res
for r in $(seq 1 "$rounds"); do
  for mode in 0 3 4 1 2; do
    taskset -c 1 "$dir/echo" "$port" "$mode" 2> "$dir/echo.txt" & pid=$!
    sleep 0.3
    read -r _ _ _ answered _ seconds < <(taskset -c 0 "$dir/flood" 127.0.0.1 "$port" \
      $((rate * 2)) "$rate" "$dir/req" 8 0)
    kill -INT "$pid"; wait "$pid" || true
    pps=$(echo "$answered $seconds" | awk '{printf "%.0f", $1 / $2}')
    echo "round $r mode $mode: $pps/s ($(cat "$dir/echo.txt"))"
    res[$mode]+="$pps "
  done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
m0=$(median ${res[0]})
for mode in 0 3 4 1 2; do
  m=$(median ${res[$mode]})
  printf 'mode %s: median %.0f/s, ratio to mode 0 %.3f\n' "$mode" "$m" "$(echo "$m / $m0" | bc -l)"
done
