#!/usr/bin/env bash
# Multicast ping-pong with one responder (issue 52): Synapse's client to a
# group against sockperf's multicast ping-pong, in the same lab of network
# namespaces (a bridge, a client, one reflector), alternating, the client
# pinned to CPU 0 and the reflector to CPU 1, PACKETS round trips each
# (default 100,000). ROUNDS rounds (default 5), the order reversed every
# other round; medians of p50 and p99 and the ratio to sockperf's.
#
#   syn-mc        synapse client GROUP:PORT (defaults: kernel stamps,
#                 blocking) → synapse server --join GROUP
#   syn-mc-user   the same with --timestamps user
#   syn-mc-group  synapse client GROUP:PORT --mc-join → synapse server --join
#                 GROUP --answer-to-group: answers to the group, the path
#                 sockperf's server takes
#   sockperf-mc   sockperf ping-pong -i GROUP --full-rtt (round trips, not
#                 its default RTT/2) → sockperf server -i GROUP, which
#                 answers to the group (so only one responder makes sense
#                 to it), both told their interface (--mc-rx-if,
#                 --mc-tx-if); 14-byte messages, its minimum, and Synapse's
#                 40 (sequence, run token and the responder's name)
#   c-mc          the bare C client (benches/pingpong_c/mc_client.c:
#                 sendto the group, blocking recvfrom) → synapse server
#                 --join: the same path as syn-mc, nothing else
#   c-uc-answer   the bare C client → the bare C reflector
#                 (benches/pingpong_c/mc_reflector.c) answering to its
#                 sender's address, as Synapse's does
#   c-group-answer the same two answering to the group, as sockperf's
#                 server does (the client joined, JOIN=): what the path of
#                 the answer alone changes
#   syn-mc-awake, sockperf-mc-awake
#                 syn-mc and sockperf-mc with /dev/cpu_dma_latency held at
#                 0 (synapse --keep-awake; for sockperf, by this script):
#                 no CPU idles, so no wake-up from idle in the round trip
#   syn-uc        the same lab in unicast: synapse client → synapse server
#   sockperf-uc   the same lab in unicast: sockperf ping-pong → sockperf server
#
#   benches/multicast_vs_sockperf.sh [ROUNDS]   (CONFIGS="syn-mc …", PACKETS=N)
#
# Needs root (namespaces), ip, taskset, python3 and sockperf.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; packets=${PACKETS:-100000}
bin=$(realpath "${SYNAPSE_BIN:-target/release/synapse}")
[ -x "$bin" ] || cargo build --release --quiet
tmp=$(mktemp -d)
gcc -O2 -o "$tmp/mc_client" benches/pingpong_c/mc_client.c
gcc -O2 -o "$tmp/mc_reflector" benches/pingpong_c/mc_reflector.c
group=239.77.7.7; port=27000; net=10.233.0
lab=mcb$$
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  rm -rf "$tmp"
  for ns in c r br; do ip netns del "$lab-$ns" 2>/dev/null || true; done
}
trap cleanup EXIT

# The lab: c and r on one bridge, each with the route to the groups.
ip netns add "$lab-br"
ip -n "$lab-br" link add br0 type bridge
ip -n "$lab-br" link set br0 up
i=1
for ns in c r; do
  ip netns add "$lab-$ns"
  ip link add m0 netns "$lab-$ns" type veth peer name "p$ns" netns "$lab-br"
  ip -n "$lab-br" link set "p$ns" master br0 up
  ip -n "$lab-$ns" addr add "$net.$i/24" dev m0
  ip -n "$lab-$ns" link set m0 up
  ip -n "$lab-$ns" link set lo up
  ip -n "$lab-$ns" route add 224.0.0.0/4 dev m0
  i=$((i + 1))
done
in_c() { ip netns exec "$lab-c" "$@"; }

