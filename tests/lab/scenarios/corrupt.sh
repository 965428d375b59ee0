# 10 % of requests get one bit flipped somewhere in their first bytes
# (the whole frame, Ethernet header included, for datagrams this small).
pair
leg fwd corrupt 10%
told corrupt 0.10
reflector srv
snapshot before
# shellcheck disable=SC2046
client run $(stamp_flow 3000)
snapshot after
reflector_stop
