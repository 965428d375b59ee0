# The forward leg alone: loss and jitter reorder the requests (lib.sh).
one_leg_alone fwd
