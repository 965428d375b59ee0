# The path MTU lowered below the request size mid-run, at a router between
# the hosts: to 1000 for IPv4 (the requests carry DF, so the router says
# "fragmentation needed"), then to 1280 for IPv6 ("packet too big").
routed
BIND='[::]'
reflector srv
told size 1400
snapshot v4-0
# shellcheck disable=SC2046
client_bg v4 $(stamp_flow 1600) --size 1400
sleep 4
ip -n "$NS_R" route add 10.78.0.2/32 dev rb mtu lock 1000
now v4_lowered
wait_client v4
snapshot v4-1
ip -n "$NS_A" route get 10.78.0.2 >"$OUT/route-v4.txt"
B_ADDR='[fd78::2]'
snapshot v6-0
# shellcheck disable=SC2046
client_bg v6 $(stamp_flow 1600) --size 1400
sleep 4
ip -n "$NS_R" -6 route add fd78::2/128 dev rb mtu 1280
now v6_lowered
wait_client v6
snapshot v6-1
ip -n "$NS_A" -6 route get fd78::2 >"$OUT/route-v6.txt"
reflector_stop
