#!/usr/bin/env bash
# Reflector capacity (issue 14): an open-loop generator
# (benches/reflector_c/flood.c: sendmmsg in batches of 64, pinned to CPU 0,
# draining the answers on the same socket) offers RATE datagrams/s for 2 s
# to a reflector pinned to CPU 1, busy-polling: the bare C reflector
# (benches/pingpong_c/reflector.c) and synapse server with its limits off
# (--max-pps 0 --max-total-pps 0: one source at these rates is far over the
# default per-source limit). Prints, per offered rate, the share answered:
# where that falls below 99 % is the loss onset.
#
#   benches/reflector_capacity.sh [RATES…]   (default 100k 200k 300k 400k 600k)
set -euo pipefail
cd "$(dirname "$0")/.."
rates=("$@"); [ ${#rates[@]} -gt 0 ] || rates=(100000 200000 300000 400000 600000)
bin=target/release/synapse
[ -x "$bin" ] || cargo build --release --quiet
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
gcc -O2 -o "$dir/flood" benches/reflector_c/flood.c
gcc -O2 -o "$dir/reflector" benches/pingpong_c/reflector.c
port=26400

start() { # c|synapse
  if [ "$1" = c ]; then
    "$dir/reflector" "$port" 1 > /dev/null 2>&1 &
  else
    "$bin" server --no-ui --bind "127.0.0.1:$port" --stamp-port 0 --cpu 1 --busy-poll \
      --max-pps 0 --max-total-pps 0 > /dev/null 2>&1 &
  fi
  pid=$!
  sleep 0.5
}

printf '%-9s %10s %10s %8s\n' reflector offered/s answered "share"
for rate in "${rates[@]}"; do
  for kind in c synapse synapse c; do
    start "$kind"
    read -r _ sent _ answered < <(taskset -c 0 "$dir/flood" 127.0.0.1 "$port" $((rate * 2)) "$rate" 8)
    kill "$pid"; wait "$pid" 2>/dev/null || true
    printf '%-9s %10d %10d %7.1f%%\n' "$kind" "$rate" "$answered" "$(echo "100 * $answered / $sent" | bc -l)"
  done
done