reflector() { # synapse|sockperf: starts it in r on CPU 1 (`ip netns exec` execs it: $! is its pid)
  case $1 in
    synapse) ip netns exec "$lab-r" "$bin" server --no-ui --cpu 1 --stamp-port 0 --tcp-port 0 \
               --bind "$net.2:$port" --join "$group" --allow "$net.0/24" > /dev/null 2>&1 & ;;
    synapse-group) ip netns exec "$lab-r" "$bin" server --no-ui --cpu 1 --stamp-port 0 --tcp-port 0 \
               --bind "$net.2:$port" --join "$group" --allow "$net.0/24" --answer-to-group \
               > /dev/null 2>&1 & ;;
    sockperf) ip netns exec "$lab-r" taskset -c 1 sockperf server -i "$group" -p "$port" \
               --mc-rx-if "$net.2" --mc-tx-if "$net.2" > /dev/null 2>&1 & ;;
    synapse-uc) ip netns exec "$lab-r" "$bin" server --no-ui --cpu 1 --stamp-port 0 --tcp-port 0 \
               --bind "$net.2:$port" > /dev/null 2>&1 & ;;
    sockperf-uc) ip netns exec "$lab-r" taskset -c 1 sockperf server -i "$net.2" -p "$port" \
               > /dev/null 2>&1 & ;;
    c-to-sender) ip netns exec "$lab-r" "$tmp/mc_reflector" "$group" "$port" "$net.2" 1 0 \
               > /dev/null 2>&1 & ;;
    c-to-group) ip netns exec "$lab-r" "$tmp/mc_reflector" "$group" "$port" "$net.2" 1 1 \
               > /dev/null 2>&1 & ;;
  esac
  echo $! > "$tmp/pid"
  sleep 0.5
}
stop_reflector() { # SIGTERM: sockperf's server ignores SIGINT while it waits
  local pid; pid=$(cat "$tmp/pid")
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
synapse_client() { # TARGET CLIENT_ARGS… -> "p50 p99"
  local target=$1; shift
  in_c "$bin" client "$target:$port" --no-ui --json --packets "$packets" --cpu 0 "$@" 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d.get("responders", [0])) == 1, d["responders"]; r=d["rtt_ns"]; print(r["p50"], r["p99"])'
}
sockperf_client() { # TARGET SOCKPERF_ARGS… -> "p50 p99" in ns, round trips (--full-rtt)
  local target=$1; shift
  # About as many round trips as the others: its runs are timed.
  in_c taskset -c 0 sockperf ping-pong -i "$target" -p "$port" -m 14 -t "$((packets / 20000 + 1))" \
    "$@" --full-rtt 2>&1 | python3 -c '
import re, sys
p = dict(re.findall(r"percentile (\d+\.\d+) =\s+([\d.]+)", sys.stdin.read()))
print(round(float(p["50.000"]) * 1000), round(float(p["99.000"]) * 1000))'
}

run() { # CONFIG -> "p50 p99"
  case $1 in
    syn-mc) reflector synapse; synapse_client "$group" ;;
    syn-mc-user) reflector synapse; synapse_client "$group" --timestamps user ;;
    syn-mc-group) reflector synapse-group; synapse_client "$group" --mc-join ;;
    sockperf-mc) reflector sockperf; sockperf_client "$group" --mc-rx-if "$net.1" --mc-tx-if "$net.1" ;;
    syn-uc) reflector synapse-uc; synapse_client "$net.2" ;;
    sockperf-uc) reflector sockperf-uc; sockperf_client "$net.2" ;;
    c-uc-answer) reflector c-to-sender; in_c "$tmp/mc_client" "$group" "$port" "$packets" 0 ;;
    c-group-answer) reflector c-to-group
      in_c env JOIN="$net.1" "$tmp/mc_client" "$group" "$port" "$packets" 0 ;;
    c-mc) reflector synapse; in_c "$tmp/mc_client" "$group" "$port" "$packets" 0 ;;
    syn-mc-awake) reflector synapse; synapse_client "$group" --keep-awake ;;
    sockperf-mc-awake)
      reflector sockperf
      # As --keep-awake does: 0 µs of wake-up latency asked while the fd is open.
      exec 9> /dev/cpu_dma_latency; printf '\x00\x00\x00\x00' >&9
      sockperf_client "$group" --mc-rx-if "$net.1" --mc-tx-if "$net.1"
      exec 9>&- ;;
    *) echo "unknown config $1" >&2; exit 2 ;;
  esac
  stop_reflector
}

read -r -a configs <<< "${CONFIGS:-sockperf-mc syn-mc syn-mc-group syn-mc-user c-mc c-uc-answer c-group-answer sockperf-mc-awake syn-mc-awake}"
for ((r = 1; r <= rounds; r++)); do
  order=("${configs[@]}")
  if ((r % 2 == 0)); then
    order=(); for ((i = ${#configs[@]} - 1; i >= 0; i--)); do order+=("${configs[$i]}"); done
  fi
  for c in "${order[@]}"; do echo "$c $(run "$c")"; done
done | tee "$tmp/rows"
python3 - "$tmp/rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, p50, p99 = line.split()
    rows.setdefault(name, []).append((int(p50), int(p99)))
med = {k: (statistics.median(p for p, _ in v), statistics.median(q for _, q in v)) for k, v in rows.items()}
ref = {"syn-mc-awake": "sockperf-mc-awake", "sockperf-mc-awake": "sockperf-mc-awake",
       "syn-mc-user": "sockperf-mc", "c-mc": "sockperf-mc",
       "syn-uc": "sockperf-uc", "sockperf-uc": "sockperf-uc"}
print(f"{'config':<18} {'p50':>7} {'p99':>8}  {'vs':<18} p50 ratio   p50s")
for k, (p50, p99) in med.items():
    base = ref.get(k, "sockperf-mc")
    b = med.get(base, (None, None))[0]
    r = f"{p50 / b:9.3f}" if b else "        -"
    print(f"{k:<18} {p50:>7.0f} {p99:>8.0f}  {base:<18} {r}   {sorted(p for p, _ in rows[k])}")
# Machine-readable: result CONFIG P50_NS P99_NS ROUNDS, a line a round
for k in med:
    for p50, p99 in rows[k]:
        print(f"result {k} {p50} {p99} {len(rows[k])}")
PY
