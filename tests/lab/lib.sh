# Shared by the lab's scenarios (sourced by run-scenario; bash).
#
# The topology is two hosts, namespaces A (client) and B (reflector),
# joined by a veth pair: netem on A's end (va) impairs the forward leg only,
# netem on B's end (vb) the reverse leg only. Neighbours are static and
# IPv6 is off unless asked for, so the only packets the qdiscs see are
# Synapse's own and their counters count exactly those.
#
# Every scenario writes into $OUT: what it told netem (told), what the
# kernel counted (qdisc-*.json from `tc -s -j`, snmp-*.txt from
# /proc/net/snmp), and what Synapse reported (*.json, *.csv, *.txt).

A_ADDR=10.77.0.1
B_ADDR=10.77.0.2
BIND="$B_ADDR"
ECHO_PORT=7007
STAMP_PORT=8862
# The per-packet logs are written to local memory (a guest's /tmp is a
# tmpfs) and copied into $OUT when the scenario ends: in a guest, $OUT is
# shared with the host over 9p, whose every write costs the host CPU the
# emulated machine runs on.
LOGS="$(mktemp -d /tmp/lab-logs.XXXXXX)"
NS_A="lab${LAB_ID:-$$}a"
NS_B="lab${LAB_ID:-$$}b"
NS_R="lab${LAB_ID:-$$}r"
LAB_PIDS=()

log() { echo "[$(date +%T.%3N)] $*" >&2; }

# `told KEY VALUE...`: a line of what the scenario told the kernel or did.
told() {
  local key="$1"
  shift
  echo "$key=$*" >>"$OUT/told"
}

# Run in a host. `ip netns exec` execs the program, so a command started
# with these in the background has the program's own PID in $!.
in_a() { ip netns exec "$NS_A" "$@"; }
in_b() { ip netns exec "$NS_B" "$@"; }
in_r() { ip netns exec "$NS_R" "$@"; }

lab_cleanup() {
  local pid
  for pid in "${LAB_PIDS[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  for ns in "$NS_A" "$NS_B" "$NS_R"; do
    ip netns del "$ns" 2>/dev/null || true
  done
  if [ "$LOGS" != "$OUT" ]; then
    cp -r "$LOGS/." "$OUT/" 2>/dev/null || true
    rm -rf "$LOGS"
  fi
}

# Two hosts on one link (the default topology). `pair ipv6` keeps IPv6.
pair() {
  ip netns add "$NS_A"
  ip netns add "$NS_B"
  ip link add va netns "$NS_A" type veth peer name vb netns "$NS_B"
  host_up "$NS_A" va "$A_ADDR" "${1:-}"
  host_up "$NS_B" vb "$B_ADDR" "${1:-}"
  static_neighbours "$NS_A" va "$B_ADDR" "$NS_B" vb
  static_neighbours "$NS_B" vb "$A_ADDR" "$NS_A" va
}

# host_up NS DEV ADDR [ipv6]
host_up() {
  local ns="$1" dev="$2" addr="$3"
  ip -n "$ns" link set lo up
  if [ "${4:-}" != ipv6 ]; then
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
  fi
  ip -n "$ns" addr add "$addr/24" dev "$dev"
  ip -n "$ns" link set "$dev" up
}

# static_neighbours NS DEV PEER_ADDR PEER_NS PEER_DEV: no ARP on the link.
static_neighbours() {
  local mac
  mac="$(ip -n "$4" -br link show "$5" | awk '{print $3}')"
  ip -n "$1" neigh replace "$3" lladdr "$mac" dev "$2" nud permanent
}

# Three hosts for path MTU: A — R — B, R routing between 10.77.0.0/24
# (fd77::/64) and 10.78.0.0/24 (fd78::/64). B is then 10.78.0.2.
routed() {
  local ns
  for ns in "$NS_A" "$NS_R" "$NS_B"; do ip netns add "$ns"; done
  ip link add va netns "$NS_A" type veth peer name ra netns "$NS_R"
  ip link add rb netns "$NS_R" type veth peer name vb netns "$NS_B"
  B_ADDR=10.78.0.2 BIND=0.0.0.0
  for ns in "$NS_A" "$NS_R" "$NS_B"; do
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.forwarding=1 net.ipv4.ip_forward=1
  done
  address "$NS_A" va 10.77.0.1/24 fd77::1/64
  address "$NS_R" ra 10.77.0.254/24 fd77::fe/64
  address "$NS_R" rb 10.78.0.254/24 fd78::fe/64
  address "$NS_B" vb 10.78.0.2/24 fd78::2/64
  ip -n "$NS_A" route add default via 10.77.0.254
  ip -n "$NS_A" -6 route add default via fd77::fe
  ip -n "$NS_B" route add default via 10.78.0.254
  ip -n "$NS_B" -6 route add default via fd78::fe
}
address() {
  ip -n "$1" addr add "$3" dev "$2"
  ip -n "$1" addr add "$4" dev "$2" nodad
  ip -n "$1" link set "$2" up
}

