# No impairment: what this kernel (under emulation, in a guest) adds by
# itself, measured the same way as every impaired scenario.
pair
reflector srv
snapshot before
# shellcheck disable=SC2046
client run $(stamp_flow 1000)
snapshot after
reflector_stop
