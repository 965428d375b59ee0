#!/usr/bin/env bash
# Memory over a long run: samples the resident set of a 10 M-packet
# busy-poll loopback run once a second. Usage: benches/rss.sh [PACKETS]
set -euo pipefail
packets=${1:-10000000}
bin=${SYNAPSE_BIN:-target/release/synapse}
"$bin" --json --busy-poll --packets "$packets" --threshold 1s > /tmp/synapse-rss.json &
pid=$!
echo "seconds rss_kib"
s=0
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null || true)
  [ -n "$rss" ] && echo "$s $rss"
  sleep 1; s=$((s+1))
done
wait "$pid" || true
python3 -c "import json; j=json.load(open('/tmp/synapse-rss.json')); print('sent', j['packets']['sent'], 'received', j['packets']['received'], 'p50_ns', j['rtt_ns']['p50'], 'duration_s', round(j['duration_s'],1))"
