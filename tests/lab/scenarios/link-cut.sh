# The client's link set down for 2 s mid-run, then up again.
pair
reflector srv
snapshot before
# shellcheck disable=SC2046
client_bg run $(stamp_flow 2400)
sleep 4
# Each change bracketed by clock reads: on a busy host an `ip` command
# takes a good part of a second, and the link changes somewhere inside it.
now down
ip -n "$NS_A" link set va down
now downed
sleep 2
now upping
ip -n "$NS_A" link set va up
now up
# Taking the link down flushed its neighbours, static ones too.
static_neighbours "$NS_A" va "$B_ADDR" "$NS_B" vb
wait_client run
snapshot after
reflector_stop
