#!/usr/bin/env python3
"""A NIC's hardware timestamping setting, read by other code than
Synapse's (SIOCGHWTSTAMP): `hwtstamp.py IFACE` prints
{"tx_type": N, "rx_filter": N} as JSON, or {"error": "..."}."""
import ctypes
import fcntl
import json
import socket
import struct
import sys

SIOCGHWTSTAMP = 0x89B1


def main():
    cfg = ctypes.create_string_buffer(12)  # struct hwtstamp_config
    ifr = struct.pack("16sP16x", sys.argv[1].encode(), ctypes.addressof(cfg))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        fcntl.ioctl(s.fileno(), SIOCGHWTSTAMP, ifr)
    except OSError as e:
        print(json.dumps({"error": e.strerror}))
        return
    _flags, tx_type, rx_filter = struct.unpack("iii", cfg.raw)
    print(json.dumps({"tx_type": tx_type, "rx_filter": rx_filter}))


if __name__ == "__main__":
    main()
