# Two igb NICs (Intel 82576, QEMU 10's `-device igb`) on one emulated hub,
# each moved into its own namespace: the client's host A on one, the
# reflector's host B on the other, across the emulated wire. The NICs have
# hardware clocks; igb stamps every transmitted packet but received ones
# only for PTP over Ethernet. The device's timestamping setting is read by
# other code (tests/lab/hwtstamp.py) before, during and after each run.
hw() { ip netns exec "$1" python3 "$here/hwtstamp.py" "$2"; }

modprobe igb
nics=()
for _ in $(seq 100); do
  nics=()
  for d in /sys/class/net/*; do
    [ "$(basename "$(readlink -f "$d/device/driver" 2>/dev/null)")" = igb ] &&
      nics+=("$(basename "$d")")
  done
  [ ${#nics[@]} -ge 2 ] && break
  sleep 0.1
done
[ ${#nics[@]} -ge 2 ] || {
  log "two igb NICs expected, found: ${nics[*]:-none}"
  exit 1
}
ip netns add "$NS_A"
ip netns add "$NS_B"
ip link set "${nics[0]}" netns "$NS_A" name eth0
ip link set "${nics[1]}" netns "$NS_B" name eth0
host_up "$NS_A" eth0 "$A_ADDR"
host_up "$NS_B" eth0 "$B_ADDR"
static_neighbours "$NS_A" eth0 "$B_ADDR" "$NS_B" eth0
static_neighbours "$NS_B" eth0 "$A_ADDR" "$NS_A" eth0
# The emulated link comes up a moment after `up` (igb's autonegotiation).
for ns in "$NS_A" "$NS_B"; do
  for _ in $(seq 100); do
    ip -n "$ns" link show eth0 | grep -q LOWER_UP && break
    sleep 0.1
  done
done
in_a ethtool -T eth0 >"$OUT/ethtool-a.txt"
in_b ethtool -T eth0 >"$OUT/ethtool-b.txt"
reflector srv
hw "$NS_A" eth0 >"$OUT/hw-before.json"
# igb's own count of TX stamps it skipped (one at a time) or timed out,
# around each run (ethtool -S).
in_a ethtool -S eth0 >"$OUT/ethtool-s-a-before-auto.txt"
# shellcheck disable=SC2046
client auto $(stamp_flow 400) --timestamps auto
in_a ethtool -S eth0 >"$OUT/ethtool-s-a-after-auto.txt"
hw "$NS_A" eth0 >"$OUT/hw-after-auto.json"
# The NIC's clock against the system's, read by linuxptp's phc_ctl (not
# Synapse) just before and after the run.
in_a phc_ctl eth0 cmp >"$OUT/phc-before.txt" 2>&1 || true
in_a ethtool -S eth0 >"$OUT/ethtool-s-a-before-hardware.txt"
# shellcheck disable=SC2046
client hardware $(stamp_flow 400) --timestamps hardware
in_a ethtool -S eth0 >"$OUT/ethtool-s-a-after-hardware.txt"
in_a phc_ctl eth0 cmp >"$OUT/phc-after.txt" 2>&1 || true
# The NIC's clock stepped +50 ms (linuxptp's phc_ctl) 2 s into a run: no
# NIC stamp may be placed through the mapping from before the step.
# shellcheck disable=SC2046
client_bg phcstep $(stamp_flow 1000) --timestamps hardware
sleep 2
in_a phc_ctl eth0 adj 0.05 >"$OUT/phc-step.txt" 2>&1 || true
told phc_step_ns 50000000
wait_client phcstep
hw "$NS_A" eth0 >"$OUT/hw-after-hardware.json"
# A run stopped by SIGTERM, and one by SIGINT, while the NIC is set up.
for sig in TERM INT; do
  # Started directly (not through a function, whose subshell would get
  # the signal): `ip netns exec` execs, so $! is synapse's own PID. A
  # non-interactive shell starts it with SIGINT ignored; Synapse installs
  # its own handler over that.
  # shellcheck disable=SC2046
  ip netns exec "$NS_A" "$SYNAPSE" client $(stamp_flow 2000 | sed "s|@|$LOGS/sig$sig.csv|") \
    --timestamps hardware >"$OUT/sig$sig.json" 2>"$OUT/sig$sig.err" &
  pid=$!
  LAB_PIDS+=("$pid")
  sleep 3
  hw "$NS_A" eth0 >"$OUT/hw-during-$sig.json"
  kill -"$sig" "$pid"
  rc=0
  wait "$pid" || rc=$?
  echo "$rc" >"$OUT/sig$sig.rc"
  hw "$NS_A" eth0 >"$OUT/hw-after-$sig.json"
done
reflector_stop
# The reflector stamps on its NIC too: T3 hw in its log, and in each
# Follow-Up to the client (placed on B's clock). Stopped by SIGTERM.
hw "$NS_B" eth0 >"$OUT/hw-b-before.json"
in_b ethtool -S eth0 >"$OUT/ethtool-s-b-before.txt"
reflector srvhw --timestamps hardware=eth0
hw "$NS_B" eth0 >"$OUT/hw-b-during.json"
# A request every 20 ms: B's NIC stamp of an answer must be in before the
# next request for that request's answer to carry it (igb hands its TX
# stamp over from a deferred work item; under emulation, milliseconds).
# shellcheck disable=SC2046
client followup $(INTERVAL=20ms stamp_flow 400) --timestamps hardware --tlv follow-up
kill -TERM "$REFLECTOR"
rc=0
wait "$REFLECTOR" || rc=$?
echo "$rc" >"$OUT/srvhw.rc"
hw "$NS_B" eth0 >"$OUT/hw-b-after.json"
in_b ethtool -S eth0 >"$OUT/ethtool-s-b-after.txt"
