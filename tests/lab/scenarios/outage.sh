# The forward leg drops everything for about 3 s in the middle of a run.
pair
leg fwd limit 1000
reflector srv
snapshot before
# shellcheck disable=SC2046
client_bg run $(stamp_flow 2400)
sleep 4
now outage_start
leg_change fwd loss 100%
now outage_started
sleep 3
now outage_end
leg_change fwd loss 0%
now outage_ended
wait_client run
snapshot after
reflector_stop
