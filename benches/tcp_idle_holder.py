#!/usr/bin/env python3
"""Holds N idle TCP connections to HOST:PORT open until killed.

    tcp_idle_holder.py HOST PORT N READY_FILE

Opens the N connections, checks each is served (one byte echoed back on
every one, so a connection the server refused or closed is an error, not
an idle one), writes "ready N" to READY_FILE, then sleeps: the
connections stay open and silent.
"""
import signal
import socket
import sys
import time

host, port, n, ready = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
conns = []
for i in range(n):
    s = socket.create_connection((host, port), timeout=5)
    conns.append(s)
for i, s in enumerate(conns):
    s.sendall(b"x")
    if s.recv(1) != b"x":
        sys.exit(f"connection {i} was not echoed (refused or closed by the server)")
with open(ready, "w") as f:
    f.write(f"ready {len(conns)}\n")
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    time.sleep(3600)
