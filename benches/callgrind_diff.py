#!/usr/bin/env python3
"""Where one round trip's instructions go: the per-function difference of
two callgrind files of the same thread (a SHORT and a LONG run, from
benches/instructions.sh with KEEP=DIR), divided by the round trips between
them. Self cost per function (with what was inlined into it), as
callgrind_annotate reports it; start-up
and the final report cancel.

    benches/callgrind_diff.py SHORT_FILE LONG_FILE ROUND_TRIPS [TOP]
"""
import re
import subprocess
import sys

LINE = re.compile(r"^\s*([\d,]+)\s+\([ \d.]+%\)\s+(.*)$")


def costs(path):
    text = subprocess.run(
        ["callgrind_annotate", "--auto=no", "--threshold=100", path],
        check=True, capture_output=True, text=True,
    ).stdout
    out = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if not m or "PROGRAM TOTALS" in m.group(2):
            continue
        name = re.sub(r" \[[^\]]*\]$", "", m.group(2))
        # Grouped by function: code inlined into it (from whatever file)
        # counts as its own.
        fn = name.partition(":")[2] or name
        out[fn] = out.get(fn, 0) + int(m.group(1).replace(",", ""))
    return out


def main():
    short, long, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 25
    a, b = costs(short), costs(long)
    per = {k: (b.get(k, 0) - a.get(k, 0)) / n for k in set(a) | set(b)}
    total = sum(per.values())
    print(f"{total:8.0f}  per round trip, all functions")
    for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:top]:
        if abs(v) < 0.5:
            break
        print(f"{v:8.1f}  {k}")


main()
