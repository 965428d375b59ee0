#!/usr/bin/env bash
# Two questions of `synapse compare` (issue 28), from one series of runs:
#
# 1. How often it cries wolf: PAIRS pairs of separate runs of the same
#    configuration (A/A: `synapse --no-ui` on loopback, its in-process
#    reflector), each pair compared one run a side; and the same runs in
#    disjoint groups of three a side. A false alarm is a pair where any of
#    the six figures is called significant; a false verdict is exit 3.
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
  "$bin" compare "$@" --json > "$dir/cmp.json" || rc=$?
  [ "$rc" -le 3 ] || { echo "compare failed (exit $rc)" >&2; exit 1; }
  python3 - "$dir/cmp.json" "$rc" << 'EOF'
import json, sys
c = json.load(open(sys.argv[1]))["comparisons"][0]
hits = [f["figure"] for f in c["figures"] if f["significant"]]
print(1 if hits else 0, 1 if sys.argv[2] == "3" else 0, ",".join(hits) or "-")
EOF
}

echo "A/A: $pairs pairs of ${secs} s runs (intervals of $interval), plus one run without --hdr-log after each pair"
printf "%-5s %-28s %-10s %12s %12s %12s\n" pair "significant (1 run a side)" "exit 3" "a p50" "b p50" "no-log p50"
alarms=0; exits=0; exits_effect=0; with=(); without=(); with99=(); without99=()
for i in $(seq 1 "$pairs"); do
  measure "a$i" hdr; measure "b$i" hdr; measure "n$i"
  read -r sig ex what < <(verdict "$dir/a$i.hlog" "$dir/b$i.hlog")
  read -r _ ex5 _ < <(verdict "$dir/a$i.hlog" "$dir/b$i.hlog" --min-effect 5)
  alarms=$((alarms + sig)); exits=$((exits + ex)); exits_effect=$((exits_effect + ex5))
  read -r a50 a99 < <(p50 "$dir/a$i.json"); read -r b50 b99 < <(p50 "$dir/b$i.json")
  read -r n50 n99 < <(p50 "$dir/n$i.json")
  with+=("$a50" "$b50"); with99+=("$a99" "$b99"); without+=("$n50"); without99+=("$n99")
  printf "%-5s %-28s %-10s %9.1f µs %9.1f µs %9.1f µs\n" "$i" "$what" "$ex" \
    "$(bc -l <<< "$a50/1000")" "$(bc -l <<< "$b50/1000")" "$(bc -l <<< "$n50/1000")"
done

# Three a side, from disjoint groups of the same runs: a1..a3 -- b1..b3, …
groups=0; galarms=0
for ((g = 1; g + 2 <= pairs; g += 3)); do
  read -r sig _ what < <(verdict "$dir/a$g.hlog" "$dir/a$((g + 1)).hlog" "$dir/a$((g + 2)).hlog" \
    -- "$dir/b$g.hlog" "$dir/b$((g + 1)).hlog" "$dir/b$((g + 2)).hlog")
  echo "three a side, runs $g-$((g + 2)): significant: $what"
  groups=$((groups + 1)); galarms=$((galarms + sig))
done

median() { printf "%s\n" "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "one run a side: $alarms of $pairs pairs called a significant difference; exit 3: $exits without --min-effect, $exits_effect with --min-effect 5"
echo "three a side: $galarms of $groups comparisons called a significant difference"
m_w=$(median "${with[@]}"); m_n=$(median "${without[@]}")
m_w99=$(median "${with99[@]}"); m_n99=$(median "${without99[@]}")
echo "p50 with --hdr-log $m_w ns, without $m_n ns (ratio $(bc -l <<< "scale=3; $m_w/$m_n"))"
# Machine-readable (benches/run-all.sh):
#   result aa1 ALARMS PAIRS EXIT3 EXIT3_MIN_EFFECT_5
#   result aa3 ALARMS GROUPS
#   result hdr|nohdr P50_NS P99_NS RUNS
echo "result aa1 $alarms $pairs $exits $exits_effect"
echo "result aa3 $galarms $groups"
echo "result hdr $m_w $m_w99 ${#with[@]}"
echo "result nohdr $m_n $m_n99 ${#without[@]}"
