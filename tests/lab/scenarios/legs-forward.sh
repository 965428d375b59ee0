# The forward leg alone: 5 % loss and 30 ms ± 10 ms of uniform jitter,
# which reorders the requests (netem sends in time order). A reference
# flow beside it gets the same loss and a constant 30 ms; a plain echo
# flow gets the same as the impaired one.
LEG=fwd
pair
two_flows "$LEG" 9001 delay 30ms loss 5% -- delay 30ms 10ms loss 5%
told leg "$LEG"
told mu_ns 30000000
told sigma_ns 10000000
told dist uniform
told loss 0.05
reflector srv
snapshot before
# shellcheck disable=SC2046
client_bg ref $(stamp_flow 3000) --bind "$A_ADDR:9001"
# shellcheck disable=SC2046
client_bg test $(stamp_flow 3000) --bind "$A_ADDR:9002"
client_bg echo "$B_ADDR:$ECHO_PORT" --interval 5ms --packets 3000 --warmup 0 --timeout 2s \
  --threshold 60s --max-loss 100 --max-outage 60s --no-ui --log @ --bind "$A_ADDR:9003"
wait_client ref
wait_client test
wait_client echo
snapshot after
reflector_stop
