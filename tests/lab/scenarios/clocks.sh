# Two hosts, two clocks (tests/lab/two-hosts): Synapse's clock offset, its
# steps and drift against a clock stepped and slewed by known amounts, with
# an independent NTP-style probe (tests/lab/clockprobe.py) reading the
# offset before and after each run; and chrony synchronising the
# reflector's clock while it answers. Phases: as booted; the reflector's
# clock stepped -40 ms in the middle of a run; its frequency raised by
# +100 ppm (`adjtimex -f`) for a longer run; chronyd on the reflector's host
# synchronising to one on the client's, mid-run.
PROBE_PORT=9123
probe() { python3 "$here/clockprobe.py" "$@"; }
CHRONYD="${CHRONYD:-chronyd}"

# chronyd NAME CONFIG-LINES...: runs in the foreground of a subshell, its
# files in the output directory, as root (the package's user may not exist
# on this root), no seccomp filter.
chrony_start() {
  local name="$1"
  shift
  printf '%s\n' "$@" "pidfile $OUT/chrony-$name.pid" "cmdport 0" >"$OUT/chrony-$name.conf"
  "$CHRONYD" -d -u root -F 0 -f "$OUT/chrony-$name.conf" >"$OUT/chrony-$name.log" 2>&1 &
  echo $!
}

side_b() {
  "$SYNAPSE" server --no-ui --bind "0.0.0.0:7007" --stamp-port 8862 \
    --log "$LOGS/srv.csv" >"$OUT/srv.txt" 2>"$OUT/srv.err" &
  local reflector=$!
  # The probe answers once the reflector is ready: side a waits for it.
  for _ in $(seq 600); do
    grep -q "Ready to echo" "$OUT/srv.txt" 2>/dev/null && break
    sleep 0.1
  done
  # Until side a says quit (bounded by the guest's own timeout); it asks
  # for chrony with the probe's CHRONY command.
  probe serve "$PROBE_PORT" "$OUT" "$CHRONYD" || true
  busybox adjtimex -f 0 >/dev/null
  [ -f "$OUT/chrony-b.pid" ] && kill "$(cat "$OUT/chrony-b.pid")" 2>/dev/null
  kill -INT "$reflector" 2>/dev/null || true
  wait "$reflector" 2>/dev/null || true
}

# client NAME PACKETS INTERVAL: a STAMP run, its JSON and per-packet log.
client() {
  "$SYNAPSE" client "$B_ADDR:8862" --stamp --interval "$3" --packets "$2" \
    --warmup 0 --timeout 2s --threshold 60s --max-loss 100 --max-outage 60s \
    --json --log "$LOGS/$1.csv" >"$OUT/$1.json" 2>"$OUT/$1.err"
}

# phase NAME PACKETS [MIDWAY-COMMAND...]: probe, a STAMP run (the command
# run 3 s into it), probe again; then a short run for the text report.
phase() {
  local name="$1" packets="$2"
  shift 2
  probe probe "$B_ADDR" "$PROBE_PORT" 100 >"$OUT/$name-probe0.json"
  local rc=0
  client "$name" "$packets" 5ms &
  local pid=$!
  if [ $# -gt 0 ]; then
    sleep 3
    "$@"
  fi
  wait "$pid" || rc=$?
  echo "$rc" >"$OUT/$name.rc"
  "$SYNAPSE" client "$B_ADDR:8862" --stamp --interval 5ms --packets 200 \
    --warmup 0 --timeout 2s --threshold 60s --max-loss 100 --max-outage 60s \
    --no-ui >"$OUT/$name-text.txt" 2>&1 || true
  probe probe "$B_ADDR" "$PROBE_PORT" 100 >"$OUT/$name-probe1.json"
  log "phase $name: synapse exited $rc"
}

step_b() {
  told step_lag "$(probe step "$B_ADDR" "$PROBE_PORT" -40000000)"
  told step "-40000000"
}

side_a() {
  probe wait "$B_ADDR" "$PROBE_PORT"
  phase base 600
  phase step 1600 step_b
  # +100 ppm: adjtimex's frequency is in 2^-16 ppm. A drift this run
  # resolves under TCG: its interval there is ±40-60 ppm, which +50 ppm
  # (2 ms over the run's 20 s) did not always clear.
  probe freq "$B_ADDR" "$PROBE_PORT" $((100 * 65536))
  told freq_ppm 100
  phase slew 4000
  probe freq "$B_ADDR" "$PROBE_PORT" 0
  # chrony: this host serves its own time (stratum 8, its clock left
  # alone); the reflector's host synchronises to it, polling 16 times a
  # second, while a run goes on. Its watcher notes (on its own clock) when
  # the kernel first says the clock is synchronised.
  local server
  server=$(chrony_start a "local stratum 8" "allow 10.79.0.0/24" "bindaddress $A_ADDR")
  told chronyd "$("$CHRONYD" --version 2>&1 | head -n 1)"
  client chrony 600 20ms &
  local pid=$!
  sleep 2
  probe chrony "$B_ADDR" "$PROBE_PORT" "$A_ADDR"
  local rc=0
  wait "$pid" || rc=$?
  echo "$rc" >"$OUT/chrony.rc"
  kill "$server" 2>/dev/null || true
  probe quit "$B_ADDR" "$PROBE_PORT"
}
