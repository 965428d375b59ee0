# A 400 kbit/s forward leg with a 40-packet queue, offered twice what it
# carries: 1000-byte requests (1042 bytes on the wire) every 10 ms.
pair
leg fwd rate 400kbit limit 40
told rate_bps 400000
told limit 40
told wire_bytes 1042
reflector srv
snapshot before
INTERVAL=10ms TIMEOUT=5s
# shellcheck disable=SC2046
client run $(stamp_flow 1500) --size 1000
snapshot after
reflector_stop
