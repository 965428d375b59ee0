# The client's link set down for 2 s mid-run, then up again.
pair
reflector srv
snapshot before
# shellcheck disable=SC2046
client_bg run $(stamp_flow 2400)
sleep 4
now down
ip -n "$NS_A" link set va down
sleep 2
ip -n "$NS_A" link set va up
now up
# Taking the link down flushed its neighbours, static ones too.
static_neighbours "$NS_A" va "$B_ADDR" "$NS_B" vb
wait_client run
snapshot after
reflector_stop
