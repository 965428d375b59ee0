# TCP with the forward leg losing 10 % of the requests (lib.sh).
tcp_one_leg fwd
