#!/usr/bin/env bash
# Memory over a long run: samples the resident set of a 10 M-packet
# busy-poll loopback run once a second. Usage: benches/rss.sh [PACKETS]
#
# Ends with machine-readable lines (benches/run-all.sh reads them):
#   result rss_kib.at_2s N      the resident set once the rings and
#                               histograms are touched (the reference)
#   result rss_kib.end N        the last sample before the run ended
#   result rss_kib.max N
#   result run SENT RECEIVED P50_NS DURATION_S
set -euo pipefail
cd "$(dirname "$0")/.."
packets=${1:-10000000}
bin=${SYNAPSE_BIN:-target/release/synapse}
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
"$bin" --json --busy-poll --packets "$packets" --threshold 1s > "$dir/run.json" &
pid=$!
echo "seconds rss_kib"
s=0
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null || true)
  [ -n "$rss" ] && echo "$s $rss" | tee -a "$dir/samples"
  sleep 1; s=$((s+1))
done
wait "$pid" || true
python3 - "$dir/run.json" "$dir/samples" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print('sent', j['packets']['sent'], 'received', j['packets']['received'],
      'p50_ns', j['rtt_ns']['p50'], 'duration_s', round(j['duration_s'], 1))
samples = [tuple(map(int, l.split())) for l in open(sys.argv[2])]
early = next((kib for s, kib in samples if s >= 2), samples[-1][1])
print(f"result rss_kib.at_2s {early}")
print(f"result rss_kib.end {samples[-1][1]}")
print(f"result rss_kib.max {max(kib for _, kib in samples)}")
print(f"result run {j['packets']['sent']} {j['packets']['received']} {j['rtt_ns']['p50']} {j['duration_s']:.1f}")
PY
