#!/usr/bin/env bash
# Regenerates BENCHMARKS.md from scratch on this machine: builds the release
# binary and the Criterion-less benches once, runs every question's script
# in turn, and writes the file from their `result` lines
# (benches/report.py). Each script's own output stays in
# target/bench-logs/NAME.out (every round, the human tables).
#
#   benches/run-all.sh [--quick]
#
# --quick: fewer rounds and shorter runs (9 minutes on the 2-core development
# VM, plus the build); the default takes about three times as long.
#
# Run it alone on the machine: on a shared one, under its lock, e.g.
#   flock /work/.cargo-lock benches/run-all.sh --quick
# A question whose tool is missing (sockperf, irtt, strace, tmux, gcc, …),
# or whose script fails, is written as "not run: <reason>" in its table;
# the rest of the file is still written.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=full
case "${1:-}" in
  --quick) mode=quick ;;
  "") ;;
  *) echo "usage: benches/run-all.sh [--quick]" >&2; exit 2 ;;
esac
logs=target/bench-logs
rm -rf "$logs"; mkdir -p "$logs"
began=$(date +%s)

# The commit the figures belong to; -dirty if tracked files other than
# BENCHMARKS.md (which this script rewrites) differ from it.
commit=$(git rev-parse --short HEAD)
[ -n "$(git status --porcelain --untracked-files=no -- . ':!BENCHMARKS.md')" ] && commit+=-dirty

echo "== build (cargo build --release; the benches with cargo bench --no-run)"
if ! cargo build --release 2> "$logs/build.err" ||
   ! cargo bench --no-run --bench loopback --bench sample_path --bench stamp_hmac 2>> "$logs/build.err"; then
  tail -20 "$logs/build.err" >&2
  echo "build failed: nothing measured, BENCHMARKS.md left as it was" >&2
  exit 1
fi

if [ $mode = quick ]; then limit=900; else limit=3600; fi
q() { [ $mode = quick ] && echo "$1" || echo "$2"; }

# run NAME "NEEDED TOOLS" COMMAND: the command line as written into the file.
run() {
  local name=$1 needs=$2 cmd=$3 t
  echo "$cmd" > "$logs/$name.cmd"
  # The tree it ran on (a section rerun alone says its own commit).
  git rev-parse --short HEAD > "$logs/$name.commit" 2> /dev/null || rm -f "$logs/$name.commit"
  for t in $needs; do
    if ! command -v "$t" > /dev/null; then
      echo "$t is not installed" > "$logs/$name.skip"
      echo "== $name: not run ($t is not installed)"
      return
    fi
  done
  echo "== $name: $cmd"
  local t0; t0=$(date +%s)
  # timeout signals its whole process group: only what this command started.
  timeout --kill-after=30 "$limit" bash -c "$cmd" < /dev/null > "$logs/$name.out" 2> "$logs/$name.err"
  echo $? > "$logs/$name.rc"
  echo $(($(date +%s) - t0)) > "$logs/$name.secs"
  echo "   $(cat "$logs/$name.secs") s, exit $(cat "$logs/$name.rc")"
}

run blocking "gcc python3 taskset" "PACKETS=$(q 50000 100000) benches/blocking_vs_c.sh $(q 3 5)"
run instrument "gcc python3 taskset" \
  "CONFIGS='bare cplain-0x18 syn-default syn-every1 syn-user c-vs-syn syn-vs-c' benches/instrument_cost.sh $(q 3 8)"
run loopback "" "SYNAPSE_BENCH_ROUNDS=$(q 3 6) cargo bench --bench loopback"
run sample_path "" "SYNAPSE_BENCH_ROUNDS=$(q 3 5) cargo bench --bench sample_path"
run rss "python3" "benches/rss.sh $(q 1000000 10000000)"
run ui_blocking "tmux" "benches/ui_cost.sh $(q 3 5) 30000"
run ui_busy "tmux" "benches/ui_cost.sh $(q 5 9) 100000 --busy-poll"
run schedule "irtt python3 taskset cc" "benches/schedule_vs_irtt.sh $(q 4 10)"
run agent_vs_c "gcc bc" "benches/agent_vs_c.sh $(q 2 5) $(q 10 15)"
run agent_fleet "python3 curl bc" "benches/agent_fleet.sh 1000 $(q 10 20)"
run agent_reflector "python3" "benches/agent_reflector.sh 1000 3"
run agent_fanout "gcc bc curl" "benches/agent_fanout.sh $(q 3 5) $(q 15 20)"
run calibrate "gcc python3" "benches/calibrate_vs_c.sh 3"
run limits "gcc python3 bc taskset" "benches/reflector_limits.sh $(q 1 2)"
run stamp_hmac "" "cargo bench --bench stamp_hmac"
run capacity "gcc bc taskset" \
  "benches/reflector_capacity.sh $(q '200000 400000 1000000' '200000 300000 400000 600000 1000000')"
run syscalls "strace gcc python3" "benches/syscalls.sh"
run stamp_tlv "gcc python3 bc taskset" "benches/stamp_tlv_capacity.sh $(q 4 10)"
run tcp "gcc python3 taskset" "PACKETS=$(q 50000 100000) CRR=$(q 5000 10000) benches/tcp_vs_c.sh $(q 10 15)"
run tcp_idle "python3 taskset" "PACKETS=$(q 10000 20000) benches/tcp_idle_conns.sh $(q 3 5)"
run instructions "valgrind gcc python3" "benches/instructions.sh $(q '5000 10000' '10000 20000')"
run compare_aa "python3" "benches/compare_aa.sh $(q 200 200) $(q 3000 10000)"
run load "iperf3 irtt ethtool python3" "benches/load_vs_irtt.sh $(q 2 4)"
run multicast "sockperf gcc python3 taskset ip" "PACKETS=$(q 50000 100000) benches/multicast_vs_sockperf.sh $(q 3 5)"

# The machine, from the commands that say so.
{
  echo "nproc $(nproc)"
  echo "cpu $(lscpu 2> /dev/null | sed -n 's/^Model name: *//p' | head -1)"
  echo "kernel $(uname -r)"
  echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2> /dev/null)"
  echo "memory $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "virt $(systemd-detect-virt 2> /dev/null || echo unknown)"
  echo "hypervisor $(lscpu 2> /dev/null | sed -n 's/^Hypervisor vendor: *//p' | head -1)"
  echo "rustc $(rustc --version)"
  echo "perf_cycles $(perf stat -e cycles -x, true 2>&1 | head -1 | cut -d, -f1)"
  echo "hw_clock $(ls /sys/class/ptp 2> /dev/null | wc -l)"
} > "$logs/machine"

minutes=$(( ($(date +%s) - began + 59) / 60 ))
python3 benches/report.py "$logs" "$commit" "$mode" "$minutes" > "$logs/BENCHMARKS.md" &&
  cp "$logs/BENCHMARKS.md" BENCHMARKS.md &&
  echo "== BENCHMARKS.md written ($mode, $minutes min, commit $commit)"
