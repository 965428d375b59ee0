#!/usr/bin/env bash
# Latency under load against irtt under iperf3, in the same lab of network
# namespaces (C — R — S over veth, offloads off, a 10 Mbit/s token bucket on
# R's interface toward C), round by round, the two tools alternating:
#
#   - deep queue (750 kB): Synapse `--load download --load-streams 4
#     --load-cc cubic`, its p50 inflation and 95 % interval; irtt every
#     10 ms, idle and then under `iperf3 -R -P 4 -C cubic`, over the same
#     seconds of the load (4 to 8), its median less its idle median;
#   - shallow queue (20 kB): the same;
#   - the probes' own cost: the first idle phase's p50 of a load run
#     against a plain run of the same probes (STAMP with Follow-Up, every
#     10 ms, the same path, no bucket), and that plain run against one
#     without Follow-Up, alternating.
#
#   benches/load_vs_irtt.sh [ROUNDS]      (default 3; PARTS="queues idle")
#
# Needs: root (namespaces), iperf3, irtt, ethtool, python3, a release build.
# Prints a Markdown table per part and machine-readable lines:
#   result deep.synapse P50_MS CI_LOW_MS CI_HIGH_MS GOODPUT_MBIT BACKWARD_SHARE
#   result deep.irtt INFLATION_MS
#   result shallow.synapse … / result shallow.irtt …
#   result idle.load P50_US / result idle.plain P50_US / result idle.nofu P50_US
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
bin=$PWD/target/release/synapse
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 1; }
for t in iperf3 irtt ethtool python3; do
  command -v $t >/dev/null || { echo "needs $t" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "needs root for network namespaces" >&2; exit 1; }
work=$(mktemp -d)
id=$$
c=blc$id r=blr$id s=bls$id
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for ns in $c $r $s; do ip netns del $ns 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

for ns in $c $r $s; do ip netns add $ns; ip -n $ns link set lo up; done
ip link add blc netns $c type veth peer name blrc netns $r
ip link add bls netns $s type veth peer name blrs netns $r
ip -n $c addr add 10.235.1.2/24 dev blc
ip -n $r addr add 10.235.1.1/24 dev blrc
ip -n $r addr add 10.235.2.1/24 dev blrs
ip -n $s addr add 10.235.2.2/24 dev bls
for x in "$c blc" "$r blrc" "$r blrs" "$s bls"; do
  set -- $x
  ip -n $1 link set $2 up
  ip netns exec $1 ethtool -K $2 tso off gso off gro off >/dev/null
done
ip -n $c route add default via 10.235.1.1
ip -n $s route add default via 10.235.2.1
ip netns exec $r sysctl -qw net.ipv4.ip_forward=1
S=10.235.2.2

ip netns exec $s "$bin" server --no-ui --bind $S:7007 --stamp-port 8862 --load-port 8863 \
  --allow 10.235.1.0/24 --load-max-sessions 4 >/dev/null 2>&1 &
pids+=($!)
ip netns exec $s irtt server -b $S:2112 >/dev/null 2>&1 &
pids+=($!)
ip netns exec $s iperf3 -s -p 5201 >/dev/null 2>&1 &
pids+=($!)
sleep 1

bucket() { ip netns exec $r tc qdisc replace dev blrc root tbf rate 10mbit burst 16kb limit "$1"; }

synapse_load() { # KEY: one download phase; the result line
  ip netns exec $c "$bin" client $S:7007 --json --load download --load-phase 8s \
    --load-streams 4 --load-cc cubic > "$work/load.json"
  python3 - "$work/load.json" "$1" <<'PY' | tee -a "$work/results"
import json, sys
j = json.load(open(sys.argv[1]))
d = [p for p in j["load"]["phases"] if p["name"] == "download"][0]
i = d["inflation_ns"]
ms = lambda v: f"{v / 1e6:.2f}" if v is not None else "-"
share = d["stage_share"].get("backward", 0.0)
print(f"result {sys.argv[2]}.synapse {ms(i['p50'])} {ms(i['p50_ci_low'])} {ms(i['p50_ci_high'])} "
      f"{d['goodput_bps']['down'] / 1e6:.2f} {share:.3f}")
PY
}

