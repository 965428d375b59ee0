# Two hosts, two clocks (tests/lab/two-hosts): Synapse's clock offset and
# drift against a clock stepped and slewed by a known amount, with an
# independent NTP-style probe (tests/lab/clockprobe.py) reading the offset
# before and after each run. Phases: as booted; the reflector's clock
# stepped +50 ms; stepped a further -1.05 s (-1 s from where it started);
# its kernel tick raised to 10010 µs (+1000 ppm) for a longer run.
PROBE_PORT=9123
probe() { python3 "$here/clockprobe.py" "$@"; }

side_b() {
  "$SYNAPSE" server --no-ui --bind "0.0.0.0:7007" --stamp-port 8862 \
    --log "$LOGS/srv.csv" >"$OUT/srv.txt" 2>"$OUT/srv.err" &
  local reflector=$!
  # The probe answers once the reflector is ready: side a waits for it.
  for _ in $(seq 600); do
    grep -q "Ready to echo" "$OUT/srv.txt" 2>/dev/null && break
    sleep 0.1
  done
  # Until side a says quit (bounded by the guest's own timeout).
  probe serve "$PROBE_PORT" || true
  busybox adjtimex -t 10000 >/dev/null
  kill -INT "$reflector" 2>/dev/null || true
  wait "$reflector" 2>/dev/null || true
}

# phase NAME PACKETS: probe, a STAMP run, probe again.
phase() {
  probe probe "$B_ADDR" "$PROBE_PORT" 100 >"$OUT/$1-probe0.json"
  local rc=0
  "$SYNAPSE" client "$B_ADDR:8862" --stamp --interval 5ms --packets "$2" \
    --warmup 0 --timeout 2s --threshold 60s --max-loss 100 --max-outage 60s \
    --json --log "$LOGS/$1.csv" >"$OUT/$1.json" 2>"$OUT/$1.err" || rc=$?
  echo "$rc" >"$OUT/$1.rc"
  "$SYNAPSE" client "$B_ADDR:8862" --stamp --interval 5ms --packets 200 \
    --warmup 0 --timeout 2s --threshold 60s --max-loss 100 --max-outage 60s \
    --no-ui >"$OUT/$1-text.txt" 2>&1 || true
  probe probe "$B_ADDR" "$PROBE_PORT" 100 >"$OUT/$1-probe1.json"
  log "phase $1: synapse exited $rc"
}

side_a() {
  probe wait "$B_ADDR" "$PROBE_PORT"
  phase base 600
  told step_plus_lag "$(probe step "$B_ADDR" "$PROBE_PORT" 50000000)"
  told step_plus "50000000"
  phase plus50ms 600
  told step_minus_lag "$(probe step "$B_ADDR" "$PROBE_PORT" -1050000000)"
  told step_minus "-1050000000"
  phase minus1s 600
  probe tick "$B_ADDR" "$PROBE_PORT" 10010
  told tick "10010"
  phase skew 4000
  probe tick "$B_ADDR" "$PROBE_PORT" 10000
  probe quit "$B_ADDR" "$PROBE_PORT"
}
