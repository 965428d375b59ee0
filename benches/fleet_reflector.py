#!/usr/bin/env python3
"""A plain UDP echo on many ports of 127.0.0.1, for benches/agent_fleet.sh:
one thread, epoll, so a thousand peers cost one process.

    fleet_reflector.py FIRST_PORT COUNT
"""
import selectors
import socket
import sys

first, count = int(sys.argv[1]), int(sys.argv[2])
sel = selectors.DefaultSelector()
for port in range(first, first + count):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", port))
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
print("ready", flush=True)
while True:
    for key, _ in sel.select():
        s = key.fileobj
        while True:
            try:
                data, addr = s.recvfrom(2048)
            except BlockingIOError:
                break
            s.sendto(data, addr)
