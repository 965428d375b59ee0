# 20 % random loss on the reverse leg alone.
pair
leg rev loss 20%
told loss 0.20
reflector srv
snapshot before
# shellcheck disable=SC2046
client run $(stamp_flow 2000)
snapshot after
reflector_stop
