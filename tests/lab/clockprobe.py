#!/usr/bin/env python3
"""The lab's second opinion on two hosts' clocks, independent of Synapse.

  clockprobe.py serve PORT [OUTDIR CHRONYD]
                                      answer probes; obey step/tick/freq/
                                      chrony/quit
  clockprobe.py probe HOST PORT N     N exchanges; prints the offset (the
                                      server's clock minus this one's, ns)
                                      of the fastest one and its RTT, JSON
  clockprobe.py step HOST PORT NS     the server steps its clock by NS; prints
                                      how long the step took (ns), which the
                                      clock's step falls short by at most
  clockprobe.py tick HOST PORT TICK   the server sets its kernel tick (µs
                                      per 1/USER_HZ s; 10000 is nominal)
  clockprobe.py freq HOST PORT FREQ   the server sets its clock's frequency
                                      offset (adjtimex -f, 2^-16 ppm)
  clockprobe.py chrony HOST PORT ADDR the server starts chronyd against the
                                      NTP server ADDR and writes, to
                                      OUTDIR/chrony-b.txt, when its kernel
                                      first says the clock is synchronised
  clockprobe.py quit HOST PORT        the server exits

Every stamp is CLOCK_REALTIME read in user space around the socket calls,
so the offset of an exchange is off by at most half its round trip: the
fastest exchange bounds it tightest (the NTP way, by other code than
Synapse's)."""
import ctypes
import json
import os
import socket
import subprocess
import sys
import threading
import time

STA_UNSYNC = 0x40
TIME_ERROR = 5


def clock_state():
    """adjtimex with modes 0: (state, status, maxerror µs), read as
    struct timex on x86-64 lays them out."""
    buf = ctypes.create_string_buffer(256)
    state = ctypes.CDLL(None, use_errno=True).adjtimex(buf)
    status = int.from_bytes(buf.raw[40:44], "little", signed=True)
    maxerror = int.from_bytes(buf.raw[24:32], "little", signed=True)
    return state, status, maxerror


def synchronised():
    state, status, _ = clock_state()
    return state != TIME_ERROR and status & STA_UNSYNC == 0


def chrony(outdir, chronyd, server):
    """chronyd against `server`, and a watcher of the kernel's status."""
    conf = os.path.join(outdir, "chrony-b.conf")
    with open(conf, "w") as f:
        # rtcsync: chronyd on Linux clears the kernel's STA_UNSYNC only
        # with it (the kernel's 11-minute mode then writes the guest's RTC).
        f.write(f"server {server} iburst minpoll -4 maxpoll -4\nrtcsync\n"
                f"pidfile {outdir}/chrony-b.pid\ncmdport 0\n")
    before = synchronised()
    started = time.clock_gettime_ns(time.CLOCK_REALTIME)
    log = open(os.path.join(outdir, "chrony-b.log"), "w")
    subprocess.Popen([chronyd, "-d", "-u", "root", "-F", "0", "-f", conf],
                     stdout=log, stderr=subprocess.STDOUT)

    path = os.path.join(outdir, "chrony-b.txt")
    with open(path, "w") as f:
        f.write(f"synchronised_before={int(before)}\nstarted_ns={started}\n")

    def watch():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if synchronised():
                at = time.clock_gettime_ns(time.CLOCK_REALTIME)
                with open(path, "a") as f:
                    f.write(f"synced_at_ns={at}\nmaxerror_us={clock_state()[2]}\n")
                return
            time.sleep(0.01)

    threading.Thread(target=watch, daemon=True).start()


def serve(port, outdir=None, chronyd=None):
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
        elif words[0] in ("STEP", "TICK", "FREQ", "CHRONY") and words[1] in done:
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
        elif words[0] == "FREQ":
            done.add(words[1])
            subprocess.run(["busybox", "adjtimex", "-f", words[2]], check=True,
                           stdout=subprocess.DEVNULL)
            s.sendto(b"OK", peer)
        elif words[0] == "CHRONY":
            done.add(words[1])
            chrony(outdir, chronyd, words[2])
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
        serve(int(args[0]), *args[1:3])
    elif cmd == "probe":
        probe(args[0], int(args[1]), int(args[2]))
    elif cmd == "step":
        reply = ask(args[0], int(args[1]), f"STEP {time.time_ns()} {int(args[2])}", tries=20)
        print(reply.decode().split()[1])
    elif cmd == "tick":
        ask(args[0], int(args[1]), f"TICK {time.time_ns()} {int(args[2])}", tries=20)
    elif cmd == "freq":
        ask(args[0], int(args[1]), f"FREQ {time.time_ns()} {int(args[2])}", tries=20)
    elif cmd == "chrony":
        ask(args[0], int(args[1]), f"CHRONY {time.time_ns()} {args[2]}", tries=20)
    elif cmd == "quit":
        ask(args[0], int(args[1]), "QUIT", tries=20)
    elif cmd == "wait":
        ask(args[0], int(args[1]), "T -1")
    else:
        sys.exit(f"clockprobe: unknown command {cmd}")


if __name__ == "__main__":
    main()
