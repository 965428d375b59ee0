# Bursty loss on the forward leg: netem's Gilbert-Elliott model, good to
# bad with p = 2 %, back with r = 25 %, every packet lost in the bad state
# and none in the good one (mean burst 1/r = 4, loss p/(p+r) = 7.4 %).
pair
leg fwd loss gemodel 2% 25% 100% 0%
told ge_p 0.02
told ge_r 0.25
reflector srv
snapshot before
# shellcheck disable=SC2046
client run $(stamp_flow 3000)
snapshot after
reflector_stop
