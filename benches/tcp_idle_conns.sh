#!/usr/bin/env bash
# `synapse server`'s TCP echo with many idle connections (issue 26): BUSY
# Synapse `--tcp` clients (default 10, blocking, defaults, PACKETS round
# trips each, all on CPU 0) against the server (pinned to CPU 1), alone
# (idle-0) and with IDLE more connections open and silent (idle-N, default
# 1,000; held by benches/tcp_idle_holder.py, each checked echoed once
# before the busy ones start). A fresh server each time; ROUNDS rounds
# (default 5), the order reversed every other round. A round's figure is
# the median over the busy clients of their p50 (and of their p99); the
# medians of those over the rounds, and idle-N's ratio to idle-0.
#
#   benches/tcp_idle_conns.sh [ROUNDS]   (IDLE=N, BUSY=N, PACKETS=N)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; idle=${IDLE:-1000}; busy=${BUSY:-10}; packets=${PACKETS:-20000}; port=26320
bin=${SYNAPSE_BIN:-target/release/synapse}
[ -x "$bin" ] || cargo build --release --quiet
# The holder, the server and the clients: more descriptors than 1,024.
ulimit -n $((idle + busy + 1024)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT

one_round() { # IDLE_CONNECTIONS -> "p50 p99" (medians over the busy clients)
  local n=$1 server holder i clients=()
  taskset -c 1 "$bin" server --bind "127.0.0.1:$port" --stamp-port 0 --cpu 1 \
    --max-connections-per-source $((n + busy + 100)) --max-sessions $((n + busy + 100)) \
    > "$dir/server.out" 2>&1 &
  server=$!
  sleep 0.5
  holder=
  if ((n > 0)); then
    rm -f "$dir/ready"
    taskset -c 0 python3 benches/tcp_idle_holder.py 127.0.0.1 "$port" "$n" "$dir/ready" > /dev/null &
    holder=$!
    for ((i = 0; i < 300; i++)); do [ -s "$dir/ready" ] && break; sleep 0.1; done
    if [ ! -s "$dir/ready" ]; then
      echo "the holder did not get $n connections served" >&2
      kill "$holder" "$server" 2>/dev/null; exit 1
    fi
  fi
  for ((i = 0; i < busy; i++)); do
    "$bin" client "127.0.0.1:$port" --tcp --no-ui --json --packets "$packets" --cpu 0 \
      > "$dir/busy.$i" 2>/dev/null &
    clients+=($!)
  done
  wait "${clients[@]}"
  if [ -n "$holder" ]; then kill "$holder"; wait "$holder" 2>/dev/null || true; fi
  kill "$server"; wait "$server" 2>/dev/null || true
  python3 - "$dir" "$busy" <<'PY'
import json, statistics, sys
d, busy = sys.argv[1], int(sys.argv[2])
r = [json.load(open(f"{d}/busy.{i}"))["rtt_ns"] for i in range(busy)]
print(round(statistics.median(x["p50"] for x in r)), round(statistics.median(x["p99"] for x in r)))
PY
}

configs=(idle-0 "idle-$idle")
for ((r = 1; r <= rounds; r++)); do
  order=("${configs[@]}")
  ((r % 2 == 0)) && order=("${configs[1]}" "${configs[0]}")
  for c in "${order[@]}"; do res=$(one_round "${c#idle-}") || exit 1; echo "$c $res"; done
done | tee "$dir/rows"
python3 - "$dir/rows" "$idle" "$busy" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, p50, p99 = line.split()
    rows.setdefault(name, []).append((int(p50), int(p99)))
med = {k: (statistics.median(p for p, _ in v), statistics.median(q for _, q in v)) for k, v in rows.items()}
base = med.get("idle-0")
for k, (p50, p99) in med.items():
    r = f"  {p50 / base[0]:.3f}  {p99 / base[1]:.3f}" if base else ""
    print(f"{k:<10} p50 {p50:>7.0f} p99 {p99:>8.0f}{r}   {sorted(p for p, _ in rows[k])}")
# Machine-readable: result idle-N P50_NS P99_NS ROUNDS BUSY, a line a round
# in round order (report.py pairs them).
for k in med:
    for p50, p99 in rows[k]:
        print(f"result {k} {p50} {p99} {len(rows[k])} {sys.argv[3]}")
PY
