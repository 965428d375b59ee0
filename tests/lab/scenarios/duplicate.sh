# Duplication, one leg at a time: 10 % of requests, then 10 % of replies.
pair
reflector srv
told dup 0.10
leg fwd duplicate 10%
snapshot fwd-0
# shellcheck disable=SC2046
client fwd $(stamp_flow 2000)
snapshot fwd-1
leg_clear fwd
leg rev duplicate 10%
snapshot rev-0
# shellcheck disable=SC2046
client rev $(stamp_flow 2000)
snapshot rev-1
reflector_stop
