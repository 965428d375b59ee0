#!/usr/bin/env bash
# TCP request/response (issue 26): Synapse's `--tcp` client against a bare
# blocking C TCP ping-pong and `sockperf ping-pong --tcp`, and
# `--connect-each` against a bare C TCP_CRR loop, on loopback, client
# pinned to CPU 0 and reflector to CPU 1, SIZE-byte requests (default 14,
# sockperf's minimum, for all). ROUNDS rounds (default 5), the order
# reversed every other round; medians of p50 and p99 (and of
# transactions/s for the connect-each pair) and their ratios, and each
# configuration's lowest round (highest, for transactions/s). On the
# development VM a blocking run settles on one of a few wake-up levels
# (the same C loop: 19.5 µs, then 28 µs a second later): the median of a
# few rounds says which levels the rounds drew as much as what a loop
# costs, so rounds are many and short. The lowest round is shown too, not
# judged: a round may land below another configuration's lowest level.
#
#   c-tcp       bare C client (benches/pingpong_c/tcp_client.c: one
#               connection, TCP_NODELAY, send, blocking recv until the
#               whole reply) → bare C TCP echo reflector (tcp_reflector.c:
#               blocking accept, then blocking recv and send back on that
#               one connection: what sockperf's server does with its one)
#   c-tcp-stamps the bare C client with Synapse's TCP RX stamps on its
#               connection (SO_TIMESTAMPING 0x898: RX software, OPT_ID,
#               OPT_TSONLY), made and never read → the C reflector: the
#               floor any loop with those stamps pays
#   c-tcp-epoll the bare C client → the C reflector with EPOLL=1 (epoll_wait
#               before each recv, as a server of many connections does:
#               what that costs a round trip)
#   syn-tcp     synapse client --tcp (defaults: kernel stamps, blocking) → the C reflector
#   syn-tcp-user synapse client --tcp --timestamps user → the C reflector
#   sockperf    sockperf ping-pong --tcp --full-rtt → sockperf server --tcp
#               (round trips, not sockperf's default RTT/2; it answers only
#               its own messages, so it has its own server; both blocking,
#               same pinning)
#   c-crr       bare C TCP_CRR loop (tcp_crr.c: socket, connect,
#               TCP_NODELAY, send, recv, close per transaction) → the C reflector
#   syn-crr     synapse client --tcp --connect-each → the C reflector
#               (transactions/s: its JSON rate_pps, requests over the
#               measured time)
#
#   benches/tcp_vs_c.sh [ROUNDS]   (CONFIGS="c-tcp syn-tcp …", PACKETS=N, CRR=N, SIZE=N)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; packets=${PACKETS:-100000}; crr=${CRR:-20000}; size=${SIZE:-14}; port=26310
bin=${SYNAPSE_BIN:-target/release/synapse}
[ -x "$bin" ] || cargo build --release --quiet
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
for c in tcp_client tcp_crr tcp_reflector; do gcc -O2 -o "$dir/$c" "benches/pingpong_c/$c.c"; done

reflector() { # c|sockperf: starts it on $port, CPU 1
  case $1 in
    c) "$dir/tcp_reflector" "$port" 1 > /dev/null 2>&1 & ;;
    epoll) EPOLL=1 "$dir/tcp_reflector" "$port" 1 > /dev/null 2>&1 & ;;
    sockperf) taskset -c 1 sockperf server --tcp -i 127.0.0.1 -p "$port" > /dev/null 2>&1 & ;;
  esac
  echo $! > "$dir/pid"
  sleep 0.5
}
stop_reflector() { kill "$(cat "$dir/pid")" 2>/dev/null; wait "$(cat "$dir/pid")" 2>/dev/null || true; }
synapse_client() { # N CLIENT_ARGS… -> "p50 p99 rate_pps"
  local n=$1; shift
  "$bin" client "127.0.0.1:$port" --tcp --no-ui --json --packets "$n" --warmup 2000 --size "$size" \
    --cpu 0 "$@" 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); r=d["rtt_ns"]; print(r["p50"], r["p99"], round(d["rate_pps"]))'
}
sockperf_client() { # -> "p50 p99" in ns, round trips (--full-rtt)
  # Its runs last whole seconds: one per 50,000 round trips the others
  # make (about 20 µs each here), at least one.
  local secs=$(((packets + 25000) / 50000)); ((secs >= 1)) || secs=1
  taskset -c 0 sockperf ping-pong --tcp -i 127.0.0.1 -p "$port" -m "$size" -t "$secs" \
    --full-rtt 2>&1 | python3 -c '
import re, sys
p = dict(re.findall(r"percentile (\d+\.\d+) =\s+([\d.]+)", sys.stdin.read()))
print(round(float(p["50.000"]) * 1000), round(float(p["99.000"]) * 1000))'
}

