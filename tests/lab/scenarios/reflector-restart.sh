# The reflector killed (SIGKILL) mid-run and started again 2 s later.
pair
reflector srv
snapshot before
# shellcheck disable=SC2046
client_bg run $(stamp_flow 2400)
sleep 4
now kill
kill -KILL "$REFLECTOR"
wait "$REFLECTOR" 2>/dev/null || true
# Reaped: its socket is closed by now. On a busy host this can be long
# after `kill` was read (the date command itself takes a while).
now killed
snapshot down
sleep 2
now restart
reflector srv2
now ready
wait_client run
snapshot after
reflector_stop
