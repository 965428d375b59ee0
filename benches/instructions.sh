#!/usr/bin/env bash
# What the instrument costs, counted in instructions (issue 38): user-space
# instructions per round trip of each thread of the client, and per answer
# of each thread of the reflector, under callgrind, beside the bare C
# programs (benches/pingpong_c) doing the same kernel work. Instruction
# counts do not wobble as the VM's timings do (../shared/GUIDE.md §9).
#
# Each configuration runs twice, SHORT and LONG round trips, with the far
# side running natively; (LONG - SHORT) / (LONG - SHORT round trips) is
# the per-round-trip cost: start-up, warm-up and the final report cancel.
# Everything runs blocking but `syn-busy` and `syn-paced`: in busy-poll the empty spins
# are the loop waiting, not the instrument's work, and their number
# varies, so that row takes them out (below). The main
# (consumer) thread's count varies between runs (it drains the ring in as
# many wake-ups as the timing gives); a measurement thread's repeats to
# within 0.2 %.
#
# The bare C clients run with NOSORT=1: their end-of-run sort of every
# RTT is O(n log n), so it does not cancel between the two lengths; counted,
# it was some 470 of the 580-611 "per round trip" reported before (issue 38
# as filed included it). Synapse's measurement thread sorts nothing.
#
# Client side (against the bare C reflector, BLOCK=1):
#   c-plain        bare C client, send/recv, no stamps
#   c-rx           bare C client, FLAGS=0x18: RX software stamps read from
#                  each reply's control data (recvmsg), error queue polled
#   c-floor        c-rx plus the least an instrument adds
#                  (benches/pingpong_c/instrument_floor.c): the reply's
#                  sequence number checked, the RX stamp read out of the
#                  control data, the RTT into a log-bucket histogram, a
#                  64-byte record pushed into a lock-free ring
#   syn-default    `synapse client` defaults (kernel stamps)
#   syn-user       `synapse client --timestamps user`
#   syn-paced      `synapse client --interval 2ms --busy-poll --timestamps
#                  user` against the spinning C reflector: the paced loop's
#                  work a request (send on the slot, the in-flight ring, the
#                  reply matched, settled at its deadline, the schedule's
#                  figures), its spins taken out as in syn-busy, except that
#                  the second LONG run is paced at 4ms: the same requests
#                  with about twice the spins, so their difference is spins
#                  alone. A request's own turns are counted: its send, and
#                  the turn that finds its reply (with the receive that then
#                  finds the socket empty: three system calls a request).
#                  (Sleeping, the waiter wakes a varying number of times
#                  before each slot under callgrind, unlike a spin.)
#                  Also printed: `result syn-paced misses M` (slots the
#                  slowed loop skipped in the LONG run, each a record
#                  instead of a round trip).
#   syn-busy       `synapse client --busy-poll --timestamps user` against the
#                  bare C spinning reflector, its spins not counted: run at
#                  SHORT, LONG and LONG again; each empty spin (a receive
#                  that finds nothing, then the stop and deadline checks)
#                  costs the same, so the two LONG runs' difference over
#                  their difference in system calls is one spin's cost,
#                  and every run's spins (its system calls past the two a
#                  round trip) are taken out before the usual difference
#                  (also printed: `result syn-busy spin COST` and
#                  `result syn-busy spins PER_ROUND_TRIP`)
#   c-tcp          bare C TCP client against the bare C TCP reflector
#   syn-tcp        `synapse client --tcp` against the same
#   syn-stamp      `synapse client --stamp`, against a native `synapse
#                  server` (a STAMP reflector is needed; the C one echoes)
# Reflector side (driven by the bare C client, natively, BLOCK=1):
#   c-reflector    bare C reflector, recvfrom/sendto
#   syn-server     `synapse server` defaults
#   syn-server-stamp  `synapse server`'s STAMP port, driven by a native
#                  `synapse client --stamp --timestamps user`
#   syn-server-paced  `synapse server` defaults, driven by a native
#                  `synapse client --interval 1ms --timestamps user`: under
#                  callgrind the slowed reflector finds the bare C client's
#                  next request already queued when it turns to receive; a
#                  request each millisecond finds it waiting, as a native
#                  reflector mostly is (both take one `recvmmsg` and one
#                  `sendto` an answer)
#
#   benches/instructions.sh [SHORT LONG]   (default 10000 20000;
#   CONFIGS="c-plain syn-default …"; KEEP=DIR keeps the LONG runs'
#   callgrind files there, for callgrind_annotate)
#
# Prints, per configuration, one line per thread, then machine-readable
#   result CONFIG THREAD PER_ROUND_TRIP
# where THREAD is `main`, `t2`, `t3`… in creation order, `all`, and for a
# Synapse client `drain` (the main thread without its end-of-run report:
# the consumer's work a record); and,
# for each Synapse thread of 50 instructions or more, where they go (the
# 12 costliest functions, self cost, benches/callgrind_diff.py):
#   profile CONFIG THREAD PER_ROUND_TRIP FUNCTION (FILE)
set -euo pipefail
cd "$(dirname "$0")/.."
short=${1:-10000}; long=${2:-20000}
port=${PORT:-26300}
bin=${SYNAPSE_BIN:-target/release/synapse}
command -v valgrind > /dev/null || { echo "valgrind is not installed" >&2; exit 3; }
[ -x "$bin" ] || cargo build --release --quiet
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
for p in client reflector tcp_client tcp_reflector instrument_floor; do
  gcc -O2 -o "$dir/$p" "benches/pingpong_c/$p.c"
