#!/usr/bin/env bash
# Reflector capacity (issue 14): an open-loop generator
# (benches/reflector_c/flood.c: SOURCES sockets, default 8, taking turns to
# sendmmsg 64 / SOURCES datagrams each, pinned to CPU 0, draining the
# answers with recvmmsg) offers RATE datagrams/s for 2 s
# to a reflector pinned to CPU 1, busy-polling: the bare C reflector
# (benches/pingpong_c/reflector.c) and synapse server with its limits off
# (--max-pps 0 --max-total-pps 0: one address at these rates is far over the
# default per-source limit). Prints, per offered rate, the share answered
# (where that falls below 99 % is the loss onset) and the answers per second
# of sending time (past saturation: the reflector's capacity).
#
# GSO=1 (the default) has each source send its turn's datagrams as one
# UDP_SEGMENT message, which the kernel cuts into the same datagrams: the
# generator then offers more than a batching reflector answers, where one
# sendmmsg of separate datagrams saturates its own core first. GSO=0: the
# separate datagrams.
#
# With BASE_BIN=path/to/another/synapse, a third reflector "base" runs that
# build the same way (to compare a change with the build before it).
#
# Machine-readable lines, one per reflector run (benches/run-all.sh reads
# them): result KIND OFFERED_PER_S SHARE_PCT ANSWERED_PER_S
#
#   benches/reflector_capacity.sh [RATES…]   (default 100k 200k 300k 400k 600k)
set -euo pipefail
cd "$(dirname "$0")/.."
rates=("$@"); [ ${#rates[@]} -gt 0 ] || rates=(100000 200000 300000 400000 600000)
sources=${SOURCES:-8}; gso=${GSO:-1}
bin=target/release/synapse
[ -x "$bin" ] || cargo build --release --quiet
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
gcc -O2 -o "$dir/flood" benches/reflector_c/flood.c
gcc -O2 -o "$dir/reflector" benches/pingpong_c/reflector.c
port=26400

start() { # c|synapse|base
  if [ "$1" = c ]; then
    "$dir/reflector" "$port" 1 > /dev/null 2>&1 &
  else
    local b=$bin; [ "$1" = base ] && b=$BASE_BIN
    "$b" server --no-ui --bind "127.0.0.1:$port" --stamp-port 0 --cpu 1 --busy-poll \
      --max-pps 0 --max-total-pps 0 > /dev/null 2>&1 &
  fi
  pid=$!
  sleep 0.5
}

printf '%-9s %10s %10s %8s %11s\n' reflector offered/s answered "share" answered/s
for rate in "${rates[@]}"; do
  kinds=(c synapse); [ -n "${BASE_BIN:-}" ] && kinds+=(base)
  for kind in "${kinds[@]}" $(printf '%s\n' "${kinds[@]}" | tac); do
    start "$kind"
    read -r _ sent _ answered _ seconds < <(taskset -c 0 "$dir/flood" 127.0.0.1 "$port" $((rate * 2)) "$rate" 8 "$sources" "$gso")
    kill "$pid"; wait "$pid" 2>/dev/null || true
    share=$(echo "100 * $answered / $sent" | bc -l); per_s=$(echo "$answered / $seconds" | bc -l)
    printf '%-9s %10d %10d %7.1f%% %11.0f\n' "$kind" "$rate" "$answered" "$share" "$per_s"
    printf 'result %s %d %.2f %.0f\n' "$kind" "$rate" "$share" "$per_s" >> "$dir/results"
  done
done
cat "$dir/results"
