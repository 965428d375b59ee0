#!/usr/bin/env python3
"""The lab's second opinion on two hosts' clocks, independent of Synapse.

  clockprobe.py serve PORT            answer probes; obey step/tick/quit
  clockprobe.py probe HOST PORT N     N exchanges; prints the offset (the
                                      server's clock minus this one's, ns)
                                      of the fastest one and its RTT, JSON
  clockprobe.py step HOST PORT NS     the server steps its clock by NS; prints
                                      how long the step took (ns), which the
                                      clock's step falls short by at most
  clockprobe.py tick HOST PORT TICK   the server sets its kernel tick (µs
                                      per 1/USER_HZ s; 10000 is nominal)
  clockprobe.py quit HOST PORT        the server exits

Every stamp is CLOCK_REALTIME read in user space around the socket calls,
so the offset of an exchange is off by at most half its round trip: the
fastest exchange bounds it tightest (the NTP way, by other code than
Synapse's)."""
import json
import socket
import subprocess
import sys
import time


def serve(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    done = set()  # commands already obeyed: a repeat is only answered
    while True:
        data, peer = s.recvfrom(512)
        t2 = time.clock_gettime_ns(time.CLOCK_REALTIME)
        words = data.decode(errors="replace").split()
        if not words:
            continue
        if words[0] == "T":
            t3 = time.clock_gettime_ns(time.CLOCK_REALTIME)
            s.sendto(f"{words[1]} {t2} {t3}".encode(), peer)
        elif words[0] in ("STEP", "TICK") and words[1] in done:
            s.sendto(b"OK", peer)
        elif words[0] == "STEP":
            done.add(words[1])
            # The time between the read and the set is lost from the
            # step: it is reported, so the step is known to within it.
            m0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            now = time.clock_gettime_ns(time.CLOCK_REALTIME)
            time.clock_settime_ns(time.CLOCK_REALTIME, now + int(words[2]))
            m1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            s.sendto(f"OK {m1 - m0}".encode(), peer)
        elif words[0] == "TICK":
            done.add(words[1])
            subprocess.run(["busybox", "adjtimex", "-t", words[2]], check=True,
                           stdout=subprocess.DEVNULL)
            s.sendto(b"OK", peer)
        elif words[0] == "QUIT":
            s.sendto(b"OK", peer)
            return


def ask(host, port, text, tries=600):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.1)
    for _ in range(tries):
        s.sendto(text.encode(), (host, port))
        try:
            data, _ = s.recvfrom(512)
            return data
        except socket.timeout:
            continue
    sys.exit(f"clockprobe: no answer from {host}:{port} to {text!r}")


def probe(host, port, n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.5)
    best = None
    for i in range(n):
        t1 = time.clock_gettime_ns(time.CLOCK_REALTIME)
        s.sendto(f"T {i}".encode(), (host, port))
        try:
            data, _ = s.recvfrom(512)
        except socket.timeout:
            continue
        t4 = time.clock_gettime_ns(time.CLOCK_REALTIME)
        seq, t2, t3 = (int(w) for w in data.split())
        if seq != i:
            continue
        rtt = (t4 - t1) - (t3 - t2)
        offset = ((t2 - t1) + (t3 - t4)) // 2
        if best is None or rtt < best[0]:
            best = (rtt, offset)
        time.sleep(0.005)
    if best is None:
        sys.exit("clockprobe: no exchange came back")
    print(json.dumps({"offset_ns": best[1], "rtt_ns": best[0], "at_ns": t1}))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "serve":
        serve(int(args[0]))
    elif cmd == "probe":
        probe(args[0], int(args[1]), int(args[2]))
    elif cmd == "step":
        reply = ask(args[0], int(args[1]), f"STEP {time.time_ns()} {int(args[2])}", tries=20)
        print(reply.decode().split()[1])
    elif cmd == "tick":
        ask(args[0], int(args[1]), f"TICK {time.time_ns()} {int(args[2])}", tries=20)
    elif cmd == "quit":
        ask(args[0], int(args[1]), "QUIT", tries=20)
    elif cmd == "wait":
        ask(args[0], int(args[1]), "T -1")
    else:
        sys.exit(f"clockprobe: unknown command {cmd}")


if __name__ == "__main__":
    main()
