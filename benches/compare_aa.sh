#!/usr/bin/env bash
# How often `synapse compare` cries wolf (issue 34): A/A comparisons of
# separate runs of one configuration (`synapse --no-ui`, its in-process
# reflector on loopback, PACKETS round trips each), where nothing differs
# between the sides, so every *regression* is a false alarm.
#
# - one run a side: PAIRS pairs of consecutive runs, each run in one pair;
# - three runs a side: PAIRS comparisons of six runs each, no run in two;
# each with and without `--min-effect 10`, and each judged twice: with the
# assumed run-to-run spread (no calibration) and with this host's, measured
# by `synapse calibrate` at the start. For every mode: the share called a
# regression with its 95 % Clopper-Pearson interval (the aim: the upper end
# at most 5 %), and the shares inconclusive and no regression beside it.
#
# Runs alone on the machine, under the lock:
#   flock /tmp/synapse-cargo.lock benches/compare_aa.sh [PAIRS] [PACKETS]
set -euo pipefail
pairs=${1:-200}; packets=${2:-10000}
cd "$(dirname "$0")/.."
bin=$(readlink -f "${SYNAPSE_BIN:-target/release/synapse}")
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
empty="$dir/no-state"; host="$dir/state"; mkdir -p "$empty" "$host"

echo "calibrating this host (its run-to-run spread) …"
XDG_STATE_HOME="$host" "$bin" calibrate > "$dir/calibrate.txt" 2>/dev/null
grep -E "runs differ by|UDP RTT, blocking, two" "$dir/calibrate.txt" | sed 's/^/  /'

# One run's JSON report (with its slices) in $dir/NAME.json.
measure() {
  XDG_STATE_HOME="$empty" "$bin" --no-ui --json --packets "$packets" --threshold 1s \
    > "$dir/$1.json" 2>/dev/null || [ -s "$dir/$1.json" ]
}

total=$((8 * pairs))
echo "A/A: $pairs pairs one run a side and $pairs comparisons three a side: $total runs of $packets round trips"
for i in $(seq 1 "$total"); do
  measure "r$i"
  [ $((i % 100)) -eq 0 ] && echo "  $i of $total runs"
done
python3 - "$dir/r"{1..8}.json << 'EOF' | sed 's/^/  /'
import json, sys, statistics as st
p50 = [json.load(open(f))["rtt_ns"]["p50"] for f in sys.argv[1:]]
print(f"first runs' p50: {', '.join(f'{v/1000:.1f} µs' for v in p50)}")
EOF

# The verdict of one comparison: regression, no regression or inconclusive.
verdict() {
  local state=$1; shift
  local rc=0
  XDG_STATE_HOME="$state" "$bin" compare --json "$@" > "$dir/cmp.json" || rc=$?
  [ "$rc" -le 4 ] || { echo "compare failed (exit $rc)" >&2; exit 1; }
  # The verdict, then the figures called a regression (which figure cries wolf).
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
figs = [f["figure"] for c in d.get("comparisons", [d]) for f in c["figures"] if f["verdict"] == "regression"]
print(d["verdict"].replace(" ", "_"), *figs)' "$dir/cmp.json"
}

declare -A count figs
tally() {
  local mode=$1 verdict=$2; shift 2
  count["$mode $verdict"]=$(( ${count["$mode $verdict"]:-0} + 1 ))
  local f; for f in "$@"; do figs["$mode"]="${figs["$mode"]:-} $f"; done
}
for i in $(seq 1 "$pairs"); do
  a="$dir/r$((2 * i - 1)).json"; b="$dir/r$((2 * i)).json"
  base=$((2 * pairs + 6 * (i - 1)))
  three=("$dir/r$((base + 1)).json" "$dir/r$((base + 2)).json" "$dir/r$((base + 3)).json" --
         "$dir/r$((base + 4)).json" "$dir/r$((base + 5)).json" "$dir/r$((base + 6)).json")
  for state in assumed host; do
    # verdict's words (the verdict, then the figures) are split on purpose.
    s=$empty; [ "$state" = host ] && s=$host
    tally "one,$state,none" $(verdict "$s" "$a" "$b")
    tally "one,$state,10" $(verdict "$s" --min-effect 10 "$a" "$b")
    tally "three,$state,none" $(verdict "$s" "${three[@]}")
    tally "three,$state,10" $(verdict "$s" --min-effect 10 "${three[@]}")
  done
  [ $((i % 25)) -eq 0 ] && echo "  $i of $pairs comparisons"
done

# Machine-readable (benches/run-all.sh, benches/report.py):
#   result aa SIDE SPREAD MIN_EFFECT N REGRESSION INCONCLUSIVE NO_REGRESSION CP_LOW CP_HIGH
for side in one three; do
  for state in assumed host; do
    for m in none 10; do
      k="$side,$state,$m"
      r=${count["$k regression"]:-0}; inc=${count["$k inconclusive"]:-0}; ok=${count["$k no_regression"]:-0}
      python3 - "$side" "$state" "$m" "$pairs" "$r" "$inc" "$ok" ${figs["$k"]:-} << 'EOF'
import sys
side, state, m = sys.argv[1:4]
n, r, inc, ok = [int(x) for x in sys.argv[4:8]]
from collections import Counter
by_figure = Counter(sys.argv[8:])
def cdf(k, n, p):  # P(X <= k), X ~ Binomial(n, p)
    from math import comb
    return sum(comb(n, i) * p**i * (1 - p)**(n - i) for i in range(k + 1))
def bisect(f):
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) else (lo, mid)
    return (lo + hi) / 2
# Clopper-Pearson, two-sided 95 %.
low = 0.0 if r == 0 else bisect(lambda p: 1 - cdf(r - 1, n, p) < 0.025)
high = 1.0 if r == n else bisect(lambda p: cdf(r, n, p) > 0.025)
label = {"one": "one run a side", "three": "three runs a side"}[side]
spread = {"assumed": "assumed spread", "host": "this host's spread"}[state]
margin = "no --min-effect" if m == "none" else f"--min-effect {m}"
aim = "met" if high <= 0.05 else "not met"
print(f"{label}, {spread}, {margin}: regression {r} of {n} ({100*r/n:.1f} %, 95 % CI {100*low:.1f}-{100*high:.1f} %: aim ≤ 5 % {aim}); inconclusive {inc}, no regression {ok}")
figures = ",".join(f"{f}:{c}" for f, c in sorted(by_figure.items())) or "-"
if by_figure:
    print(f"  figures called a regression: {figures.replace(',', ', ')}")
print(f"result aa {side} {state} {m} {n} {r} {inc} {ok} {low:.4f} {high:.4f} {figures}")
EOF
    done
  done
done
