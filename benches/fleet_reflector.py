#!/usr/bin/env python3
"""A plain UDP echo on many ports of 127.0.0.1, for benches/agent_fleet.sh:
one thread, epoll, so a thousand peers cost one process.

    fleet_reflector.py FIRST_PORT COUNT [--spin]

--spin polls without sleeping (a core of its own), so the sender never
pays to wake it: on loopback the sender's sendto otherwise also carries
the IPI that wakes the peer, a cost a real network puts on the far host.
"""
import selectors
import socket
import sys

first, count = int(sys.argv[1]), int(sys.argv[2])
timeout = 0 if "--spin" in sys.argv[3:] else None
sel = selectors.DefaultSelector()
for port in range(first, first + count):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", port))
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
print("ready", flush=True)
while True:
    for key, _ in sel.select(timeout):
        s = key.fileobj
        while True:
            try:
                data, addr = s.recvfrom(2048)
            except BlockingIOError:
                break
            s.sendto(data, addr)