irtt_median() { # SECONDS FILE: irtt's median RTT in ns
  ip netns exec $c irtt client -i 10ms -d "${1}s" -q -o "$2" $S:2112 >/dev/null 2>&1
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['stats']['rtt']['median'])" "$2"
}

irtt_load() { # KEY: irtt's median under iperf3 -R less its idle median
  local idle loaded
  idle=$(irtt_median 3 "$work/idle.json")
  ip netns exec $c iperf3 -c $S -p 5201 -R -P 4 -C cubic -t 9 >/dev/null 2>&1 &
  local load=$!
  sleep 4
  loaded=$(irtt_median 4 "$work/loaded.json")
  wait $load || true
  python3 -c "print(f'result $1.irtt {($loaded - $idle) / 1e6:.2f}')" | tee -a "$work/results"
}

idle_pair() { # one load run's first idle p50 and plain runs' p50s, µs
  # Every run --keep-awake: a probe every 10 ms otherwise finds both CPUs
  # in an idle state whose wake-up varies twofold from run to run on this
  # VM, which would drown what the load's threads cost.
  ip netns exec $c "$bin" client $S:8862 --json --load download --load-phase 15s \
    --load-streams 1 --keep-awake > "$work/idle_load.json"
  # The load's probes exactly (STAMP with Follow-Up, every 10 ms, 10 of
  # warm-up, a 2 s timeout) with no load machinery, as long as the load
  # run's first idle phase (a third of its phase): what that phase is held
  # to. Then the same without Follow-Up: what that TLV costs (the
  # reflector reads each answer's send stamp before the next).
  ip netns exec $c "$bin" client $S:8862 --json --stamp --tlv follow-up --interval 10ms \
    --duration 5s --warmup 10 --timeout 2s --threshold 1s --keep-awake > "$work/plain.json"
  ip netns exec $c "$bin" client $S:8862 --json --stamp --interval 10ms --duration 5s \
    --warmup 10 --timeout 2s --threshold 1s --keep-awake > "$work/plain_nofu.json"
  python3 - "$work" <<'PY' | tee -a "$work/results"
import json, sys
w = sys.argv[1]
l = json.load(open(f"{w}/idle_load.json"))["load"]["phases"][0]["rtt_ns"]["p50"]
p = json.load(open(f"{w}/plain.json"))["rtt_ns"]["p50"]
n = json.load(open(f"{w}/plain_nofu.json"))["rtt_ns"]["p50"]
print(f"result idle.load {l / 1e3:.1f}")
print(f"result idle.plain {p / 1e3:.1f}")
print(f"result idle.nofu {n / 1e3:.1f}")
PY
}

# PARTS picks what runs (default: all): "queues" (deep and shallow), "idle".
parts=${PARTS:-queues idle}
for k in $(seq "$rounds"); do
  echo "== round $k"
  if [[ " $parts " == *" queues "* ]]; then
    bucket 750kb; synapse_load deep; irtt_load deep
    bucket 20kb; synapse_load shallow; irtt_load shallow
    ip netns exec $r tc qdisc del dev blrc root
  fi
  if [[ " $parts " == *" idle "* ]]; then idle_pair; fi
done

python3 - "$work/results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.startswith("result")]
def col(key, i=0):
    return [float(r[2 + i]) for r in rows if r[1] == key and r[2 + i] != "-"]
for q in ("deep", "shallow"):
    s, i = col(f"{q}.synapse"), col(f"{q}.irtt")
    if not (s and i):
        continue
    print(f"\n{q} queue: Synapse p50 inflation per round {s} ms (CI low {col(q + '.synapse', 1)}, high {col(q + '.synapse', 2)}); irtt {i} ms")
    print(f"  medians: Synapse {statistics.median(s):.1f} ms, irtt {statistics.median(i):.1f} ms; goodput {col(q + '.synapse', 3)} Mbit/s; backward share {col(q + '.synapse', 4)}")
l, p, n = col("idle.load"), col("idle.plain"), col("idle.nofu")
if not (l and p and n):
    sys.exit(0)
print(f"\nidle p50: load runs' first idle phase {l} µs, plain runs of the same probes {p} µs, without Follow-Up {n} µs; medians {statistics.median(l):.1f} / {statistics.median(p):.1f} / {statistics.median(n):.1f}")
PY
