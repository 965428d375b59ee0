# The reverse leg delayed 40 ms with Pareto jitter (sigma 10 ms, netem's
# own table), beside a reference flow delayed a constant 40 ms through the
# same qdisc tree at the same time: the reference carries the emulation's
# noise, the impaired flow that noise plus netem's jitter.
pair
two_flows rev 9001 delay 40ms -- delay 40ms 10ms distribution pareto
told leg rev
told mu_ns 40000000
told sigma_ns 10000000
told dist pareto
reflector srv
snapshot before
# shellcheck disable=SC2046
client_bg ref $(stamp_flow 4000) --bind "$A_ADDR:9001"
# shellcheck disable=SC2046
client_bg test $(stamp_flow 4000) --bind "$A_ADDR:9002"
wait_client ref
wait_client test
snapshot after
reflector_stop
