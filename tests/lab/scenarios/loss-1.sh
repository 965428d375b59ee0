# 1 % random loss on the forward leg alone.
pair
leg fwd loss 1%
told loss 0.01
reflector srv
snapshot before
# shellcheck disable=SC2046
client run $(stamp_flow 3000)
snapshot after
reflector_stop
