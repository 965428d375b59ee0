#!/usr/bin/env bash
# System calls per round trip of every per-packet loop, counted with
# `strace -c -f` over two runs of different lengths and subtracted (so
# start-up and reporting fall out). Client against `synapse server` on
# loopback. Failed calls (EAGAIN of a spin or of a drain) are counted
# apart: they are how a non-blocking loop learns there is nothing more.
#
# The first row is the reference: the bare blocking C ping-pong client
# (benches/pingpong_c/client.c, BLOCK=1) against the same server.
#
# Machine-readable lines (benches/run-all.sh reads them):
#   result KEY OK_CALLS_PER_RT FAILED_CALLS_PER_RT
#
#   benches/syscalls.sh            (SYNAPSE_BIN=path to measure another build)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SYNAPSE_BIN:-target/release/synapse}
[ -x "$bin" ] || cargo build --release --quiet
command -v strace >/dev/null || { echo "needs strace (apt-get install strace)" >&2; exit 2; }
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
port=26400
gcc -O2 -o "$dir/client" benches/pingpong_c/client.c
"$bin" server --no-ui --bind "127.0.0.1:$port" --stamp-port 0 > /dev/null 2>&1 &
sleep 0.5

count() { # KEY PACKETS ARGS… -> strace table in $dir/KEY.PACKETS
  local key=$1 n=$2; shift 2
  if [ "$key" = c-block ]; then
    BLOCK=1 strace -f -c -o "$dir/$key.$n" "$dir/client" "$port" "$n" 100 0 > /dev/null 2>&1
  else
    # Exit 3 is a run whose verdict failed (a slow or lossy moment under
    # strace): its system calls are counted all the same. Anything else
    # stops the script.
    strace -f -c -o "$dir/$key.$n" "$bin" client "127.0.0.1:$port" --json --packets "$n" \
      --warmup 100 "$@" > /dev/null 2>&1 || [ $? -eq 3 ]
  fi
}
row() { # KEY NAME SHORT LONG ARGS…
  local key=$1 name=$2 a=$3 b=$4; shift 4
  count "$key" "$a" "$@"; count "$key" "$b" "$@"
  python3 - "$dir/$key.$a" "$dir/$key.$b" "$a" "$b" "$name" "$key" <<'PY'
import sys
def parse(path):
    out = {}
    for line in open(path):
        c = line.split()
        if len(c) >= 5 and c[-1] != "total":
            try: float(c[0])
            except ValueError: continue
            out[c[-1]] = (int(c[3]), int(c[4]) if len(c) == 6 else 0)
    return out
a, b = parse(sys.argv[1]), parse(sys.argv[2])
n = int(sys.argv[4]) - int(sys.argv[3])
ok = fail = 0; each = []
for name in b:
    ca, ea = a.get(name, (0, 0)); cb, eb = b[name]
    s, f = ((cb - eb) - (ca - ea)) / n, (eb - ea) / n
    ok += s; fail += f
    if s + f > 0.02: each.append(f"{name} {s:.2f}" + (f" (+{f:.2f} failed)" if f > 0.02 else ""))
print(f"| {sys.argv[5]} | {ok:.2f} | {fail:.2f} | {', '.join(sorted(each))} |")
with open(sys.argv[1].rsplit("/", 1)[0] + "/results", "a") as out:
    print(f"result {sys.argv[6]} {ok:.3f} {fail:.3f} {', '.join(sorted(each)).replace(' ', '_')}", file=out)
PY
}
echo "| loop | successful calls per round trip | failed calls per round trip | which |"
echo "|---|---|---|---|"
row c-block "bare C client, blocking (the reference)" 2000 12000
row block "ping-pong blocking, defaults" 2000 12000
row block-user "ping-pong blocking, --timestamps user" 2000 12000 --timestamps user
row busy "ping-pong busy-poll, defaults" 2000 12000 --busy-poll
row block-every1 "ping-pong blocking, --tx-stamp-every 1" 2000 12000 --tx-stamp-every 1
row paced-10ms "paced --interval 10ms, defaults" 100 400 --interval 10ms
row paced-1ms "paced --interval 1ms, defaults" 500 3000 --interval 1ms
row paced-1ms-user "paced --interval 1ms, --timestamps user" 500 3000 --interval 1ms --timestamps user
row paced-100us "paced --interval 100us, defaults" 2000 12000 --interval 100us
echo
cat "$dir/results"