# The qdiscs of both legs: `leg fwd|rev ARGS` puts netem ARGS at the root
# of that leg's sending end, afresh (a `replace` would keep options from
# before, such as corrupt), and says so in told.
leg_dev() { if [ "$1" = fwd ]; then echo "$NS_A va"; else echo "$NS_B vb"; fi; }
leg() {
  local which="$1" ns dev
  shift
  read -r ns dev <<<"$(leg_dev "$which")"
  tc -n "$ns" qdisc del dev "$dev" root 2>/dev/null || true
  tc -n "$ns" qdisc add dev "$dev" root handle 1: netem "$@"
  told "netem_$which" "$*"
}
# Changes the netem of a leg in place mid-run (counters kept).
leg_change() {
  local which="$1" ns dev
  shift
  read -r ns dev <<<"$(leg_dev "$which")"
  tc -n "$ns" qdisc change dev "$dev" root handle 1: netem "$@"
  told "netem_${which}_then" "$*"
}
leg_clear() {
  local ns dev
  read -r ns dev <<<"$(leg_dev "$1")"
  tc -n "$ns" qdisc del dev "$dev" root 2>/dev/null || true
  told "netem_$1" "none"
}

# Two flows through one leg: `two_flows fwd|rev PORT ARGS_REF -- ARGS_TEST`.
# The flow of client port PORT gets netem ARGS_REF; every other packet of
# that leg gets ARGS_TEST. A reference measured at the same time as the
# impaired flow, through the same kernel, under the same emulation noise.
two_flows() {
  local which="$1" port="$2" ns dev ref=() match
  shift 2
  while [ "$1" != -- ]; do ref+=("$1") && shift; done
  shift
  read -r ns dev <<<"$(leg_dev "$which")"
  # Every priority to band 2, the test flow's; the filter sends the
  # reference flow to band 1.
  tc -n "$ns" qdisc del dev "$dev" root 2>/dev/null || true
  tc -n "$ns" qdisc add dev "$dev" root handle 1: prio bands 2 \
    priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
  tc -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: netem "${ref[@]}"
  tc -n "$ns" qdisc add dev "$dev" parent 1:2 handle 20: netem "$@"
  if [ "$which" = fwd ]; then match=sport; else match=dport; fi
  tc -n "$ns" filter add dev "$dev" parent 1: protocol ip prio 1 u32 \
    match ip "$match" "$port" 0xffff flowid 1:1
  told "netem_${which}_reference" "${ref[*]}"
  told "netem_${which}_test" "$*"
}

# What the kernel counted: `snapshot NAME` saves every qdisc's counters
# and the UDP/IP counters of both hosts.
snapshot() {
  local ns
  for ns in "$NS_A" "$NS_B" "$NS_R"; do
    [ -e "/run/netns/$ns" ] || continue
    local side="${ns: -1}"
    tc -n "$ns" -s -j qdisc show >"$OUT/qdisc-$1-$side.json"
    ip netns exec "$ns" cat /proc/net/snmp >"$OUT/snmp-$1-$side.txt"
    ip netns exec "$ns" cat /proc/net/snmp6 >"$OUT/snmp6-$1-$side.txt" 2>/dev/null || true
    ip -n "$ns" -s -j link show >"$OUT/link-$1-$side.json"
  done
}

# The reflector in B: `reflector NAME [ARGS]` starts `synapse server` with
# a per-packet log (the truth of what reached it) and waits until it is
# ready. Its PID is in $REFLECTOR.
reflector() {
  local name="$1"
  shift
  ip netns exec "$NS_B" "$SYNAPSE" server --no-ui --bind "$BIND:$ECHO_PORT" \
    --stamp-port "$STAMP_PORT" --log "$LOGS/$name.csv" "$@" \
    >"$OUT/$name.txt" 2>"$OUT/$name.err" &
  REFLECTOR=$!
  LAB_PIDS+=("$REFLECTOR")
  wait_for "$OUT/$name.txt" "Ready to echo" 60 "$REFLECTOR"
}

# Stops the reflector with SIGINT, so it flushes its log and totals.
reflector_stop() {
  kill -INT "$REFLECTOR" 2>/dev/null || true
  wait "$REFLECTOR" 2>/dev/null || true
}

# wait_for FILE TEXT SECONDS [PID]: until FILE says TEXT (or PID died).
wait_for() {
  local deadline=$(($(date +%s) + $3))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    grep -q "$2" "$1" 2>/dev/null && return 0
    if [ -n "${4:-}" ] && ! kill -0 "$4" 2>/dev/null; then break; fi
    sleep 0.1
  done
  log "no '$2' in $1 (waited up to $3 s)"
  cat "$1" "${1%.*}.err" >&2 2>/dev/null || true
  return 1
}

