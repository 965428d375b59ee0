# The reverse leg alone: loss and jitter reorder the replies (lib.sh).
one_leg_alone rev