run() { # CONFIG -> "p50 p99" or, connect-each, "tps p50 p99"
  case $1 in
    c-tcp) reflector c; "$dir/tcp_client" "$port" "$packets" 2000 0 "$size" ;;
    c-tcp-stamps) reflector c; "$dir/tcp_client" "$port" "$packets" 2000 0 "$size" 0x898 ;;
    c-tcp-epoll) reflector epoll; "$dir/tcp_client" "$port" "$packets" 2000 0 "$size" ;;
    syn-tcp) reflector c; synapse_client "$packets" | cut -d' ' -f1,2 ;;
    syn-tcp-user) reflector c; synapse_client "$packets" --timestamps user | cut -d' ' -f1,2 ;;
    sockperf) reflector sockperf; sockperf_client ;;
    c-crr) reflector c; "$dir/tcp_crr" "$port" "$crr" 500 0 "$size" ;;
    syn-crr) reflector c; synapse_client "$crr" --connect-each | awk '{print $3, $1, $2}' ;;
    *) echo "unknown config $1" >&2; exit 2 ;;
  esac
  stop_reflector
}

read -r -a configs <<< "${CONFIGS:-c-tcp syn-tcp syn-tcp-user sockperf c-tcp-stamps c-tcp-epoll c-crr syn-crr}"
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
rows, tps = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 4:  # connect-each: tps p50 p99
        tps.setdefault(f[0], []).append(int(f[1]))
        f = [f[0], f[2], f[3]]
    rows.setdefault(f[0], []).append((int(f[1]), int(f[2])))
med = {k: (statistics.median(p for p, _ in v), statistics.median(q for _, q in v)) for k, v in rows.items()}
ref = {"syn-crr": "c-crr", "c-crr": "c-crr"}
print(f"{'config':<13} {'p50':>7} {'p99':>8}  {'vs':<6} p50 ratio  p99 ratio   p50s")
for k, (p50, p99) in med.items():
    base = ref.get(k, "c-tcp")
    b50, b99 = med.get(base, (None, None))
    r50 = f"{p50 / b50:9.3f}" if b50 else "        -"
    r99 = f"{p99 / b99:9.3f}" if b99 else "        -"
    print(f"{k:<13} {p50:>7.0f} {p99:>8.0f}  {base:<6} {r50}  {r99}   {sorted(p for p, _ in rows[k])}")
mt = {k: statistics.median(v) for k, v in tps.items()}
for k, v in mt.items():
    print(f"{k:<13} {v:>9.0f} transactions/s   {sorted(tps[k])}")
# Each configuration's lowest round: its p50 and that round's p99.
best = {k: min(v) for k, v in rows.items()}
bt = {k: max(v) for k, v in tps.items()}
print("lowest round of each:")
for k, (p50, p99) in best.items():
    base = ref.get(k, "c-tcp")
    r = f"{p50 / best[base][0]:9.3f}" if base in best else "        -"
    print(f"{k:<13} {p50:>7} {p99:>8}  {base:<6} {r}")
# Machine-readable: result CONFIG P50_NS P99_NS ROUNDS and result
# CONFIG.tps TRANSACTIONS_PER_S ROUNDS, a line a round; the same with
# .best: the lowest round (the highest rate).
for k in med:  # one line a round, in round order (report.py pairs them)
    for p50, p99 in rows[k]:
        print(f"result {k} {p50} {p99} {len(rows[k])}")
for k in med:
    print(f"result {k}.best {best[k][0]} {best[k][1]} {len(rows[k])}")
for k in mt:
    for v in tps[k]:
        print(f"result {k}.tps {v} {len(tps[k])}")
for k in mt:
    print(f"result {k}.tps.best {bt[k]} {len(tps[k])}")
for a, b in (("syn-tcp", "c-tcp"), ("syn-tcp", "sockperf"), ("syn-tcp-user", "sockperf")):
    if a in med and b in med:
        print(f"{a} / {b} p50: median {med[a][0] / med[b][0]:.3f}, lowest {best[a][0] / best[b][0]:.3f}")
if "c-crr" in mt and "syn-crr" in mt:
    print(f"syn-crr / c-crr transactions/s: median {mt['syn-crr'] / mt['c-crr']:.3f}, "
          f"highest {bt['syn-crr'] / bt['c-crr']:.3f}")
PY
