#!/usr/bin/env bash
# `synapse calibrate` against independent C measurements of the same
# things (the seed 003's methods): a getpid loop and a pipe ping-pong, on
# one CPU and across two. ROUNDS (default 3) alternating rounds; medians.
# Prints each figure side by side and their ratio; exits 1 if any pair
# disagrees by more than 2x, or if a round's busy-poll RTT is not under its
# blocking one or its TCP RTT not within 20x its UDP one (physics on a
# quiet machine; tests/it/calibrate.rs cannot ask it of a busy runner).
#
#   benches/calibrate_vs_c.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
bin=target/release/synapse
[ -x "$bin" ] || cargo build --release --quiet
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
gcc -O2 -o "$dir/getpid" benches/floor_c/getpid.c
gcc -O2 -o "$dir/pipe" benches/floor_c/pipe_pingpong.c

for ((r = 1; r <= rounds; r++)); do
  "$bin" calibrate --json --no-save --cpus 0,1 | python3 -c '
import json, sys
d = json.load(sys.stdin)
for k in ("syscall_ns", "context_switch_same_core_ns", "wakeup_cross_core_ns"):
    print("synapse", k, d[k])
# The orderings that hold only with a CPU free for each spinner (not on
# a busy test runner, so checked here and not in tests/it/calibrate.rs).
if not d["udp_busy_poll_rtt_ns"] < d["udp_blocking_rtt_ns"]:
    print("order busy-poll", d["udp_busy_poll_rtt_ns"], "not under blocking", d["udp_blocking_rtt_ns"])
if not d["tcp_blocking_rtt_ns"] < 20 * d["udp_blocking_rtt_ns"]:
    print("order tcp", d["tcp_blocking_rtt_ns"], "not within 20 x udp", d["udp_blocking_rtt_ns"])' >> "$dir/rows"
  echo "c syscall_ns $("$dir/getpid" 0)" >> "$dir/rows"
  echo "c context_switch_same_core_ns $("$dir/pipe" 0 0)" >> "$dir/rows"
  echo "c wakeup_cross_core_ns $("$dir/pipe" 0 1)" >> "$dir/rows"
done
python3 - "$dir/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
orders = [r for r in rows if r[0] == "order"]
rows = [r for r in rows if r[0] != "order"]
seed = {"syscall_ns": 225, "context_switch_same_core_ns": 4338, "wakeup_cross_core_ns": None}
bad = False
results = []
print(f"{'figure':<30} {'synapse':>10} {'C':>10} {'ratio':>7} {'seed (its machine)':>19}")
for key in seed:
    s = statistics.median(float(v) for who, k, v in rows if who == "synapse" and k == key)
    c = statistics.median(float(v) for who, k, v in rows if who == "c" and k == key)
    ratio = s / c
    bad |= not (0.5 <= ratio <= 2.0)
    shown = f"{seed[key]} ns" if seed[key] else "-"
    print(f"{key:<30} {s:>10.0f} {c:>10.0f} {ratio:>7.2f} {shown:>19}")
    results.append(f"result {key} {s:.0f} {c:.0f}")
print("agree within 2x" if not bad else "DISAGREE by more than 2x")
for r in orders:
    print("OUT OF ORDER:", " ".join(r[1:]))
    bad = True
# Machine-readable (benches/run-all.sh): result FIGURE SYNAPSE_NS C_NS
print("\n".join(results))
print(f"result rounds {max(sum(1 for r in rows if r[0] == 'c' and r[1] == 'syscall_ns'), 0)}")
sys.exit(1 if bad else 0)
PY
