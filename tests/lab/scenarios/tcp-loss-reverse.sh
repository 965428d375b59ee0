# TCP with the reverse leg losing 10 % of the replies (lib.sh).
tcp_one_leg rev
