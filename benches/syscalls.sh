#!/usr/bin/env bash
# System calls per round trip of every per-packet loop, counted with
# `strace -c -f` over two runs of different lengths and subtracted (so
# start-up and reporting fall out). Client against `synapse server` on
# loopback. Failed calls (EAGAIN of a spin or of a drain) are counted
# apart: they are how a non-blocking loop learns there is nothing more.
#
#   benches/syscalls.sh            (SYNAPSE_BIN=path to measure another build)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SYNAPSE_BIN:-target/release/synapse}
[ -x "$bin" ] || cargo build --release --quiet
command -v strace >/dev/null || { echo "needs strace (apt-get install strace)" >&2; exit 2; }
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
port=26400
"$bin" server --no-ui --bind "127.0.0.1:$port" --stamp-port 0 > /dev/null 2>&1 &
sleep 0.5

count() { # NAME PACKETS ARGS… -> strace table in $dir/NAME.PACKETS
  local name=$1 n=$2; shift 2
  strace -f -c -o "$dir/$name.$n" "$bin" client "127.0.0.1:$port" --json --packets "$n" \
    --warmup 100 "$@" > /dev/null 2>&1
}
row() { # NAME SHORT LONG ARGS…
  local name=$1 a=$2 b=$3; shift 3
  count "$name" "$a" "$@"; count "$name" "$b" "$@"
  python3 - "$dir/$name.$a" "$dir/$name.$b" "$a" "$b" "$name" <<'PY'
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
PY
}
echo "| loop | successful calls per round trip | failed calls per round trip | which |"
echo "|---|---|---|---|"
row "ping-pong blocking, defaults" 2000 12000
row "ping-pong blocking, --timestamps user" 2000 12000 --timestamps user
row "ping-pong busy-poll, defaults" 2000 12000 --busy-poll
row "ping-pong blocking, --tx-stamp-every 1" 2000 12000 --tx-stamp-every 1
row "paced --interval 10ms, defaults" 100 400 --interval 10ms
row "paced --interval 1ms, defaults" 500 3000 --interval 1ms
row "paced --interval 1ms, --timestamps user" 500 3000 --interval 1ms --timestamps user
row "paced --interval 100us, defaults" 2000 12000 --interval 100us
