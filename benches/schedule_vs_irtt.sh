#!/usr/bin/env bash
# Paced mode against irtt, side by side in one run, on loopback: each tool's
# client pinned to CPU 1 and its own server to CPU 0, the same interval and
# duration. Prints one Markdown table: slots missed, send-time error, RTT
# median and the client's CPU use.
#
#   benches/schedule_vs_irtt.sh [SECONDS]      (default 10 per run)
#
# Needs: irtt (apt-get install irtt), python3, a release build
# (cargo build --release).
#
# Also prints machine-readable lines (benches/run-all.sh reads them):
#   result KEY.irtt MISSED_PCT ERR_MEAN_US ERR_MAX_US RTT_MEDIAN_US CPU_PCT
#   result KEY.synapse MISSED_PCT ERR_MEAN_US ERR_MAX_US RTT_MEDIAN_US CPU_PCT ERR_P99_US
#   result stalls.before|after GAPS_OVER_50US GAPS_OVER_500US LONGEST_US
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
bin=./target/release/synapse
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 1; }
command -v irtt >/dev/null || { echo "needs irtt (apt-get install irtt)" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

irtt_port=$((20000 + RANDOM % 10000))
syn_port=$((irtt_port + 1))
taskset -c 0 irtt server -i 0 -b "127.0.0.1:$irtt_port" >/dev/null 2>&1 &
pids+=($!)
"$bin" server --no-ui --cpu 0 --stamp-port 0 --bind "127.0.0.1:$syn_port" >/dev/null &
pids+=($!)
sleep 1

row() { # KEY LABEL INTERVAL [busy]: busy spins both (irtt --timer=busy, Synapse --busy-poll)
  local key=$1; shift
  local label=$1 interval=$2 irtt_timer=comp syn_busy=()
  if [ "${3:-}" = busy ]; then irtt_timer=busy; syn_busy=(--busy-poll); fi
  # irtt: its own JSON stats.
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/env time -f "%U %S" -o "$work/irtt.cpu" \
    taskset -c 1 irtt client -i "$interval" -d "${secs}s" -Q --thread --timer="$irtt_timer" \
    -o "$work/irtt.json" "127.0.0.1:$irtt_port" 2>/dev/null || true
  t1=$(date +%s.%N)
  echo "$t0 $t1" > "$work/irtt.wall"
  # Synapse: its JSON, and its per-packet log for the mean send error.
  t0=$(date +%s.%N)
  /usr/bin/env time -f "%U %S" -o "$work/syn.cpu" \
    "$bin" client "127.0.0.1:$syn_port" --cpu 1 --interval "$interval" \
    --duration "${secs}s" --warmup 10 --threshold 1s --max-loss 100 --json \
    --timestamps user --log "$work/syn.csv" --force "${syn_busy[@]}" > "$work/syn.json"
  t1=$(date +%s.%N)
  echo "$t0 $t1" > "$work/syn.wall"
  python3 - "$work" "$label" "$key" <<'PY'
import csv, json, sys
work, label, key = sys.argv[1], sys.argv[2], sys.argv[3]
def cpu(name):
    u, s = map(float, open(f"{work}/{name}.cpu").read().split()[-2:])
    t0, t1 = map(float, open(f"{work}/{name}.wall").read().split())
    return 100 * (u + s) / (t1 - t0)
i = json.load(open(f"{work}/irtt.json"))["stats"]
s = json.load(open(f"{work}/syn.json"))
rows = list(csv.DictReader(open(f"{work}/syn.csv")))
errs = [float(r["T1_SW"]) - float(r["SCHED"]) for r in rows if r["SCHED"] and r["T1_SW"]]
mean_err = 1e6 * sum(errs) / len(errs)
sch = s["schedule"]
slots = s["packets"]["sent"] + sch["misses"]
us = lambda ns: f"{ns / 1e3:.1f}"
print(f"| {label} | irtt | {i['timer_miss_percent']:.2f} % | {us(i['timer_error']['mean'])} | – | {us(i['timer_error']['max'])} | {us(i['rtt']['median'])} | {cpu('irtt'):.1f} % |")
print(f"| {label} | Synapse | {100 * sch['misses'] / slots:.2f} % | {mean_err:.1f} | {us(sch['error_p99_ns'])} | {us(sch['error_max_ns'])} | {us(s['rtt_ns']['p50'])} | {cpu('syn'):.1f} % |")
with open(f"{work}/results", "a") as out:
    print(f"result {key}.irtt {i['timer_miss_percent']:.3f} {us(i['timer_error']['mean'])} {us(i['timer_error']['max'])} {us(i['rtt']['median'])} {cpu('irtt'):.1f}", file=out)
    print(f"result {key}.synapse {100 * sch['misses'] / slots:.3f} {mean_err:.2f} {us(sch['error_max_ns'])} {us(s['rtt_ns']['p50'])} {cpu('syn'):.1f} {us(sch['error_p99_ns'])}", file=out)
PY
}

# The machine's own stalls: a bare loop spinning on CPU 1 notes every gap
# between two clock reads. No timer can do better than this allows.
cat > "$work/stalls.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static long ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000L+t.tv_nsec;}
int main(int c,char**v){long secs=atol(v[1]),s=ns(),p=s,a=0,b=0,m=0;
for(;;){long t=ns(),g=t-p;p=t;if(g>50000)a++;if(g>500000)b++;if(g>m)m=g;if(t-s>secs*1000000000L)break;}
printf("bare spin on CPU 1 for %ld s: %ld gaps > 50 us, %ld > 500 us, longest %.0f us\n",secs,a,b,m/1e3);}
C
stalls() { cc -O2 -o "$work/stalls" "$work/stalls.c" 2>/dev/null && taskset -c 1 "$work/stalls" "$secs" || echo "(no C compiler: stalls not measured)"; }
stall_result() { # WHEN SENTENCE
  echo "$2" | sed -nE "s/.*: ([0-9]+) gaps > 50 us, ([0-9]+) > 500 us, longest ([0-9]+) us/result stalls.$1 \1 \2 \3/p" >> "$work/results"
}
b=$(stalls); echo "Before: $b"; stall_result before "$b"
echo
echo "| interval | tool | slots missed | send error mean µs | p99 µs | max µs | RTT median µs | client CPU |"
echo "|---|---|---|---|---|---|---|---|"
row 10ms "10 ms" 10ms
row 1ms "1 ms" 1ms
row 100us "100 µs" 100us
row 1ms-spin "1 ms, spinning" 1ms busy
row 100us-spin "100 µs, spinning" 100us busy
echo
a=$(stalls); echo "After: $a"; stall_result after "$a"
echo
cat "$work/results"