# A client run in A: `client NAME ARGS...` writes NAME.json (or NAME.txt
# with --no-ui), NAME.err, NAME.rc. The client's per-packet log is NAME.csv
# when ARGS ask for `--log @`.
client() {
  local name="$1" args=() a rc=0 ext=json
  shift
  for a in "$@"; do
    [ "$a" = "@" ] && a="$LOGS/$name.csv"
    [ "$a" = "--no-ui" ] && ext=txt
    args+=("$a")
  done
  in_a "$SYNAPSE" client "${args[@]}" >"$OUT/$name.$ext" 2>"$OUT/$name.err" || rc=$?
  echo "$rc" >"$OUT/$name.rc"
  log "client $name exited $rc"
}

# The same in the background; `wait` for it with wait_client NAME.
client_bg() {
  local name="$1"
  shift
  client "$name" "$@" &
  eval "CLIENT_$name=$!"
}
wait_client() {
  local var="CLIENT_$1"
  wait "${!var}" || true
}

# The STAMP flow every scenario measures with: paced, numbered from 0
# without warm-up (so the qdiscs' counters and Synapse's count the same
# packets), a timeout far above any delay told, and limits that let every
# run pass (the verdict is not what the lab checks).
stamp_flow() {
  echo "$B_ADDR:$STAMP_PORT" --stamp --interval "${INTERVAL:-5ms}" --packets "$1" \
    --warmup 0 --timeout "${TIMEOUT:-2s}" --threshold 60s --max-loss 100 \
    --max-outage 60s --json --log @
}

# `now NAME`: the guest's wall clock, for the told file (seconds.ns).
now() { told "$1" "$(date +%s.%N)"; }

# `one_leg_alone fwd|rev`: that leg alone gets 5 % loss and 30 ms ± 10 ms of
# uniform jitter, which reorders what crosses it (netem sends in time order).
# A reference flow beside it gets the same loss and a constant 30 ms; a plain
# echo flow gets the same as the impaired one.
one_leg_alone() {
  pair
  two_flows "$1" 9001 delay 30ms loss 5% -- delay 30ms 10ms loss 5%
  told leg "$1"
  told mu_ns 30000000
  told sigma_ns 10000000
  told dist uniform
  told loss 0.05
  reflector srv
  snapshot before
  # shellcheck disable=SC2046
  client_bg ref $(stamp_flow 3000) --bind "$A_ADDR:9001"
  # shellcheck disable=SC2046
  client_bg test $(stamp_flow 3000) --bind "$A_ADDR:9002"
  client_bg echo "$B_ADDR:$ECHO_PORT" --interval 5ms --packets 3000 --warmup 0 --timeout 2s \
    --threshold 60s --max-loss 100 --max-outage 60s --no-ui --log @ --bind "$A_ADDR:9003"
  wait_client ref
  wait_client test
  wait_client echo
  snapshot after
  reflector_stop
}

# `tcp_one_leg fwd|rev`: a `synapse client --tcp` run (TCP echo, one
# request in flight) across one impaired leg. That leg delays every packet
# 10 ms and loses 10 % of the segments that carry a request (fwd) or a reply
# (rev): those of IP length 52 + TCP_SIZE (headers and the timestamps
# option), sent to netem 10: by a u32 filter. Everything else on the leg
# (handshake, pure ACKs, DSACKs) goes to netem 20:, only delayed, so netem
# 10:'s drop counter counts exactly the data segments a kernel had to
# resend. The other leg is left alone.
TCP_SIZE=100
tcp_one_leg() {
  local which="$1" ns dev len=$((52 + TCP_SIZE))
  pair
  read -r ns dev <<<"$(leg_dev "$which")"
  tc -n "$ns" qdisc add dev "$dev" root handle 1: prio bands 2 \
    priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
  tc -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: netem delay 10ms loss 10%
  tc -n "$ns" qdisc add dev "$dev" parent 1:2 handle 20: netem delay 10ms
  tc -n "$ns" filter add dev "$dev" parent 1: protocol ip prio 1 u32 \
    match u16 "$len" 0xffff at 2 flowid 1:1
  told leg "$which"
  told "netem_${which}_data" "delay 10ms loss 10%"
  told "netem_${which}_other" "delay 10ms"
  told loss 0.10
  told ip_len "$len"
  reflector srv
  snapshot before
  client run "$B_ADDR:$ECHO_PORT" --tcp --size "$TCP_SIZE" --packets 500 --warmup 0 \
    --timeout 5s --threshold 60s --max-loss 100 --max-outage 60s --json --log @
  snapshot after
  reflector_stop
}