done
vg() { # OUT COMMAND…: COMMAND under callgrind, one file per thread
  local out=$1; shift
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out" "$@"
}
far() { # native far side: c|tcp|synapse
  case $1 in
    c) BLOCK=1 "$dir/reflector" "$port" 1 > /dev/null 2>&1 & ;;
    c-spin) "$dir/reflector" "$port" 0 > /dev/null 2>&1 & ;;  # CPU 0; the client spins on 1
    tcp) "$dir/tcp_reflector" "$port" 1 > /dev/null 2>&1 & ;;
    synapse) "$bin" server --no-ui --bind "127.0.0.1:$((port + 1))" --stamp-port "$port" \
      > /dev/null 2>&1 & ;;
  esac
  echo $! > "$dir/far"
  sleep 0.5
}
stop() { kill "$(cat "$dir/$1")" 2>/dev/null; wait "$(cat "$dir/$1")" 2>/dev/null || true; }
syn_client() { # OUT N ARGS…
  local out=$1 n=$2; shift 2
  # Exit 3 is the run's verdict (its mean over 1 ms, callgrind being
  # slow), not a failure of the count.
  vg "$out" "$bin" client "127.0.0.1:$port" --no-ui --json --packets "$n" "$@" > /dev/null \
    || [ $? -eq 3 ]
}
# One configuration, one length: the callgrind files' prefix is $dir/CONFIG.N
measure() { # CONFIG N
  local c=$1 n=$2 out=$dir/$1.$2
  case $c in
    c-plain) far c; NOSORT=1 BLOCK=1 vg "$out" "$dir/client" "$port" "$n" 200 0 > /dev/null ;;
    c-rx) far c; NOSORT=1 BLOCK=1 vg "$out" "$dir/client" "$port" "$n" 200 0 0x18 > /dev/null ;;
    c-floor) far c; vg "$out" "$dir/instrument_floor" "$port" "$n" 200 0 > /dev/null ;;
    syn-default) far c; syn_client "$out" "$n" ;;
    syn-user) far c; syn_client "$out" "$n" --timestamps user ;;
    syn-busy) far c-spin; syn_client "$out" "$n" --busy-poll --cpu 1 --timestamps user ;;
    syn-paced) far c-spin
      vg "$out" "$bin" client "127.0.0.1:$port" --no-ui --json --packets "$n" \
        --interval "${PACED_INTERVAL:-2ms}" --busy-poll --cpu 1 --timestamps user \
        > "$out.json" || [ $? -eq 3 ] ;;
    c-tcp) far tcp; NOSORT=1 vg "$out" "$dir/tcp_client" "$port" "$n" 200 0 > /dev/null ;;
    syn-tcp) far tcp; syn_client "$out" "$n" --tcp ;;
    syn-stamp) far synapse; syn_client "$out" "$n" --stamp ;;
    c-reflector | syn-server*) reflect "$c" "$n" "$out"; return ;;
    *) echo "unknown config $c" >&2; exit 2 ;;
  esac
  stop far
}
reflect() { # CONFIG N OUT: the reflector under callgrind, N answers
  local c=$1 n=$2 out=$3
  local cmd=("$bin" server --no-ui --bind "127.0.0.1:$port" --stamp-port "$((port + 1))")
  [ "$c" = c-reflector ] && cmd=("$dir/reflector" "$port" 1)
  # valgrind itself in the background (not a function: $! must be its pid)
  BLOCK=1 valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out" \
    "${cmd[@]}" > /dev/null 2>&1 &
  echo $! > "$dir/near"
  # Ready when it answers (under callgrind start-up takes seconds).
  python3 - "$port" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(0.2)
for _ in range(300):
    s.sendto(b"x" * 8, ("127.0.0.1", int(sys.argv[1])))
    try:
        s.recv(64); sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit("the reflector never answered")
PY
  if [ "$c" = syn-server-stamp ]; then
    "$bin" client "127.0.0.1:$((port + 1))" --no-ui --json --stamp --timestamps user \
      --packets "$n" > /dev/null
  elif [ "$c" = syn-server-paced ]; then
    "$bin" client "127.0.0.1:$port" --no-ui --json --interval 1ms --timestamps user \
      --packets "$n" > /dev/null
  else
    BLOCK=1 "$dir/client" "$port" "$n" 200 0 > /dev/null
  fi
  # SIGTERM: synapse stops cleanly, the C loop dies of it; callgrind
  # writes its files either way.
  stop near
}
per_thread() { # CONFIG: "THREAD PER_ROUND_TRIP" lines
  # Also `drain`: the main thread with the end-of-run report's calls taken
  # out (their inclusive cost, from the calls' lines), which is the
  # consumer's work a record. The report's bootstrap follows the run's
  # slices, not its round trips, and varies by thousands a round trip.
  python3 - "$dir/$1" "$short" "$long" <<'PY'
import glob, sys
base, short, long = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, "benches")
from callgrind_file import read
END_OF_RUN = {"synapse::report::Report::new", "synapse::print_report"}
def summary(n):
    out = {}
    for f in sorted(glob.glob(f"{base}.{n}-*")):
        ir, _, end = read(f, END_OF_RUN)
        out[int(f.rsplit("-", 1)[1])] = (ir, end)
    return out
