#!/usr/bin/env bash
# Two questions of `synapse compare` (issue 28), from one series of runs:
#
# 1. How often it cries wolf: PAIRS pairs of separate runs of the same
#    configuration (A/A: `synapse --no-ui` on loopback, its in-process
#    reflector), each pair compared one run a side; and PAIRS comparisons
#    of three runs a side, each of six distinct runs drawn (seeded) from
#    the pool of 2 × PAIRS. A false alarm is a comparison where any of the
#    six figures is called significant; a false verdict is exit 3. One run
#    a side also counts the pairs whose within-run interval excludes zero
#    (what the interval alone would have called).
# 2. What `--hdr-log` costs the hot path: each pair is followed by one run
#    without it, so runs with and without alternate; their p50 and p99.
#
# Usage: benches/compare_aa.sh [PAIRS] [SECONDS]
set -euo pipefail
pairs=${1:-40}; secs=${2:-2}
cd "$(dirname "$0")/.."
bin=$(readlink -f "${SYNAPSE_BIN:-target/release/synapse}")
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
# 20 intervals a run or more: the block bootstrap needs 8.
interval="$((secs * 50))ms"

# One run; its JSON report in $dir/NAME.json, its interval log in
# $dir/NAME.hlog when asked.
measure() {
  local name=$1 log=()
  [ "${2:-}" = hdr ] && log=(--hdr-log "$dir/$name.hlog" --hdr-interval "$interval")
  # A FAIL verdict (exit 1) still wrote its report; no report is an error.
  "$bin" --no-ui --json --duration "${secs}s" --threshold 1s "${log[@]}" > "$dir/$name.json" ||
    [ -s "$dir/$name.json" ]
}
p50() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rtt_ns"]; print(r["p50"], r["p99"])' "$1"; }

# Whether a comparison's JSON called anything significant; its exit status.
verdict() {
  local rc=0
  "$bin" compare --json "$@" > "$dir/cmp.json" || rc=$?
  [ "$rc" -le 3 ] || { echo "compare failed (exit $rc)" >&2; exit 1; }
  python3 - "$dir/cmp.json" "$rc" << 'EOF'
import json, sys
c = json.load(open(sys.argv[1]))["comparisons"][0]
hits = [f["figure"] for f in c["figures"] if f["significant"]]
beyond = [f["figure"] for f in c["figures"] if f["excludes_zero"]]
print(1 if hits else 0, 1 if sys.argv[2] == "3" else 0, 1 if beyond else 0,
      ",".join(hits) or "-", ",".join(beyond) or "-")
EOF
}

echo "A/A: $pairs pairs of ${secs} s runs (intervals of $interval), plus one run without --hdr-log after each pair"
printf "%-5s %-12s %-28s %-7s %12s %12s %12s\n" pair significant "interval excludes 0" "exit 3" \
  "a p50" "b p50" "no-log p50"
alarms=0; beyond=0; exits=0; exits_effect=0; with=(); without=(); with99=(); without99=()
for i in $(seq 1 "$pairs"); do
  measure "a$i" hdr; measure "b$i" hdr; measure "n$i"
  read -r sig ex out what whence < <(verdict "$dir/a$i.hlog" "$dir/b$i.hlog")
  read -r _ ex5 _ _ _ < <(verdict "$dir/a$i.hlog" "$dir/b$i.hlog" --min-effect 5)
  alarms=$((alarms + sig)); exits=$((exits + ex)); exits_effect=$((exits_effect + ex5))
  beyond=$((beyond + out))
  read -r a50 a99 < <(p50 "$dir/a$i.json"); read -r b50 b99 < <(p50 "$dir/b$i.json")
  read -r n50 n99 < <(p50 "$dir/n$i.json")
  with+=("$a50" "$b50"); with99+=("$a99" "$b99"); without+=("$n50"); without99+=("$n99")
  printf "%-5s %-12s %-28s %-7s %9.1f µs %9.1f µs %9.1f µs\n" "$i" "$what" "$whence" "$ex" \
    "$(bc -l <<< "$a50/1000")" "$(bc -l <<< "$b50/1000")" "$(bc -l <<< "$n50/1000")"
done

# Three a side: six distinct runs of the pool per comparison, drawn with a
# fixed seed. Runs recur across comparisons, so the comparisons are not
# independent of each other; each is a valid A/A comparison.
groups=0; galarms=0
while read -r a1 a2 a3 b1 b2 b3; do
  read -r sig _ _ what _ < <(verdict "$dir/$a1.hlog" "$dir/$a2.hlog" "$dir/$a3.hlog" \
    -- "$dir/$b1.hlog" "$dir/$b2.hlog" "$dir/$b3.hlog")
  echo "three a side, $a1 $a2 $a3 -- $b1 $b2 $b3: significant: $what"
  groups=$((groups + 1)); galarms=$((galarms + sig))
done < <(python3 -c '
import random, sys
n = int(sys.argv[1]); pool = [f"{s}{i}" for s in "ab" for i in range(1, n + 1)]
r = random.Random(28)
for _ in range(n):
    print(*r.sample(pool, 6))' "$pairs")

median() { printf "%s\n" "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "one run a side: $alarms of $pairs pairs called a significant difference ($beyond had an interval excluding 0); exit 3: $exits without --min-effect, $exits_effect with --min-effect 5"
echo "three a side: $galarms of $groups comparisons called a significant difference"
m_w=$(median "${with[@]}"); m_n=$(median "${without[@]}")
m_w99=$(median "${with99[@]}"); m_n99=$(median "${without99[@]}")
echo "p50 with --hdr-log $m_w ns, without $m_n ns (ratio $(bc -l <<< "scale=3; $m_w/$m_n"))"
# Machine-readable (benches/run-all.sh):
#   result aa1 ALARMS PAIRS EXIT3 EXIT3_MIN_EFFECT_5 EXCLUDES_ZERO
#   result aa3 ALARMS GROUPS
#   result hdr|nohdr P50_NS P99_NS RUNS
echo "result aa1 $alarms $pairs $exits $exits_effect $beyond"
echo "result aa3 $galarms $groups"
echo "result hdr $m_w $m_w99 ${#with[@]}"
echo "result nohdr $m_n $m_n99 ${#without[@]}"
