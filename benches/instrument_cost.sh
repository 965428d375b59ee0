#!/usr/bin/env bash
# What the instrument costs (issue 14): busy-poll ping-pong on loopback,
# client pinned to CPU 0, reflector to CPU 1, 100,000 packets after 2,000
# (C) or 200 (Synapse) warm-up, against a bare C ping-pong
# (benches/pingpong_c: send/recv(MSG_DONTWAIT) spin client,
# recvfrom/sendto spin reflector). ROUNDS rounds (default 3), the order
# reversed every other round; medians of p50 and p99, and their ratios to
# the bare loop. The Rust std::net reference is `cargo bench --bench
# loopback` (BENCHMARKS.md, §1 and §2).
#
# cflags-FLAGS and cplain-FLAGS run the bare C client with SO_TIMESTAMPING
# FLAGS (e.g. cplain-0x18: RX software stamps made for every packet, never
# read) against the bare C reflector: what a kind of stamp costs the loop.
#
# c-vs-any runs the bare C client against `synapse server --bind 0.0.0.0`,
# which reads each request's destination and answers from it.
# With BASE_BIN=path/to/another/synapse, the config c-vs-base runs the bare
# C client against that build's reflector, and base-vs-c that build's
# client against the bare C reflector (a change against the build before
# it).
#
#   benches/instrument_cost.sh [ROUNDS]   (CONFIGS="bare syn-default …")
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}; packets=100000; port=26100
bin=${SYNAPSE_BIN:-target/release/synapse}
[ -x "$bin" ] || cargo build --release --quiet
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
gcc -O2 -o "$dir/client" benches/pingpong_c/client.c
gcc -O2 -o "$dir/reflector" benches/pingpong_c/reflector.c

reflector() { # c|synapse [SERVER_ARGS…]: starts it on $port, CPU 1
  local kind=$1; shift
  if [ "$kind" = c ]; then
    "$dir/reflector" "$port" 1 > /dev/null 2>&1 &
  else
    local b=$bin ip=127.0.0.1
    [ "$kind" = base ] && b=$BASE_BIN
    [ "$kind" = any ] && ip=0.0.0.0 # the wildcard: answers leave from where they came (IP_PKTINFO)
    "$b" server --no-ui --bind "$ip:$port" --stamp-port 0 --cpu 1 --busy-poll "$@" > /dev/null 2>&1 &
  fi
  echo $! > "$dir/pid"
  sleep 0.5
}
# TERM, not INT: a background job of a script ignores SIGINT.
stop_reflector() { kill "$(cat "$dir/pid")" 2>/dev/null; wait "$(cat "$dir/pid")" 2>/dev/null || true; }
synapse_client() { # CLIENT_ARGS… -> "p50 p99"
  "$bin" client "127.0.0.1:$port" --no-ui --json --packets "$packets" --busy-poll --cpu 0 "$@" 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin)["rtt_ns"]; print(d["p50"], d["p99"])'
}
c_client() { "$dir/client" "$port" "$packets" 2000 0; }

run() { # CONFIG -> "p50 p99"
  case $1 in
    bare) reflector c; c_client ;;
    syn-default) reflector synapse; synapse_client ;;
    syn-every1) reflector synapse; synapse_client --tx-stamp-every 1 ;;
    syn-user) reflector synapse; synapse_client --timestamps user ;;
    c-vs-syn) reflector synapse; c_client ;;
    c-vs-base) reflector base; c_client ;;
    c-vs-any) reflector any; c_client ;;
    syn-vs-c) reflector c; synapse_client --timestamps user ;;
    base-vs-c) reflector c; bin=$BASE_BIN synapse_client --timestamps user ;;
    # The bare loop with SO_TIMESTAMPING FLAGS on the C client: replies read
    # with recvmsg and the error queue drained (cflags-0x18), or the stamps
    # made and never read, replies read with plain recv (cplain-0x18).
    cflags-*) reflector c; "$dir/client" "$port" "$packets" 2000 0 "${1#cflags-}" ;;
    cplain-*) reflector c; PLAIN=1 "$dir/client" "$port" "$packets" 2000 0 "${1#cplain-}" ;;
    # The bare C client with a catcher socket sharing its port, as Synapse's.
    c-catcher) reflector c; CATCHER=1 c_client ;;
    *) echo "unknown config $1" >&2; exit 2 ;;
  esac
  stop_reflector
}

read -r -a configs <<< "${CONFIGS:-bare syn-default syn-every1 syn-user c-vs-syn syn-vs-c}"
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
b50, b99 = med.get("bare", (None, None))
print(f"{'config':<13} {'p50':>7} {'p99':>7}  ratio p50  ratio p99   p50s")
for k, (p50, p99) in med.items():
    r50 = f"{p50 / b50:9.3f}" if b50 else "        -"
    r99 = f"{p99 / b99:9.3f}" if b99 else "        -"
    print(f"{k:<13} {p50:>7.0f} {p99:>7.0f}  {r50}  {r99}   {sorted(p for p, _ in rows[k])}")
# Machine-readable: result CONFIG P50_NS P99_NS ROUNDS, a line a round
for k in med:  # one line a round, in round order (report.py pairs them)
    for p50, p99 in rows[k]:
        print(f"result {k} {p50} {p99} {len(rows[k])}")
PY