a, b = summary(short), summary(long)
total = 0
for t in sorted(set(a) | set(b)):
    (ia, ea), (ib, eb) = a.get(t, (0, 0)), b.get(t, (0, 0))
    d = (ib - ia) / (long - short)
    total += d
    print(("main" if t == 1 else f"t{t}"), f"{d:.0f}")
    if t == 1 and (ea or eb):
        print("drain", f"{((ib - eb) - (ia - ea)) / (long - short):.0f}")
print("all", f"{total:.0f}")
PY
}

busy_per_round_trip() { # CONFIG (syn-busy, syn-paced): "THREAD VALUE" lines, spins taken out
  local c=$1
  # Paced: the other LONG run at twice the interval, about twice the spins.
  if [ "$c" = syn-paced ]; then
    PACED_INTERVAL=4ms measure "$c" "$long"
  else
    measure "$c" "$long"
  fi
  for f in "$dir/$c.$long"*; do mv "$f" "${f/$c./$c-again.}"; done
  measure "$c" "$long"
  python3 - "$dir" "$short" "$long" "$c" <<'PY'
import json, sys
d, short, long, c = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sys.path.insert(0, "benches")
from callgrind_file import read as read_file
def read(name):  # the measurement thread's instructions and its calls to syscall()
    ir, calls, _ = read_file(f"{d}/{name}-02")
    return ir, calls.get("syscall", 0)
(i1, c1), (i2, c2), (i3, c3) = read(f"{c}.{short}"), read(f"{c}.{long}"), read(f"{c}-again.{long}")
if c2 == c3:
    sys.exit("the two long runs spun alike: no spin cost to take out")
spin = (i2 - i3) / (c2 - c3)
# Not spins: a round trip's send and receive, and in paced mode the receive
# that then finds the socket empty (the loop reads until it is, so the turn
# that finds a reply is counted with it, as busy-poll's last turn is).
calls_each = 3 if c == "syn-paced" else 2
spins = lambda calls, n: calls - calls_each * n
per = ((i2 - spin * spins(c2, long)) - (i1 - spin * spins(c1, short))) / (long - short)
print("t2", f"{per:.0f}")
print("spin", f"{spin:.1f}")
print("spins", f"{spins(c2, long) / long:.2f}")
if c == "syn-paced":  # slots skipped (a record each, not a round trip), in the LONG runs
    misses = [json.load(open(f"{d}/{name}.{long}.json"))["schedule"]["misses"] for name in (c, f"{c}-again")]
    print("misses", "/".join(map(str, misses)))
PY
}

read -r -a configs <<< "${CONFIGS:-c-plain c-rx c-floor syn-default syn-user syn-busy syn-paced c-tcp syn-tcp syn-stamp c-reflector syn-server syn-server-paced syn-server-stamp}"
for c in "${configs[@]}"; do
  if [ "$c" = syn-busy ] || [ "$c" = syn-paced ]; then
    measure "$c" "$short"
    busy_per_round_trip "$c" | while read -r t v; do
      printf '%-17s %-5s %8s (busy-poll, spins taken out)\n' "$c" "$t" "$v"
      echo "result $c $t $v"
    done
    continue
  fi
  measure "$c" "$short"
  measure "$c" "$long"
  per_thread "$c" | while read -r t v; do
    printf '%-17s %-5s %8s instructions per round trip\n' "$c" "$t" "$v"
    echo "result $c $t $v"
  done
  case $c in
    syn-*) per_thread "$c" | while read -r t v; do
      [ "$t" = all ] || [ "$t" = drain ] || [ "${v%.*}" -lt 50 ] && continue
      n=${t#t}; [ "$t" = main ] && n=1
      f=$(printf '%02d' "$n")
      python3 benches/callgrind_diff.py "$dir/$c.$short-$f" "$dir/$c.$long-$f" \
        $((long - short)) 13 | tail -n +2 | sed "s/^ */profile $c $t /"
    done ;;
  esac
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$dir/$c.$long"-* "$KEEP/"; fi
done
