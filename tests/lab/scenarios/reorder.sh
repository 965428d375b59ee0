# Reordering on the forward leg: 25 % of requests sent at once, the rest
# after 20 ms, so each early one overtakes the four before it.
pair
leg fwd delay 20ms reorder 25%
told reorder 0.25
told mu_ns 20000000
reflector srv
snapshot before
# shellcheck disable=SC2046
client run $(stamp_flow 2000)
snapshot after
reflector_stop
