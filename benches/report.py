#!/usr/bin/env python3
"""Writes BENCHMARKS.md (to stdout) from the logs of benches/run-all.sh.

    report.py LOG_DIR COMMIT MODE MINUTES

Every figure comes from a `result` line a script printed in this run; each
ratio is against a reference measured in the same script's run, with its 95 %
bootstrap interval over the paired rounds where there are three or more; a
ratio whose interval spans its target is "not resolved", neither met nor not
met. A question
whose script did not run, or printed no result for a row, says so in the
row ("not run: <reason>").
"""
import glob
import os
import random
import statistics
import sys

logs, commit, mode, minutes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]


def read(name, ext):
    try:
        with open(os.path.join(logs, f"{name}.{ext}")) as f:
            return f.read()
    except OSError:
        return None


class Run:
    """One script's run: its command, its results, why it failed if it did."""

    def __init__(self, name):
        self.name = name
        self.cmd = (read(name, "cmd") or "").strip()
        # The tree this script ran on: a section rerun alone has its own.
        self.commit = (read(name, "commit") or "").strip() or commit
        self.results = {}
        for line in (read(name, "out") or "").splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "result":
                self.results.setdefault(parts[1], []).append(parts[2:])
            if len(parts) >= 2 and parts[0] == "skip":
                self.skips = getattr(self, "skips", {})
                self.skips[parts[1]] = " ".join(parts[2:])
        self.skips = getattr(self, "skips", {})
        rc = read(name, "rc")
        self.rc = int(rc) if rc and rc.strip().lstrip("-").isdigit() else None
        skip = read(name, "skip")
        if skip is not None:
            self.why = f"not run: {skip.strip()}"
        elif self.rc is None:
            self.why = "not run"
        elif self.rc == 124 or self.rc == 137:
            self.why = "not run: the script timed out"
        elif self.rc != 0 and not self.results:
            err = [l for l in (read(name, "err") or "").splitlines() if l.strip()]
            last = err[-1].strip() if err else "no message"
            self.why = f"not run: the script failed (exit {self.rc}: {last[:120]})"
        else:
            self.why = None

    def get(self, key, i=0, conv=float):
        """The i-th value of a result (the median over repeated lines)."""
        rows = self.results.get(key)
        if not rows:
            return None
        try:
            vals = [conv(r[i]) for r in rows if len(r) > i]
        except ValueError:
            return None
        return statistics.median(vals) if vals else None

    def values(self, key, i=0):
        """The i-th value of every line of a result: one per round."""
        try:
            return [float(r[i]) for r in self.results.get(key, []) if len(r) > i]
        except ValueError:
            return []

    def missing(self, key):
        if self.why:
            return self.why
        if key in self.skips:
            return f"not run: {self.skips[key]}"
        return "not run: no result (see target/bench-logs/" + self.name + ".out)"


RUNS = {}


def run(name):
    if name not in RUNS:
        RUNS[name] = Run(name)
    return RUNS[name]


# ---- formatting ------------------------------------------------------------

def ns(v):
    if v is None:
        return "–"
    if v >= 10_000:
        return f"{v / 1000:.1f} µs"
    return f"{v:,.0f} ns"


def num(v, unit="", digits=1):
    if v is None:
        return "–"
    return f"{v:,.{digits}f}{unit}"


class Ratio(float):
    """A ratio of medians, with its 95 % bootstrap interval over the rounds (`ci`, or None)."""

    def __new__(cls, value, ci=None):
        r = super().__new__(cls, value)
        r.ci = ci
        return r


def ratio(a, b, digits=3):
    if a is None or b is None or b == 0:
        return None
    return a / b


def ratio_ci(a, b, resamples=2000):
    """95 % percentile-bootstrap interval of median(a) / median(b) over the rounds: paired rounds
    (the same index, measured alternately) are resampled together, so what one round's
    conditions did to both stays together; unpaired lists are resampled each on its own.
    None below 3 rounds a side (no interval to speak of). Seeded: the same logs, the same file."""
    if len(a) < 3 or len(b) < 3 or min(b) <= 0:
        return None
    rng = random.Random(34)
    paired = len(a) == len(b)
    ratios = []
    for _ in range(resamples):
        if paired:
            idx = [rng.randrange(len(a)) for _ in a]
            ra, rb = [a[j] for j in idx], [b[j] for j in idx]
        else:
            ra = [rng.choice(a) for _ in a]
            rb = [rng.choice(b) for _ in b]
        ratios.append(statistics.median(ra) / statistics.median(rb))
    ratios.sort()
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def rci(name, key, ref_key, ref_name=None, i=0):
    """The ratio of medians of two results, with its interval over the rounds."""
    r = ratio(run(name).get(key, i), run(ref_name or name).get(ref_key, i))
    if r is None:
        return None
    return Ratio(r, ratio_ci(run(name).values(key, i), run(ref_name or name).values(ref_key, i)))


def cifmt(r, digits=3):
    ci = getattr(r, "ci", None)
    return f" [{ci[0]:.{digits}f}-{ci[1]:.{digits}f}]" if ci else ""


def rfmt(r, digits=3):
    return "–" if r is None else f"{r:.{digits}f}"


def code(cmd):
    return f"`{cmd}`" if cmd else "–"


out = []


def p(line=""):
    out.append(line)


def table(rows, figure="median", reference="reference (same run)"):
    p(f"| measured | {figure} | {reference} | ratio | commit | command |")
    p("|---|---|---|---|---|---|")
    # A question that did not run at all is one row, not one per figure.
    if rows and all(r[1] is None for r in rows) and len({r[3] for r in rows}) == 1 \
            and len({r[4] for r in rows}) == 1:
        rows = [("every row of this question", None, None, rows[0][3], rows[0][4])]
    for r in rows:
        label, fig, ref, rat, name = r
        cmd, at = code(run(name).cmd), run(name).commit
        if fig is None:
            why = rat  # the reason rides in the ratio slot
            p(f"| {label} | {why} | | | {at} | {cmd} |")
        else:
            p(f"| {label} | {fig} | {ref} | {rat} | {at} | {cmd} |")
    p()


def pair_row(label, name, key, ref_key, ref_label, ref_name=None, fmt=ns):
    """A row comparing p50 / p99 of KEY against REF_KEY (result fields 0, 1)."""
    ref_name = ref_name or name
    a, b = run(name), run(ref_name)
    p50, p99 = a.get(key, 0), a.get(key, 1)
    r50, r99 = b.get(ref_key, 0), b.get(ref_key, 1)
    if p50 is None:
        return (label, None, None, a.missing(key), name)
    if r50 is None:
        return (label, f"{fmt(p50)} / {fmt(p99)}", ref_label, b.missing(ref_key), name)
    if key == ref_key and name == ref_name:
        return (label, f"{fmt(p50)} / {fmt(p99)}", "(the reference)", "1 / 1", name)
    q50, q99 = rci(name, key, ref_key, ref_name, 0), rci(name, key, ref_key, ref_name, 1)
    return (label, f"{fmt(p50)} / {fmt(p99)}", f"{ref_label}: {fmt(r50)} / {fmt(r99)}",
            f"**{rfmt(q50)}**{cifmt(q50)} / {rfmt(q99)}{cifmt(q99)}", name)


def one_row(label, name, key, ref_key, ref_label, fmt, i=0, ref_name=None, digits=3, ref_i=None):
    ref_name = ref_name or name
    a, b = run(name), run(ref_name)
    v = a.get(key, i)
    r = b.get(ref_key, i if ref_i is None else ref_i)
    if v is None:
        return (label, None, None, a.missing(key), name)
    if key == ref_key and name == ref_name:
        return (label, fmt(v), "(the reference)", "1", name)
    if r is None:
        return (label, fmt(v), ref_label, b.missing(ref_key), name)
    q = rci(name, key, ref_key, ref_name, i) if ref_i in (None, i) else ratio(v, r)
    return (label, fmt(v), f"{ref_label}: {fmt(r)}", f"**{rfmt(q, digits)}**{cifmt(q, digits)}", name)


def r50(name, key, ref_key, ref_name=None, i=0):
    return rci(name, key, ref_key, ref_name, i)


def below_one(ratios, lead=False):
    """A note when a Synapse row came out under its bare reference."""
    if not any(r is not None and r < 0.98 for r in ratios):
        return ""
    note = ("a ratio below 1 means this run's spread between rounds is larger than any difference, "
            "not that Synapse is faster than the bare loop")
    return f" ({note})" if lead else f"; {note}"


def says(r, target=None, digits=3, at_least=False):
    """'1.031 × (target ≤ 1.02: not met)'"""
    if r is None:
        return "(not measured)"
    s = f"{r:.{digits}f} ×"
    ci = getattr(r, "ci", None)
    if ci:
        s += f" (95 % over the rounds {ci[0]:.{digits}f}-{ci[1]:.{digits}f})"
    if target is not None:
        ok = r >= target if at_least else r <= target
        # An interval that spans the target has not shown which side the ratio is on.
        if ci and ci[0] <= target <= ci[1]:
            state = "not resolved"
        else:
            state = "met" if ok else "not met"
        s += f" (target {'≥' if at_least else '≤'} {target}: {state})"
    return s


# ---- the file --------------------------------------------------------------

machine = {}
try:
    with open(os.path.join(logs, "machine")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition(" ")
            machine[k] = v
except OSError:
    pass

regen = "benches/run-all.sh" + (" --quick" if mode == "quick" else "")

p("# Synapse benchmarks")
p()
p("What the measurement costs, measured rather than guessed. One table per question; each row")
p("gives the median over the run's rounds, its reference measured in the same run (alternating")
p("with it), their ratio, the commit and the command. No absolute time here carries over to")
p("another machine or another run: read the ratios. The history of these figures is in git")
p("(`git log -p BENCHMARKS.md`), not in this file.")
p()
p("| | |")
p("|---|---|")
hv = machine.get("hypervisor", "").strip()
p(f"| machine | `nproc` {machine.get('nproc', '?')}, {machine.get('cpu', '?')}, "
  f"{machine.get('memory', '?')}, virtualization: {machine.get('virt', '?')}"
  + (f" (hypervisor: {hv})" if hv else "") + " |")
p(f"| kernel | {machine.get('kernel', '?')}, clocksource `{machine.get('clocksource', '?')}` |")
p(f"| toolchain | {machine.get('rustc', '?')}, release profile (`lto = \"fat\"`, `codegen-units = 1`) |")
floor = []
_c = run("blocking").get("c-block")
if _c:
    floor.append(f"bare C blocking ping-pong p50 {ns(_c)} (§1)")
_c = run("instrument").get("bare")
if _c:
    floor.append(f"busy-poll {ns(_c)} (§2)")
_c = run("calibrate").get("wakeup_cross_core_ns", 1)
if _c:
    floor.append(f"a cross-core wake-up {ns(_c)} (§10, C)")
if floor:
    p(f"| this run's floor | {', '.join(floor)} |")
p(f"| run | `{regen}` ({'quick: fewer rounds, shorter runs' if mode == 'quick' else 'full'}), "
  f"{minutes} min, at `{commit}` |")
# Sections rerun alone after the whole run say so here, and in their rows.
_later = {}
for _f in sorted(glob.glob(os.path.join(logs, "*.commit"))):
    _at = open(_f).read().strip()
    if _at and _at != commit:
        _later.setdefault(_at, []).append(os.path.basename(_f)[: -len(".commit")])
if _later:
    p("| rerun alone since | " + "; ".join(f"{', '.join(n)} at `{c}`" for c, n in _later.items()) + " |")
p()
p(f"Regenerate the whole file with `{regen}`, alone on the machine (on the shared development VM,")
p(f"under its lock: `flock /work/.cargo-lock {regen}`); `--quick` runs fewer rounds than the default. Every")
p("script's own output, round by round, is left in `target/bench-logs/`. Figures")
p("are p50 / p99 unless the row says otherwise; ratio is this row's median over the reference's,")
p("the p50 ratio in bold. Client and reflector are pinned to different CPUs throughout.")
p()

# 1. blocking ------------------------------------------------------------------
p("## 1. Round trip, blocking: Synapse against a bare C loop and sockperf")
p()
p("How much a default (blocking) Synapse round trip on loopback costs over the leanest blocking")
p("ping-pong C allows (`benches/pingpong_c`, `BLOCK=1`) and over sockperf, alternating, with the")
p("same pinning; and the engine against a `std::net` loop in one process (`benches/loopback.rs`).")
p()
B = "blocking"
table([
    pair_row("bare C client → bare C reflector, blocking", B, "c-block", "c-block", "bare C"),
    pair_row("Synapse client, defaults (kernel stamps) → bare C reflector", B, "syn-block", "c-block", "bare C"),
    pair_row("Synapse client, `--timestamps user` → bare C reflector", B, "syn-user", "c-block", "bare C"),
    pair_row("sockperf ping-pong `--full-rtt` → sockperf server", B, "sockperf", "c-block", "bare C"),
    pair_row("Synapse client, defaults, against sockperf", B, "syn-block", "sockperf", "sockperf"),
    pair_row("Synapse engine (user stamps), in process → Synapse reflector", "loopback", "blocking.user",
             "blocking.bare", "`std::net` loop"),
])
p(f"Reading: Synapse's default blocking p50 against the bare C loop "
  f"{says(r50(B, 'syn-block', 'c-block'), 1.02)}, against sockperf "
  f"{says(r50(B, 'syn-block', 'sockperf'), 0.98)}; the engine against the `std::net` loop "
  f"{says(r50('loopback', 'blocking.user', 'blocking.bare'))}. A blocking round trip here is two "
  "cross-core wake-ups, whose spread between rounds can be larger than these gaps (§14 counts the "
  "system calls, which do not vary)" + below_one(
      [r50(B, k, "c-block") for k in ("syn-block", "syn-user")]) + ".")
p()

# 2. busy-poll ---------------------------------------------------------------------
p("## 2. Round trip, busy-poll: what the instrument costs against a bare C loop")
p()
p("The same against the bare C spinning ping-pong (`recv(MSG_DONTWAIT)` spin client, `recvfrom` spin")
p("reflector), 100,000 packets a round, order reversed every other round.")
p()
I = "instrument"
table([
    pair_row("bare C client → bare C reflector", I, "bare", "bare", "bare C"),
    pair_row("bare C loop with RX software stamps made, never read (`cplain-0x18`)", I, "cplain-0x18", "bare", "bare C"),
    pair_row("Synapse client + reflector, defaults (kernel stamps, TX 1 in 256)", I, "syn-default", "bare", "bare C"),
    pair_row("the same, `--tx-stamp-every 1`", I, "syn-every1", "bare", "bare C"),
    pair_row("Synapse, `--timestamps user`", I, "syn-user", "bare", "bare C"),
    pair_row("bare C client → `synapse server`", I, "c-vs-syn", "bare", "bare C"),
    pair_row("Synapse client (`user`) → bare C reflector", I, "syn-vs-c", "bare", "bare C"),
    pair_row("Synapse client `--busy-poll`, defaults → C reflector, against the C loop with the same stamps",
             B, "syn-busy", "c-busy-stamps", "C, same stamps"),
    pair_row("Synapse engine (user stamps), in process, against the `std::net` loop", "loopback",
             "busy.user", "busy.bare", "`std::net` loop"),
])
p(f"Reading{below_one([r50(I, k, 'bare') for k in ('syn-default', 'syn-user', 'c-vs-syn', 'syn-vs-c', 'cplain-0x18')], lead=True)}: against the bare C loop, defaults {says(r50(I, 'syn-default', 'bare'), 1.05)}, `--timestamps user` "
  f"{says(r50(I, 'syn-user', 'bare'), 1.02)}, a bare client against Synapse's reflector "
  f"{says(r50(I, 'c-vs-syn', 'bare'), 1.02)}; the floor a loop with RX stamps on pays before any "
  f"work of its own is {says(r50(I, 'cplain-0x18', 'bare'))}. Earlier runs on this VM found busy-poll "
  "p50s bimodal (runs settle near one of two levels, for the bare loop too), so a few per cent either way "
  "can be the VM: every round is in `target/bench-logs/instrument.out`.")
p()

# 3. timestamps ------------------------------------------------------------------
p("## 3. Kernel timestamps on versus off")
p()
p("What the split costs: Synapse with kernel software stamps (the default, TX stamps on 1 packet in")
p("256) against the same with `--timestamps user`, in the same runs as §1 and §2.")
p()
L = "loopback"
table([
    pair_row("blocking, in process (`loopback.rs`)", L, "blocking.kernel", "blocking.user", "user stamps"),
    pair_row("busy-poll, in process (`loopback.rs`)", L, "busy.kernel", "busy.user", "user stamps"),
    pair_row("blocking, client → bare C reflector", B, "syn-block", "syn-user", "user stamps"),
    pair_row("busy-poll, defaults", I, "syn-default", "syn-user", "user stamps"),
    pair_row("busy-poll, `--tx-stamp-every 1` (every packet stamped)", I, "syn-every1", "syn-user", "user stamps"),
], reference="reference: `--timestamps user`")
p(f"Reading: stamps on/off, p50: busy-poll {says(r50(I, 'syn-default', 'syn-user'))} between processes "
  f"(every packet stamped: {says(r50(I, 'syn-every1', 'syn-user'))}) and "
  f"{says(r50(L, 'busy.kernel', 'busy.user'))} in process; blocking "
  f"{says(r50(B, 'syn-block', 'syn-user'))} and {says(r50(L, 'blocking.kernel', 'blocking.user'))}.")
p()

# 4. server log --------------------------------------------------------------------
p("## 4. The server's `--log` on versus off")
p()
p("What the reflector's per-answer log costs a ping-pong (with it the reflector stamps in the kernel")
p("both ways and reads its error queue after each answer): the in-process engine with a logging")
p("reflector against the same without, every answer checked logged.")
p()
table([
    pair_row("blocking, reflector logging", L, "blocking.log", "blocking.user", "no log"),
    pair_row("busy-poll, reflector logging", L, "busy.log", "busy.user", "no log"),
], reference="reference: no log")
p(f"Reading: logging against not, p50: {says(r50(L, 'busy.log', 'busy.user'))} under busy-poll, "
  f"{says(r50(L, 'blocking.log', 'blocking.user'))} blocking. The log is off by default.")
p()

# 5. sample path -------------------------------------------------------------------
p("## 5. The sample path: what a sample costs after the socket calls")
p()
p("The engine records into its histogram and pushes a record into the ring; the live view pops it")
p("and records it again (two pinned threads, 20 M samples a round), against one thread recording")
p("straight into an HdrHistogram; and `Stats::record` alone on one thread, per shape.")
p()
S = "sample_path"
sp = run(S)
def thr_row():
    v, r = sp.get("path.synapse_msps"), sp.get("path.bare_msps")
    if v is None:
        return ("ring hand-off path, M samples/s", None, None, sp.missing("path.synapse_msps"), S)
    return ("engine record + ring + live record, two threads (M samples/s)", num(v, " M/s"),
            f"one-thread histogram: {num(r, ' M/s')}", f"**{rfmt(ratio(v, r))}**", S)
table([
    thr_row(),
    one_row("`Stats::record`, ping-pong shape (ns/sample)", S, "record.pingpong_ns", "record.bare_ns",
            "bare histogram record", lambda v: num(v, " ns")),
    one_row("`Stats::record`, paced STAMP shape (ns/sample)", S, "record.paced_ns", "record.bare_ns",
            "bare histogram record", lambda v: num(v, " ns")),
])
pp_ns = sp.get("record.pingpong_ns")
bl = run(B).get("syn-block")
busy = run(I).get("syn-default")
extra = ""
if pp_ns and bl and busy:
    extra = (f"; a ping-pong sample's record is {100 * pp_ns / bl:.2f} % of this run's blocking round trip "
             f"(§1) and {100 * pp_ns / busy:.2f} % of a busy-poll one (§2)")
v = sp.get("path.synapse_msps")
p(f"Reading: the two-thread path does {num(v, ' M samples/s')} (target ≥ 10 M/s: "
  f"{'met' if v and v >= 10 else 'not met' if v else 'not measured'}){extra}. The two-thread figure "
  "has swung by several times between runs with the host's scheduling of the vCPUs; the engine's own "
  "histogram holds every sample regardless (the bench asserts it).")
p()

# 6. memory ------------------------------------------------------------------------
p("## 6. Memory over many packets")
p()
p("A busy-poll loopback run's resident set, sampled every second: does it stay flat once the ring")
p("and the histograms are touched?")
p()
R = "rss"
rs = run(R)
def kib(v):
    return "–" if v is None else f"{v / 1024:.2f} MiB"
sent, recv, p50, dur = (rs.get("run", i) for i in range(4))
table([
    one_row("RSS at the end of the run", R, "rss_kib.end", "rss_kib.at_2s", "RSS at 2 s", kib),
    one_row("largest RSS sampled", R, "rss_kib.max", "rss_kib.at_2s", "RSS at 2 s", kib),
])
if sent is not None:
    p(f"Reading: {sent:,.0f} packets in {dur:.1f} s, {sent - recv:,.0f} lost, p50 {ns(p50)}; the "
      f"resident set ends at {kib(rs.get('rss_kib.end'))}, against a budget of 32 MiB "
      f"({rfmt(ratio(rs.get('rss_kib.end'), 32 * 1024), 2)} of it).")
else:
    p(f"Reading: {rs.missing('run')}.")
p()

# 7. UI --------------------------------------------------------------------------------
p("## 7. What the live display costs")
p()
p("`synapse` with its live display drawing at 30 fps in a 120×36 tmux terminal, against")
p("`synapse --no-ui`, alternating; the display's figures are read from the summary it prints on")
p("quit (0.1 µs resolution).")
p()
table([
    pair_row("blocking, 30,000 packets a round", "ui_blocking", "tui", "noui", "`--no-ui`"),
    pair_row("busy-poll, 100,000 packets a round", "ui_busy", "tui", "noui", "`--no-ui`"),
], reference="reference: `--no-ui`")
p(f"Reading: TUI against `--no-ui`, p50: blocking {says(r50('ui_blocking', 'tui', 'noui'), 1.05)}, "
  f"busy-poll {says(r50('ui_busy', 'tui', 'noui'), 1.05)}. The display never runs on the measuring "
  "thread; under busy-poll on two cores its frames and tmux's must still preempt a spinning thread.")
p()

# 8. schedule -------------------------------------------------------------------------
p("## 8. Paced mode: the schedule against irtt")
p()
p("Each tool's client on CPU 1 and its own server on CPU 0, the same interval and duration, one")
p("run per row: slots missed (not sent by half-way to the next, irtt's rule), the mean send error")
p("(actual send − scheduled slot), and the client's CPU. irtt runs `--thread` with its default")
p("timer, then `--timer=busy` for the spinning rows; Synapse without, then with, `--busy-poll`.")
p()
Q = "schedule"
sq = run(Q)
labels = [("10ms", "10 ms"), ("1ms", "1 ms"), ("100us", "100 µs"),
          ("1ms-spin", "1 ms, spinning"), ("100us-spin", "100 µs, spinning")]
rows = []
for key, lab in labels:
    rows.append(one_row(f"slots missed, {lab} (%)", Q, f"{key}.synapse", f"{key}.irtt", "irtt",
                        lambda v: num(v, " %", 2), i=0))
for key, lab in labels:
    rows.append(one_row(f"send error mean, {lab} (µs)", Q, f"{key}.synapse", f"{key}.irtt", "irtt",
                        lambda v: num(v, " µs", 1), i=1))
for key, lab in labels[:3]:
    rows.append(one_row(f"client CPU, {lab} (% of a core)", Q, f"{key}.synapse", f"{key}.irtt", "irtt",
                        lambda v: num(v, " %", 1), i=4))
rows.append(one_row("RTT median, 1 ms (each against its own server)", Q, "1ms.synapse", "1ms.irtt",
                    "irtt", lambda v: num(v, " µs", 1), i=3))
table(rows, figure="Synapse", reference="reference: irtt, same run")
def stall(when):
    g50, g500, longest = (sq.get(f"stalls.{when}", i) for i in range(3))
    if g50 is None:
        return "not measured"
    return f"{g50:,.0f} gaps > 50 µs, {g500:,.0f} > 500 µs, longest {longest:,.0f} µs"
m1 = sq.get("1ms.synapse", 0)
e99 = sq.get("1ms.synapse", 5)
if m1 is None:
    p(f"Reading: {sq.missing('1ms.synapse')}.")
else:
  p(f"Reading: at 1 ms Synapse missed {num(m1, ' %', 2)} of its slots (target < 0.1 %) with a send-error "
  f"p99 of {num(e99, ' µs', 1)} (target < 20 µs); at 100 µs {num(sq.get('100us.synapse', 0), ' %', 2)} "
  f"(target < 1 %). A missed 1 ms slot is a wake-up over 500 µs late: the machine's own stalls, a C "
  f"loop spinning on CPU 1 for the same time, were before the rows {stall('before')}, after them "
  f"{stall('after')}. irtt's spinning timer starves its own receiver, so its spinning RTTs compare "
  "only the timer.")
p()

# 9. agent ---------------------------------------------------------------------------
p("## 9. The agent with 1,000 peers")
p()
p("One `synapse agent` probing 1,000 loopback peers at 10 probes/s each (10,000 probes/s): its")
p("prober's CPU against a bare C prober doing the least the same job needs")
p("(`benches/prober_c`, the same 1 ms tick, against a C epoll echo on 1,000 ports), alternating;")
p("its own reflector while it probes, against an idle `synapse server`; and its memory and")
p("`/metrics` against a Python echo, against the targets of its issue (no same-run reference).")
p()
A, F, AR = "agent_vs_c", "agent_fleet", "agent_reflector"
af = run(F)
pct = lambda v: num(v, " %", 2)
def target_row(label, key, target, fmt, tlabel, i=0):
    v = af.get(key, i)
    if v is None:
        return (label, None, None, af.missing(key), F)
    return (label, fmt(v), f"target: {tlabel}", rfmt(ratio(v, target), 2) + " of target", F)
table([
    one_row("prober CPU, C prober, no stamps (% of a core)", A, "c", "c", "C, no stamps", pct),
    one_row("prober CPU, `synapse agent` defaults (kernel stamps)", A, "syn", "c-stamps", "C, same stamps", pct),
    one_row("prober CPU, `synapse agent --timestamps user`", A, "user", "c", "C, no stamps", pct),
    one_row("prober CPU, C prober with Synapse's stamps", A, "c-stamps", "c", "C, no stamps", pct),
    one_row("prober CPU, C prober, one `recvmmsg` per wake-up", A, "c-mmsg", "c", "C, no stamps", pct),
    pair_row("ping-pong against the busy agent's reflector, blocking", AR, "busy", "idle", "idle `synapse server`"),
    target_row("prober thread CPU (Python echo)", "prober_cpu_pct", 10, pct, "10 %"),
    target_row("memory per peer", "mem_per_peer_kib", 64, lambda v: num(v, " KiB", 1), "64 KiB"),
    target_row("`/metrics` OpenMetrics text render (median of 20 scrapes)", "text", 50,
               lambda v: num(v, " ms", 1), "50 ms"),
    target_row("`/metrics` protobuf render (median of 20 scrapes)", "proto", 50,
               lambda v: num(v, " ms", 1), "50 ms"),
])
sent_, lost_ = af.get("probes", 0), af.get("probes", 1)
tb = af.get("text", 1)
loss = f"; probes lost to the Python echo: {lost_:,.0f} of {sent_:,.0f}" if sent_ else ""
size = f"; the text form is {tb / 1e6:.1f} MB" if tb else ""
cfloor = run(A).get("c")
p(f"Reading: the agent's prober CPU against the bare C prober with the same stamps "
  f"{says(r50(A, 'syn', 'c-stamps'), digits=2)}, without stamps {says(r50(A, 'user', 'c'), digits=2)}; "
  + (f"the C loop alone costs {num(cfloor, ' %', 1)} of a core here, so the 10 % target is "
     f"{'below what any loop sending one request per peer per slot reaches on this VM' if cfloor > 10 else 'within reach of the C loop'}. "
     if cfloor else "") +
  f"A ping-pong against the busy agent's reflector, against an idle server's: p50 "
  f"{says(r50(AR, 'busy', 'idle'), digits=2)}{size}{loss}.")
p()

# 10. calibrate --------------------------------------------------------------------------
p("## 10. `synapse calibrate` against independent C measurements")
p()
p("`synapse calibrate --json` against two small C programs (`benches/floor_c`): a `getpid` loop,")
p("and a pipe ping-pong between two processes on one CPU and across two; alternating rounds.")
p()
C = "calibrate"
cr = run(C)
cal = []
for key, lab in [("syscall_ns", "`syscall_ns` (a system call)"),
                 ("context_switch_same_core_ns", "`context_switch_same_core_ns`"),
                 ("wakeup_cross_core_ns", "`wakeup_cross_core_ns`")]:
    v, r = cr.get(key, 0), cr.get(key, 1)
    if v is None:
        cal.append((lab, None, None, cr.missing(key), C))
    else:
        cal.append((lab, ns(v), f"C: {ns(r)}", f"**{rfmt(ratio(v, r), 2)}**", C))
table(cal, figure="Synapse", reference="reference: C, same run")
rs_ = [ratio(cr.get(k, 0), cr.get(k, 1))
       for k in ("syscall_ns", "context_switch_same_core_ns", "wakeup_cross_core_ns")]
ok = [r for r in rs_ if r is not None]
p("Reading: " + (f"all three agree within {max(max(ok), 1 / min(ok)):.2f} × (the script fails beyond 2 ×)."
                 if ok else f"{cr.missing('syscall_ns')}."))
p()

# 11. limits --------------------------------------------------------------------------
p("## 11. The reflector's `--allow` and limits")
p()
p("What a datagram costs the reflector, answered or refused: a C generator sends 200,000 datagrams")
p("at 50,000/s to a blocking reflector on CPU 1, whose thread CPU is divided by the datagrams; and")
p("what the limits and an `--allow` list cost a busy-poll ping-pong (`--timestamps user`, 100,000")
p("packets, order A B C C B A).")
p()
M = "limits"
ml = run(M)
table([
    one_row("reflector CPU per datagram, answered (no limits)", M, "dgram.answered", "dgram.answered",
            "answered", lambda v: num(v, " ns", 0)),
    one_row("reflector CPU per datagram, refused: not in `--allow`", M, "dgram.allow", "dgram.answered",
            "answered", lambda v: num(v, " ns", 0)),
    one_row("reflector CPU per datagram, refused: rate (`--max-pps 1000`)", M, "dgram.rate", "dgram.answered",
            "answered", lambda v: num(v, " ns", 0)),
    pair_row("ping-pong against no limits (`--max-pps 0 --max-total-pps 0`)", M, "pp.no-limits", "pp.no-limits",
             "no limits"),
    pair_row("ping-pong against the default limits", M, "pp.defaults", "pp.no-limits", "no limits"),
    pair_row("ping-pong against the defaults + `--allow 10.0.0.0/8 --allow 127.0.0.1/32`", M, "pp.allow-list",
             "pp.no-limits", "no limits"),
])
ans = ml.get("dgram.rate", 1)
p(f"Reading: a refusal costs the reflector, against an answer, {says(r50(M, 'dgram.allow', 'dgram.answered'), digits=2)} "
  f"(not allowed) and {says(r50(M, 'dgram.rate', 'dgram.answered'), digits=2)} (rate): the receive, and the "
  f"`recvmmsg` try for more that follows every datagram since batching, are paid either way; the send is saved. The rate case answered {num(ans, '', 0)} datagrams (its burst of 256 "
  f"plus 1,000/s over the run). The ping-pong p50 against no limits: default limits "
  f"{says(r50(M, 'pp.defaults', 'pp.no-limits'))}, with the `--allow` list "
  f"{says(r50(M, 'pp.allow-list', 'pp.no-limits'))}.")
p()

# 12. STAMP authentication -----------------------------------------------------------
p("## 12. Authenticated STAMP")
p()
p("One request and its answer on one pinned thread (encode, reflect in place; authenticated: client")
p("sign, reflector verify, reflector sign, client verify), 1,000,000 exchanges a round, 5 rounds.")
p()
H = "stamp_hmac"
hm = run(H)
table([
    one_row("an authenticated exchange (4 HMAC-SHA-256)", H, "auth_ns", "open_ns", "unauthenticated",
            lambda v: num(v, " ns", 1), digits=1),
])
a_, o_ = hm.get("auth_ns"), hm.get("open_ns")
p("Reading: " + (f"one HMAC over 96 octets costs about {(a_ - o_) / 4:.0f} ns here; the reflector verifies "
                 f"and signs, about {(a_ - o_) / 2:.0f} ns per answer, the signing after T3 (so in the "
                 "network segment of the split, not the dwell)." if a_ and o_ else f"{hm.missing('auth_ns')}."))
p()

# 13. capacity ------------------------------------------------------------------------
p("## 13. Reflector capacity")
p()
p("An open-loop C generator (8 sources taking turns, UDP GSO, on CPU 0) offers a rate for 2 s to a")
p("busy-polling reflector on CPU 1: the bare C reflector and `synapse server` with its limits off,")
p("each twice per rate (C, Synapse, Synapse, C). Past saturation, answers per second is capacity.")
p()
K = "capacity"
kc = run(K)
rates = sorted({int(r[0]) for k in ("c", "synapse") for r in kc.results.get(k, [])})
def share(kind, rate):
    v = [float(r[1]) for r in kc.results.get(kind, []) if int(r[0]) == rate]
    return statistics.median(v) if v else None
def cap(kind):
    v = [float(r[2]) for r in kc.results.get(kind, []) if float(r[1]) < 99]
    return (statistics.median(v), len(v)) if v else (None, 0)
krows = []
for rate in rates:
    s, c = share("synapse", rate), share("c", rate)
    krows.append((f"share answered at {rate:,}/s offered", num(s, " %", 1), f"C reflector: {num(c, ' %', 1)}",
                  f"**{rfmt(ratio(s, c), 2)}**", K))
(sc, sn), (cc, cn) = cap("synapse"), cap("c")
if sc is not None and cc is not None:
    krows.append(("answers/s where saturated (< 99 % answered)", f"{sc:,.0f}/s ({sn} runs)",
                  f"C reflector: {cc:,.0f}/s ({cn} runs)", f"**{rfmt(ratio(sc, cc), 2)}**", K))
elif cc is not None:
    krows.append(("answers/s where saturated (< 99 % answered)", f"never saturated (≥ {rates[-1]:,}/s)",
                  f"C reflector: {cc:,.0f}/s", "> " + rfmt(ratio(rates[-1], cc), 2), K))
if not krows:
    krows.append(("reflector capacity", None, None, kc.missing("synapse"), K))
table(krows)
def onset(kind):
    below = [r for r in rates if share(kind, r) is not None and share(kind, r) < 99]
    above = [r for r in rates if share(kind, r) is not None and share(kind, r) >= 99]
    if not below:
        return f"none up to {rates[-1]:,}/s" if rates else "not measured"
    lo = max([r for r in above if r < min(below)], default=None)
    return f"between {lo:,} and {min(below):,}/s" if lo else f"below {min(below):,}/s"
p(f"Reading: capacity against the bare C loop {says(ratio(sc, cc), 1.5, 2, at_least=True) if sc and cc else '(not resolvable in this run)'}; "
  f"the batching reflector answers a burst with `recvmmsg` and one GSO `sendmmsg` per "
  f"source. Loss onset {onset('synapse')} for Synapse, {onset('c')} for the C loop. On loopback GSO "
  "also saves the receive path, which a real network puts on the far host. Capacity is the "
  "highest rate answered in one sweep of each, so this ratio has no rounds to give it an interval.")
p()

# 14. syscalls --------------------------------------------------------------------------
p("## 14. System calls per round trip")
p()
p("`strace -c -f` over two runs of different lengths, subtracted (start-up and report fall out),")
p("client against `synapse server` on loopback; failed calls (the `EAGAIN` that ends a spin or a")
p("drain) counted apart (a difference of two runs, so a failed count can also carry how the two runs")
p("differed). The reference is the bare blocking C client against the same server.")
p()
Y = "syscalls"
sy = run(Y)
srows = []
for key, lab in [("c-block", "bare C client, blocking"),
                 ("block", "ping-pong blocking, defaults"),
                 ("block-user", "ping-pong blocking, `--timestamps user`"),
                 ("block-every1", "ping-pong blocking, `--tx-stamp-every 1`"),
                 ("busy", "ping-pong busy-poll, defaults"),
                 ("paced-10ms", "paced `--interval 10ms`, defaults"),
                 ("paced-1ms", "paced `--interval 1ms`, defaults"),
                 ("paced-1ms-user", "paced `--interval 1ms`, `--timestamps user`"),
                 ("paced-100us", "paced `--interval 100us`, defaults")]:
    v, f = sy.get(key, 0), sy.get(key, 1)
    which = sy.results.get(key, [[None, None, ""]])[0]
    which = which[2].replace("_", " ") if len(which) > 2 else ""
    ref = sy.get("c-block", 0)
    if v is None:
        srows.append((lab, None, None, sy.missing(key), Y))
        continue
    # Failed calls are the paced loop's idle wake-ups: they follow the clock, so the
    # difference of two runs can come out below zero, a count no run made.
    failed = f"+{f:.2f} failed" if f >= 0 else "failed: varies with the timing"
    fig = f"{v:.2f} ({failed})" + (f": {which}" if which else "")
    if key == "c-block":
        srows.append((lab, fig, "(the reference)", "1", Y))
    else:
        srows.append((lab, fig, f"bare C: {num(ref, '', 2)}", f"**{rfmt(ratio(v, ref), 2)}**", Y))
table(srows, figure="successful calls per round trip")
p(f"Reading: a default blocking round trip makes {num(sy.get('block', 0), '', 2)} successful calls to the "
  f"C loop's {num(sy.get('c-block', 0), '', 2)} (a send and a receive); one packet in 256 adds the "
  "error-queue read of its TX stamps, and a paced loop adds the sleep to its slot. This count does not "
  "vary with the host's noise, as §1's times do.")
p()

# 15. STAMP TLVs --------------------------------------------------------------------------
p("## 15. The STAMP reflector with RFC 8972 TLVs on and off")
p()
p("An open-loop C flood (`benches/reflector_c/stamp_flood.c`, 8 sources, `sendmmsg`, on CPU 0) offers")
p("one 72-octet STAMP request for 2 s at up to 400,000/s to `synapse server`'s STAMP reflector (its")
p("thread on CPU 1, limits off), rounds alternating: *plain* is an RFC 8762 request zero-padded to 72")
p("(no TLV parsed); *tlvs* carries a Class of Service and a Follow-Up Telemetry TLV, so each answer is")
p("marked, asks the kernel for its TX stamp, and the next one carries that stamp. Answers per second")
p("of sending time; both kinds are offered more than the reflector answers.")
p()
T = "stamp_tlv"
table([one_row("answers/s, CoS + Follow-Up", T, "tlvs", "plain", "plain, same size",
               lambda v: f"{v:,.0f}/s")])
p(f"Reading: with CoS and Follow-Up on, the reflector answers {says(r50(T, 'tlvs', 'plain'), 0.9, at_least=True)} "
  "as many requests per second as without. The TLVs add a control message to each send (`IP_TOS`,")
p("`SO_TIMESTAMPING`), a TX stamp and its error-queue entry per answer, and an error-queue read (one")
p("`recvmmsg` for every stamp waiting) when a session's next request finds its stamp not in yet.")
p()

# 16. TCP round trip --------------------------------------------------------------------
p("## 16. TCP request/response: Synapse `--tcp` against a bare C loop and sockperf")
p()
p("`synapse client --tcp` (one connection, TCP_NODELAY, blocking) against the leanest blocking TCP")
p("ping-pong C allows (`benches/pingpong_c/tcp_client.c`: send, `recv` until the whole reply) and")
p("against `sockperf ping-pong --tcp --full-rtt` (round trips, not sockperf's default RTT/2, against")
p("its own server: it answers only its own messages), alternating, 14-byte requests, the same")
p("pinning; the others' reflector is a bare C echo (`tcp_reflector.c`: blocking `accept`, then blocking")
p("`recv` and `send` on its one connection, as sockperf's server serves its one). And `--connect-each`")
p("(a connection per transaction) against a bare C TCP_CRR loop (`tcp_crr.c`: socket, connect,")
p("request, response, close), transactions per second of measured time.")
p()
TV = "tcp"
tv = run(TV)
def tps_row(label, key, ref_key, ref_label, suffix=".tps"):
    v, r = tv.get(key + suffix), tv.get(ref_key + suffix)
    f = lambda x: f"{x:,.0f}/s"
    if v is None:
        return (label, None, None, tv.missing(key + suffix), TV)
    if key == ref_key:
        return (label, f(v), "(the reference)", "1", TV)
    if r is None:
        return (label, f(v), ref_label, tv.missing(ref_key + suffix), TV)
    return (label, f(v), f"{ref_label}: {f(r)}", f"**{rfmt(ratio(v, r))}**", TV)
# (label, key, reference, reference's label): the medians' table, then each
# configuration's lowest round under the same labels.
TCP_ROWS = [
    ("bare C TCP client → bare C TCP echo", "c-tcp", "c-tcp", "bare C"),
    ("Synapse client `--tcp`, defaults (kernel stamps) → bare C echo", "syn-tcp", "c-tcp", "bare C"),
    ("Synapse client `--tcp --timestamps user` → bare C echo", "syn-tcp-user", "c-tcp", "bare C"),
    ("sockperf ping-pong `--tcp --full-rtt` → sockperf server `--tcp`", "sockperf", "c-tcp", "bare C"),
    ("Synapse client `--tcp`, defaults, against sockperf", "syn-tcp", "sockperf", "sockperf"),
    ("Synapse client `--tcp --timestamps user` against sockperf", "syn-tcp-user", "sockperf", "sockperf"),
    ("bare C client with Synapse's RX stamps on (`0x898`), made and never read", "c-tcp-stamps", "c-tcp",
     "bare C"),
]
table([pair_row(label, TV, k, r, rl) for label, k, r, rl in TCP_ROWS] + [
    pair_row("Synapse client `--tcp`, defaults, against the C client with the same RX stamps", TV, "syn-tcp",
             "c-tcp-stamps", "C, same stamps"),
    pair_row("bare C client → the C echo with `EPOLL=1` (`epoll_wait` before each `recv`)", TV, "c-tcp-epoll",
             "c-tcp", "bare C"),
    tps_row("transactions/s, bare C TCP_CRR loop → bare C echo", "c-crr", "c-crr", "C TCP_CRR"),
    tps_row("transactions/s, Synapse `--tcp --connect-each` → bare C echo", "syn-crr", "c-crr", "C TCP_CRR"),
    pair_row("per transaction, Synapse `--connect-each` against the C TCP_CRR loop", TV, "syn-crr", "c-crr",
             "C TCP_CRR"),
])
p("A blocking run on this VM settles on one of a few wake-up levels (the same C loop measured 19.5 µs")
p("and 28 µs a second apart), so the rounds are many and short and the aims are judged on the medians")
p("above. Each configuration's lowest round (for transactions/s, its highest) is shown as well, not")
p("judged: a round may land below another configuration's lowest level.")
p()
table([pair_row(label, TV, k + ".best", r + ".best", rl) for label, k, r, rl in TCP_ROWS] + [
    tps_row("transactions/s, Synapse `--tcp --connect-each` against the C TCP_CRR loop", "syn-crr", "c-crr",
            "C TCP_CRR", suffix=".tps.best"),
], figure="lowest round")
p(f"Reading: Synapse's `--tcp` p50 (defaults: kernel stamps) against the bare C loop: median of rounds "
  f"{says(r50(TV, 'syn-tcp', 'c-tcp'), 1.03)}, lowest rounds {says(r50(TV, 'syn-tcp.best', 'c-tcp.best'))}. "
  f"Against sockperf's round trip, like with like (sockperf takes no kernel stamps; `--timestamps user` "
  f"takes none either): median {says(r50(TV, 'syn-tcp-user', 'sockperf'), 1.0)}, lowest rounds "
  f"{says(r50(TV, 'syn-tcp-user.best', 'sockperf.best'))}; with the defaults' kernel stamps: median "
  f"{says(r50(TV, 'syn-tcp', 'sockperf'))}, lowest {says(r50(TV, 'syn-tcp.best', 'sockperf.best'))}, where "
  f"the C loop pays {says(r50(TV, 'c-tcp-stamps.best', 'c-tcp.best'))} for the same RX stamps made and never "
  f"read (median {says(r50(TV, 'c-tcp-stamps', 'c-tcp'))}). `--connect-each` transactions/s against the C "
  f"TCP_CRR loop: median {says(r50(TV, 'syn-crr.tps', 'c-crr.tps'), 0.95, at_least=True)}, highest rounds "
  f"{says(r50(TV, 'syn-crr.tps.best', 'c-crr.tps.best'))}. "
  "Synapse's `--tcp` makes the C loop's system calls (a `sendto` and a `recvfrom` per round trip; one in 256 "
  "a `sendmsg` asking for TX stamps, a `recvmsg` with its RX stamp and the error-queue reads, and `TCP_INFO`); "
  "its blocking receive has a timeout (`SO_RCVTIMEO`), which arms a kernel timer in each wait the C loop's "
  "endless one does not (about 0.1 µs here); "
  "`--connect-each` adds two `setsockopt` per transaction to the C loop's socket, connect, "
  "`TCP_NODELAY`, send, recv, close (the blocking timeouts). A blocking TCP round trip here is two cross-core "
  "wake-ups plus the ACK work of both stacks" + below_one(
      [r50(TV, k, "c-tcp") for k in ("syn-tcp", "syn-tcp-user")]) + ".")
p()

# 17. TCP idle connections ---------------------------------------------------------------
p("## 17. The TCP echo with 1,000 idle connections")
p()
p("10 Synapse `--tcp` clients at once (blocking, defaults, all on CPU 0) against `synapse server`'s")
p("TCP echo (on CPU 1), alone and with 1,000 more connections open and silent (held by")
p("`benches/tcp_idle_holder.py`, each one checked served), a fresh server each time, alternating. A")
p("round's figure is the median of the 10 clients' p50 (and p99).")
p()
TI = "tcp_idle"
ti = run(TI)
idle_keys = sorted((k for k in ti.results if k.startswith("idle-") and k != "idle-0"),
                   key=lambda k: int(k[5:]))
ik = idle_keys[0] if idle_keys else "idle-1000"
table([
    pair_row("10 busy clients alone", TI, "idle-0", "idle-0", "alone"),
    pair_row(f"10 busy clients with {int(ik[5:]):,} idle connections", TI, ik, "idle-0", "alone"),
])
p(f"Reading: the busy clients' p50 with {int(ik[5:]):,} idle connections against alone "
  f"{says(r50(TI, ik, 'idle-0'), 1.05)}. The echo waits in `epoll`, which reports only the ready "
  "connections; the idle ones cost their entries and a once-a-second look for stalled writers.")
p()

# 18. compare: A/A false alarms -------------------------------------------------------------
p("## 18. `synapse compare` on A/A comparisons: how often it cries wolf")
p()
p("`benches/compare_aa.sh`: separate runs of one configuration (`synapse --no-ui`, its in-process")
p("reflector on loopback), compared one run a side (`compare A B`, each run in one pair) and three")
p("runs a side (`compare A1 A2 A3 -- B1 B2 B3`, no run in two comparisons), each with and without")
p("`--min-effect 10`, each judged with the assumed run-to-run spread and with this host's from")
p("`synapse calibrate`. Nothing differs between the sides: every *regression* is a false alarm. The")
p("interval is Clopper-Pearson's, 95 %; the aim is its upper end at most 5 %.")
p()
C = run("compare_aa")
rows = C.results.get("aa") or []
if rows:
    p("| comparison | spread between runs | margin | regression (false alarm) | 95 % interval | aim ≤ 5 % | figures called a regression | inconclusive | no regression | commit | command |")
    p("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        side, state, m, n, reg, inc, ok, low, high = r[:9]
        n, reg, inc, ok, low, high = int(n), int(reg), int(inc), int(ok), float(low), float(high)
        side = {"one": "one run a side", "three": "three runs a side"}.get(side, side)
        state = {"assumed": "assumed", "host": "this host's (calibrate)"}.get(state, state)
        margin = "none" if m == "none" else f"`--min-effect {m}`"
        aim = "met" if high <= 0.05 else "**not met**"
        # Which figures the false alarms were on (older logs lack the column).
        figs = r[9] if len(r) > 9 else "not logged"
        figs = "none" if figs == "-" else figs.replace(":", " ×").replace(",", ", ")
        p(f"| {side} | {state} | {margin} | **{reg} of {n}** | {100 * low:.1f}-{100 * high:.1f} % | "
          f"{aim} | {figs} | {inc} | {ok} | {C.commit} | {code(C.cmd)} |")
    p()
    met = [r for r in rows if float(r[8]) <= 0.05]
    worst = max(rows, key=lambda r: float(r[8]))
    p(f"Reading: {len(met)} of {len(rows)} modes meet the aim (the upper end of the false-alarm "
      f"interval at most 5 %); the widest upper end is {100 * float(worst[8]):.1f} % "
      f"({worst[0]} run{'s' if worst[0] == 'three' else ''} a side, {worst[1]} spread, "
      f"margin {worst[2]}). A pair that is not called a regression is *inconclusive* unless "
      "the interval lies inside the margin (*no regression*); nothing differed between the "
      "sides, so a *no regression* is right and an *inconclusive* is the method saying the "
      "runs cannot tell. The bench ran alone on the machine, under its lock: on a host whose "
      "load changes between the runs compared, the sides differ by that load and false alarms "
      "are more frequent (docs/compare.md).")
    p()
else:
    p(f"A/A: {C.missing('aa')}.")
    p()

# 19. fleet agent ------------------------------------------------------------------------
p("## 19. One agent of a fleet: `--fanout 20 --paths 8`")
p()
p("`benches/agent_fanout.sh`: one `synapse agent` with its peers from a peers file, `--fanout 20`")
p("(20 peers), `--paths 8` (each peer from 8 source ports in turn: 8 prober threads), labels on its")
p("series (`--series-label rack`), 10 probes/s a peer (200 probes/s, 25/s a path), against a C epoll")
p("echo on 20 ports; beside it, alternating, the bare C prober (`benches/prober_c`, Synapse's kernel")
p("stamps) sending the same 200 probes/s from one socket. CPU is the whole process's (every thread),")
p("RSS at the end of each round.")
p()
FA = "agent_fanout"
fa = run(FA)
def render_row(r, name):
    v = r.get("agent", 2)
    label = "`/metrics` text render (median of 20 scrapes)"
    if v is None:
        return (label, None, None, r.missing("agent"), name)
    return (label, num(v / 1000, " ms", 2), "target: 50 ms", rfmt(ratio(v, 50_000), 2) + " of target", name)
table([
    one_row("CPU, `synapse agent --fanout 20 --paths 8` (% of a core)", FA, "agent", "c", "C prober, same probes", pct),
    one_row("RSS", FA, "agent", "c", "C prober", lambda v: num(v / 1024, " MiB", 1), i=1),
    render_row(fa, FA),
])
series = fa.get("agent", 3)
p("Reading: " + (f"the agent costs {says(r50(FA, 'agent', 'c'), digits=2)} the C prober's CPU doing the same "
  f"probes; its `/metrics` holds {series:,.0f} series for 20 peers." if series else f"{fa.missing('agent')}."))
p()

# 20. instructions ------------------------------------------------------------------------
p("## 20. The instrument's own cost in instructions")
p()
p("`benches/instructions.sh`: user-space instructions under `valgrind --tool=callgrind")
p("--separate-threads=yes`, the release binary, blocking, the far side running natively; each")
p("configuration run for two lengths and the difference divided by the round trips between them, so")
p("start-up, warm-up and the report cancel (../shared/GUIDE.md §9). Client rows against the bare C")
p("reflector (`benches/pingpong_c`, `BLOCK=1`); reflector rows driven by the bare C client. An")
p("instruction count does not wobble: it resolves what §2's timings cannot. Busy-poll (`syn-busy`) is")
p("counted with its empty spins taken out: their number varies from run to run, each costs the same,")
p("so a second long run gives one spin's cost (its difference in instructions over its difference in")
p("system calls), and each run's spins are subtracted before the usual difference. Paced mode")
p("(`syn-paced`: `--interval 2ms --busy-poll --timestamps user`) is counted the same way, its second")
p("long run paced at 4 ms: the same requests with about twice the spins, so the two long runs differ")
p("by spins alone (sleeping, its waiter wakes a varying number of times before each slot under")
p("callgrind, and those wake-ups are not alike, as spins are). A request's own turns of the loop are")
p("counted with it: its send, and the turn that finds its reply, with the receive that then finds the")
p("socket empty (three system calls a request). Under callgrind the slowed loop skips a few slots (its")
p("misses, printed below; each a record, not a round trip), so its row repeats within about 2 %, not")
p("1 %; it is not gated in CI, whose tests run side by side (two spinning threads would starve them).")
p("The consumer (main) thread is counted as it drains the ring: its instructions less those of its")
p("calls to the end-of-run report (`Report::new`, `print_report`, their inclusive cost read from")
p("callgrind's call lines). The report's bootstrap follows the run's slices and distinct values, not")
p("its round trips, and under callgrind it differs by thousands of instructions a round trip from run")
p("to run; the drain itself varies by some per cent (it takes the ring in as many wake-ups as the")
p("timing gives). The measurement thread's count repeats within 1 % (to the instruction with")
p("`--timestamps user`; with kernel stamps the packets that ask for TX stamps are drawn at random, so")
p("a run's number of them varies).")
p("The last column is issue 38's table as filed (the landed tree then), for the trend.")
p()
p("**The bare C clients' rows changed meaning with `NOSORT` (after 0bed06e).** Before, they counted the C")
p("client's end-of-run sort of every RTT too (`qsort`, for its percentiles). A sort is O(n log n), so it")
p("does not cancel between the two lengths: of the 580-611 per round trip reported before (582 and")
p("609 in issue 38 as filed), some 470 were the sort (`msort_with_tmp` 243, `cmp` 104, its `memcpy`")
p("about 70 at 10,000 → 20,000), and the loop itself was about 140. The C clients now skip the sort")
p("for this count (`NOSORT=1`), so their rows are the loop alone. Synapse's measurement thread sorts")
p("nothing. Every ratio to a C client here is therefore several times what it was, for the same")
p("Synapse count, and issue 38's aims (≤ 1.3 × the C client, written as ≤ ~790 instructions when")
p("the C client was thought to cost ~609) are read against the loop alone.")
p()
IN = "instructions"
def ins(v):
    return "–" if v is None else f"{v:,.0f}"
# (label, config, thread, reference config, reference thread, reference label)
rows = [
    ("bare C client, send/recv, no stamps", "c-plain", "all", None, None, None),
    ("bare C client, RX software stamps read (`FLAGS=0x18`)", "c-rx", "all", None, None, None),
    ("bare C client doing the least an instrument must: `FLAGS=0x18`'s loop, plus the reply's sequence checked, the RX stamp read, the RTT into a log-bucket histogram, a 64-byte record into a lock-free ring (`instrument_floor.c`)", "c-floor", "all", "c-rx", "all", "C, RX stamps"),
    ("Synapse client, defaults: measurement thread", "syn-default", "t2", "c-rx", "all", "C, RX stamps"),
    ("Synapse client, defaults: consumer (main) thread, draining the ring (end-of-run report taken out)", "syn-default", "drain", None, None, None),
    ("Synapse client, `--timestamps user`: measurement thread", "syn-user", "t2", "c-plain", "all", "C, no stamps"),
    ("Synapse client, `--timestamps user`: consumer (main) thread, draining the ring (end-of-run report taken out)", "syn-user", "drain", None, None, None),
    ("Synapse client, `--busy-poll --timestamps user` (against the spinning C reflector, spins taken out): measurement thread", "syn-busy", "t2", "c-plain", "all", "C, no stamps"),
    ("Synapse client, paced, `--interval 2ms --busy-poll --timestamps user` (spins taken out): measurement thread, per request", "syn-paced", "t2", "c-plain", "all", "C ping-pong, no stamps"),
    ("Synapse client, `--stamp` (against `synapse server`): measurement thread", "syn-stamp", "t2", "c-rx", "all", "C, RX stamps"),
    ("bare C TCP client", "c-tcp", "all", None, None, None),
    ("Synapse client, `--tcp`: measurement thread", "syn-tcp", "t2", "c-tcp", "all", "C TCP client"),
    ("bare C reflector, per answer", "c-reflector", "all", None, None, None),
    ("`synapse server`, per answer, back-to-back requests (each waiting when it is received, under callgrind): all threads", "syn-server", "all", "c-reflector", "all", "C reflector"),
    ("`synapse server`, per answer, one request a millisecond (each waited for): all threads", "syn-server-paced", "all", "c-reflector", "all", "C reflector"),
    ("`synapse server`'s STAMP port, per answer: all threads", "syn-server-stamp", "all", "c-reflector", "all", "C reflector"),
]
ir = run(IN)
def ins_get(config, thread):
    for r in ir.results.get(config, []):
        if r and r[0] == thread:
            return float(r[1])
    return None
out_rows = []
for label, c, t, rc, rt, rl in rows:
    v = ins_get(c, t)
    if v is None:
        out_rows.append((label, None, None, ir.missing(c), IN))
        continue
    r = ins_get(rc, rt) if rc else None
    if rc is None:
        out_rows.append((label, ins(v), "", "", IN))
    elif r is None:
        out_rows.append((label, ins(v), rl, ir.missing(rc), IN))
    else:
        out_rows.append((label, ins(v), f"{rl}: {ins(r)}", f"**{rfmt(ratio(v, r), 2)}**", IN))
FILED = {"c-plain": 582, "c-rx": 609, "syn-default": 1411, "syn-server": 1674, "c-reflector": 36}
filed_rows = []
for (label, c, t, *_), r in zip(rows, out_rows):
    f = FILED.get(c) if t in ("all", "t2") else (202 if c == "syn-default" else None)
    filed_rows.append(r[:4] + (r[4], f"{f:,}" if f else "–"))
p("| measured | instructions per round trip | bare C, same run | ratio | commit | command | issue 38 as filed |")
p("|---|---|---|---|---|---|---|")
for label, fig, ref, rat, name, f in filed_rows:
    cmd, at = code(run(name).cmd), run(name).commit
    if fig is None:
        p(f"| {label} | {rat} | | | {at} | {cmd} | {f} |")
    else:
        p(f"| {label} | {fig} | {ref} | {rat} | {at} | {cmd} | {f} |")
p()
targets = [
    ("client defaults ≤ 1.3 × the C client with the same RX stamps", ratio(ins_get("syn-default", "t2"), ins_get("c-rx", "all")), 1.3),
    ("client `--timestamps user` ≤ 1.3 × the C client without stamps", ratio(ins_get("syn-user", "t2"), ins_get("c-plain", "all")), 1.3),
]
srv = ins_get("syn-server-paced", "all") or ins_get("syn-server", "all")
spin, spins = ins_get("syn-busy", "spin"), ins_get("syn-busy", "spins")
if spin is not None and spins is not None:
    p(f"Busy-poll: one empty spin (a receive that finds nothing, the stop flag and the deadline) costs "
      f"{spin:,.1f} instructions; the long run made {spins:,.2f} empty spins a round trip under "
      "callgrind, all taken out of its row.")
    p()
spin, spins = ins_get("syn-paced", "spin"), ins_get("syn-paced", "spins")
misses = next((r[1] for r in ir.results.get("syn-paced", []) if r and r[0] == "misses"), None)
if spin is not None and spins is not None:
    p(f"Paced: one empty turn of the loop (a receive that finds nothing, the clock, the next slot and "
      f"deadline looked at) costs {spin:,.1f} instructions; the long run made {spins:,.2f} a request, "
      "all taken out of its row" +
      (f"; the two long runs skipped {misses} slots (2 ms / 4 ms)." if misses else "."))
    p()
p("Against issue 38's aims: " + "; ".join(f"{l}: {says(r, t, 2)}" for l, r, t in targets) +
  (f"; `synapse server` ≤ 400 per answer: {srv:,.0f} ({'met' if srv <= 400 else 'not met'})." if srv else "."))
floor, rx, mine = ins_get("c-floor", "all"), ins_get("c-rx", "all"), ins_get("syn-default", "t2")
if floor and rx and mine:
    p()
    p(f"Where the aim can be reached: the least an instrument must add to the bare loop (the reply "
      f"matched to its request, its RX stamp read, the RTT into a histogram, a record into a ring), "
      f"written in bare C, costs {floor:,.0f} instructions a round trip, {floor / rx:.2f} × the loop "
      f"it extends: within 1.3 ×. Synapse's measurement thread, at {mine:,.0f}, is "
      f"{mine / floor:.1f} × that floor. What it does there beyond the floor is by design: the "
      "authoritative statistics (so that a full ring costs the live view but never the totals), "
      "the loss, late, duplicate and stray classification with its timeouts and outages, the "
      "jitter and order, the points a split needs, and the stop flag and deadline every wait "
      "checks. An instrument within 1.3 × would keep only the floor's work on this thread, and "
      "would need a ring that never drops a record to keep its totals whole. Taking the "
      "statistics alone off the thread would not reach it: with `Stats::record` left out of "
      "`Pinger::emit_now` (an experiment at 3eb2233, not kept: the run's totals were then "
      "missing), the thread counted 495 with defaults and 445 with `--timestamps user` (with it, "
      "689 and 637), 3.6 × and 4.1 × the C loops; the rest is the classification, the waits' "
      "stop and deadline checks, the stamped sample's points and the record.")
p()
# Issue 38's reductions step by step: one run of `benches/instructions.sh 10000 20000` before
# and after each (the serving or measurement thread, per round trip), on this machine.
STEPS = [
    ("receive headers built once; a `recv` resets only what the kernel wrote (`Batch::recv`)",
     "`synapse server`, back-to-back requests (batch path)", "1,697", "1,156"),
    ("send headers, buffers and control data written for the groups sent only, not zeroed for 32 (`Batch::send_groups`)",
     "the same", "1,156", "825"),
    ("per-peer tables (sessions, sources, STAMP counters) hashed by a keyed multiply-rotate, not SipHash",
     "`synapse server`'s STAMP port", "1,715", "1,497"),
    ("`release_held` and `TlvTally::reply` skipped at plan time when nothing can be held or tallied",
     "client defaults / `--timestamps user`", "1,532 / 1,520", "1,445 / 1,428"),
    ("the socket calls made through `syscall(2)`, not libc's wrappers, whose cancellation points cost "
     "`__pthread_enable/disable_asynccancel` around each (`sys::direct`); the per-packet log's row "
     "offered by reference, copied only when a log is kept (`Output::log_row`)",
     "client defaults / `--timestamps user`", "1,446 / 1,430", "1,294 / 1,277"),
    ("clock readings as integer nanoseconds of `CLOCK_MONOTONIC` (`Mono`), not `Instant` and its "
     "`timespec` arithmetic; the split not worked out on a run that cannot have one (plain echo, user "
     "stamps: `Split::NONE` at plan time); the duration budget's time taken only when there is one",
     "the same", "1,294 / 1,277", "1,116 / 1,050"),
    ("the same two (direct socket calls, `Mono` for the reflector's clock)",
     "`synapse server`, one request a millisecond / back-to-back requests", "788 / 828", "530 / 623"),
    ("`on_datagram` and `settle` always inlined into the wait (their prologues, epilogues and "
     "argument moves)",
     "client defaults / `--timestamps user`", "1,104 / 1,046", "1,079 / 1,028"),
    ("plain echo waits in one `recvmmsg` with `MSG_WAITFORONE` (the first datagram waited for, "
     "whatever is queued beside it taken in the same call) and answers a lone one with a `sendto` "
     "(`Batch::send_one`), not a `sendmmsg` header: no `EAGAIN` try after every answer (three "
     "system calls an answer to two, as the bare C loop makes); one clock read an answer, not two "
     "(the one that accounts an answer is the next admission's); the address compared as integers, "
     "not by `memcmp` (`RawAddr::same_as`)",
     "`synapse server`, one request a millisecond / back-to-back requests (all threads)",
     "530 / 622", "334 / 289"),
    ("the same two (one clock read, the integer compare); admission its own `Gate` beside the "
     "sessions, so the STAMP path no longer copies the 132-byte source address to admit it; the "
     "request decoded once (`stamp::reflect_decoded`), not again to answer it",
     "`synapse server`'s STAMP port (all threads)", "1,288", "1,107"),
    ("the previous peer's session found with one bounds check, its last-seen time written through "
     "the same reference (`Sessions::find`); a batch received without control data leaves its "
     "arrivals `None`, not rewritten for each datagram",
     "`synapse server`, one request a millisecond / back-to-back requests (all threads)",
     "338 / 290", "321 / 275"),
    ("admission and the session look-up always inlined (`#[inline(always)]` on `Gate::admit` and "
     "`Sessions::find`: the call's prologue and epilogue gone; the STAMP port's answer path, also "
     "inlined, then calls its packet encoder instead: 1,108 → 1,119 there)",
     "`synapse server`, one request a millisecond / back-to-back requests (all threads)",
     "320 / 275", "312 / 265"),
    ("`HdrCounts` (`synapse-stats`): `hdrhistogram`'s bucket layout, a record that is an index from "
     "the value's leading zeros and one increment (no bounds, minimum, maximum or total kept per "
     "value), the `Histogram` built from the counts when first read, so every read is the same; "
     "the RTT and the jitter's two series record into it (before: 948a3e9, rerun; with kernel "
     "stamps a run's TX-stamped packets are drawn at random, so it differs from the row above by a few)",
     "client defaults / `--timestamps user`", "1,085 / 1,028", "971 / 910"),
    ("`Stats::record` always inlined; the jitter pairs a sample with its two neighbours in turn, "
     "not in a loop, and takes |a − b| as `i64::abs_diff` (exact), not through `i128`",
     "the same", "971 / 910", "953 / 888"),
    ("the jitter's `add` and the direction's `record` always inlined into `Stats::record` (their "
     "calls' register saves cost more than their work on a run without reflector numbers)",
     "the same", "953 / 888", "943 / 876"),
    ("the reply decoded in place (`Codec::decode_into`): a plain echo reply writes its sequence "
     "number into the client's one `Reply`, not a whole `Reply` (its TLV report most of it) built "
     "and moved a datagram; the sequence tracker's highest answered number a plain integer, not an "
     "`Option` (before: f96b366, rerun)",
     "the same", "948 / 876", "804 / 734"),
    ("`HdrCounts` forgets a built histogram after a one-byte test (`ReadFlag`), not `OnceLock`'s "
     "check, which the compiler had left out of line; the breakdown called only for a packet of "
     "the stamped sample (checked in `Stats::record`, not inside the call)",
     "the same", "804 / 734", "767 / 719"),
    ("paced (counted from here): the reply decoded in place into its peer's own `Reply`; the TLV "
     "tally skipped at plan time without TLVs and the split where it is always none (as ping-pong "
     "does); the log row offered by reference (`Sink::row`), copied only by a sink that keeps a log; "
     "a request filed in an empty in-flight slot without the empty slot copied back "
     "(`InFlight::insert`); the schedule's two histograms `HdrCounts`, their record always inlined; "
     "an answered request settled where it lies in the in-flight ring, not copied out to be dropped "
     "(`settle_answered`); T1 and T4 the wall time of the loop's one monotonic read (`WallClock`), "
     "not a second clock read (before: 990f479, rerun; slots skipped under callgrind 169 / 104 "
     "before, 86 / 71 after)",
     "client paced, `--interval 2ms --busy-poll --timestamps user`, per request", "1,924", "1,384"),
    ("the consumer (counted from here, its end-of-run report taken out): a record's interval series "
     "found by comparing its name in place, not by formatting the name (a `String` allocated, "
     "written and freed per series a record); a series' histogram in a new interval made as big as "
     "the series' last one, not grown (its counts copied) a step at a time as values arrive; a "
     "record in the open interval placed without a division (before: fbf6eac, two runs each)",
     "client defaults / `--timestamps user`, consumer (main) thread draining the ring",
     "1,265 / 1,267", "684 / 718"),
    ("a plain echo's far side and class-of-service marks known to be none at plan time "
     "(`reflector_numbers`): `Points::far_side` and `marks_of` not called for each reply of a run "
     "that cannot have them (before: 3a1b4cc's run above)",
     "client defaults / `--timestamps user`", "770 / 714", "754 / 703"),
    ("a packet's points (its stamps and times, a few hundred bytes) reset and filled only where "
     "something reads them: a per-packet log, a held reply, STAMP, class of service (known at "
     "plan time), or a packet of the stamped sample, for its split; every other packet's are "
     "neither written nor read (before: 1ebf6ba)",
     "client defaults / `--timestamps user`", "753 / 703", "692 / 637"),
]
p("Issue 38's reductions, step by step (one run before and one after each, e26bf12 and on):")
p()
p("| step | measured (serving / measurement thread) | before | after |")
p("|---|---|---|---|")
for step, what, before, after in STEPS:
    p(f"| {step} | {what} | {before} | {after} |")
p()
p("Tried and not kept: each clock reading turned into nanoseconds since the epoch once, the wall")
p("time taken as the wall time at the epoch plus that (exact to the nanosecond): 1,445 → 1,451 and")
p("1,428 → 1,433, no gain, since `sub_timespec`'s 111 per round trip are not the wall-clock")
p("conversions. The record written in place in its ring slot (`write_chunk_uninit`, the statistics")
p("recorded from the slot, then the commit): the compiler still built it on the stack and copied it")
p("in (`memcpy` 29 per round trip before and after, then from `MaybeUninit::write`), so the `unsafe`")
p("commit it needs bought nothing. The reflector's admission alone always inlined (`#[inline(always)]`")
p("on `Gate::admit`, before the session look-up's fast path was one bounds check): 289 → 301 per")
p("answer back to back, as the compiler then left `Sessions::find` out of line instead.")
p("`HdrCounts::record` always inlined as well: 876 → 876 with")
p("`--timestamps user` (the compiler then called `OnceLock::take`, the check that no built")
p("histogram is left to forget, out of line instead).")
p()
prof = {}
for line in (read(IN, "out") or "").splitlines():
    parts = line.split(None, 4)
    if len(parts) == 5 and parts[0] == "profile":
        prof.setdefault((parts[1], parts[2]), []).append((float(parts[3]), parts[4]))
for (c, t), fns in prof.items():
    if c not in ("syn-default", "syn-server", "syn-server-paced"):
        continue
    who = {"syn-default": "the client's", "syn-server": "the reflector's",
           "syn-server-paced": "the paced reflector's"}[c]
    what = {"syn-default": "measurement thread", "syn-server": "serving thread",
            "syn-server-paced": "serving thread"}[c] if t != "main" else "consumer (main) thread"
    p(f"Where {who} {what} spends them (`{c}`, thread `{t}`; self instructions per round trip, "
      "the costliest functions, `benches/callgrind_diff.py`):")
    p()
    if t != "main":
        p("(The loop itself is inlined into its thread's entry: `__rust_begin_short_backtrace` in the")
        p("client, `Reflector::serve` in the reflector, with admission and the answer inlined into it.)")
        p()
    p("| per round trip | function |")
    p("|---|---|")
    for v, fn in fns:
        p(f"| {v:,.1f} | `{fn}` |")
    p()

p("Reading the maps (what the remaining instructions buy). Client: the loop")
p("(`__rust_begin_short_backtrace`, `on_datagram` and `settle` inlined into it) is the decode, the")
p("sequence tracker, the points (their reset a packet, ~26) and the record, and `settle` fetching")
p("the TX stamps; `emit_now` is `Stats::record`, inlined: the measurement thread's own statistics")
p("(the authoritative ones), the counters, the reply order and three `HdrCounts` records (the RTT")
p("and the jitter's two series, each an index from the value's leading zeros and one increment,")
p("about 11 instructions, where an `hdrhistogram` record was about 60; `OnceLock::take` is their")
p("check that no histogram built for a reader is left to forget), the jitter's pairing and")
p("RFC 3550 estimator, then the push into the ring; `memcpy` is the `Record` (160 bytes) pushed")
p("into the ring (the consumer pays it again popping it);")
p("`syscall` is the `send` and the `recv`, made directly (`sys::direct`: libc's wrappers are")
p("cancellation points, 62 instructions a round trip more); `clock_gettime` the two clock")
p("reads, as integer nanoseconds (`Mono`). Reflector (plain echo): the loop waits in one")
p("`recvmmsg` (`MSG_WAITFORONE`: the first datagram waited for, whatever is queued beside it taken")
p("in the same call) and answers a lone request with one `sendto` (`Batch::send_one`): `syscall` is")
p("those two, the bare C loop's two system calls. The loop (`Reflector::serve`, all inlined into")
p("it) is that receive's header read back and reset for the next, the answer's accounting")
p("(the totals, the session's packets, bytes and last-seen time, kept for the session reports,")
p("the metrics and the idle expiry), the one clock read an answer (`clock_gettime`; admission and")
p("the tick take the reading that accounted the previous answer), the tick's check, and admission")
p("(`Gate::admit`): the source-port and `--allow` checks, the session look-up (the previous")
p("peer's fast path: the address compared as integers, no hash) and the two rate buckets the")
p("defaults configure (`--max-pps` per source and `--max-total-pps`: a compare and an add each).")
p("Several requests queued together go back with one `sendmmsg` (`send_groups`). The STAMP port")
p("reads its control data (RX stamp, TTL, TOS: `recv_stamped_flags`), decodes and rewrites the")
p("test packet (`decode_as`, `write_head`, `WireTime`), keeps the sender's STAMP counters and")
p("reads the wall clock for T3. The paced row's other threads (about 45 an answer: the front end's")
p("and the idle STAMP port's wake-ups) follow the clock, not the answers: its long run lasts 10 s")
p("longer than its short one.")
p()

# 21. load -----------------------------------------------------------------------------
p("## 21. Latency under load: Synapse beside irtt under iperf3")
p()
p("One lab of network namespaces (C — R — S over veth, offloads off), a 10 Mbit/s token bucket on R's")
p("interface toward C, both tools' loads CUBIC with four streams (a loss-based sender fills a drop-tail")
p("queue to its limit whichever tool drives it). Synapse: `--load download --load-streams 4 --load-cc")
p("cubic`, its p50 inflation over its idle phases with its 95 % interval. irtt: every 10 ms idle, then")
p("under `iperf3 -R -P 4 -C cubic` over the same seconds of the load (4 to 8, as Synapse's phase")
p("measures its last ones), its median less its idle median. Alternating, one round per line of")
p("the log; the figure is the median over the rounds. Last: the probes' own cost, the first idle")
p("phase's p50 of a load run beside a plain run of the same probes (STAMP with Follow-Up, every")
p("10 ms) on the same path, no bucket, and what Follow-Up itself costs against a run without it.")
p()
Q = "load"
lq = run(Q)
ms = lambda v: num(v, " ms", 1)
rows = []
for q, lab in (("deep", "750 kB queue (600 ms at 10 Mbit/s)"), ("shallow", "20 kB queue (16 ms)")):
    rows.append(one_row(f"download p50 inflation, {lab}", Q, f"{q}.synapse", f"{q}.irtt",
                        "irtt under iperf3 -R", ms))
us = lambda v: num(v, " µs", 1)
rows.append(one_row("idle p50 of a load run's probes (µs)", Q, "idle.load", "idle.plain",
                    "the same probes in a plain run", us))
rows.append(one_row("a plain run's p50 with Follow-Up (the load's probes) (µs)", Q, "idle.plain",
                    "idle.nofu", "without Follow-Up", us))
table(rows, figure="Synapse", reference="reference: same lab, same run")
if not lq.why:
    for q in ("deep", "shallow"):
        lo, hi = lq.values(f"{q}.synapse", 1), lq.values(f"{q}.synapse", 2)
        s, i = lq.values(f"{q}.synapse", 0), lq.values(f"{q}.irtt", 0)
        gp, sh = lq.values(f"{q}.synapse", 3), lq.values(f"{q}.synapse", 4)
        if s and i:
            rounds = "; ".join(f"{a:.1f} [{l:.1f} to {h:.1f}] against {b:.1f}"
                               for a, l, h, b in zip(s, lo, hi, i))
            p(f"{q.capitalize()} queue, each round, Synapse's p50 inflation [its 95 % interval] against "
              f"irtt's, ms: {rounds}. Goodput {', '.join(f'{g:.2f}' for g in gp)} Mbit/s; the way back's "
              f"share of the added delay {', '.join(f'{x:.2f}' for x in sh)}.")
            p()
p("Reading: the two tools see one queue. Each round's Synapse interval is within the run (its")
p("probes' own noise); irtt gives no interval, and the queue a CUBIC load builds differs from run")
p("to run by a few per cent. The idle row is what the load's machinery (its conductor, its control")
p("connection, threads waiting) costs the probes when no byte of load flows: held to a plain run of")
p("the very same probes, both kept awake (a probe every 10 ms otherwise meets CPUs in idle states")
p("whose wake-up varies twofold between runs here). Comparing with a plain run without Follow-Up, and")
p("neither kept awake, an earlier table showed 1.418.")

# 22. multicast ------------------------------------------------------------------------
p("## 22. Multicast ping-pong with one responder: Synapse against sockperf")
p()
p("A client and one reflector on a bridge of network namespaces (`benches/multicast_vs_sockperf.sh`),")
p("the client pinned to CPU 0 and the reflector to CPU 1, blocking, alternating: `synapse client GROUP`")
p("→ `synapse server --join GROUP`, against `sockperf ping-pong -i GROUP --full-rtt` (round trips, not its")
p("default RTT/2) → `sockperf server -i GROUP`, which answers to the group (so it serves one responder),")
p("where Synapse's reflector answers to the sender's own address (so each of many is told apart), or")
p("with `--answer-to-group` to the group as sockperf's does (its client `--mc-join`ed to hear it). The")
p("bare C client (`benches/pingpong_c/mc_client.c`: `sendto` the group, blocking `recvfrom`) on Synapse's")
p("path, and a bare C reflector (`mc_reflector.c`) answering either way, say what the path costs")
p("apart from either tool; the last rows keep the CPUs out of idle states (`/dev/cpu_dma_latency` 0,")
p("as `--keep-awake`) for both tools.")
p()
MC = "multicast"
mc = run(MC)
MC_ROWS = [
    ("sockperf ping-pong `-i GROUP --full-rtt` → sockperf server (answers to the group)", "sockperf-mc",
     "sockperf-mc", "sockperf"),
    ("Synapse client `--mc-join` → `synapse server --join --answer-to-group` (answers to the group, as "
     "sockperf's server)", "syn-mc-group", "sockperf-mc", "sockperf"),
    ("Synapse client, defaults (kernel stamps) → `synapse server --join`", "syn-mc", "sockperf-mc", "sockperf"),
    ("Synapse client `--timestamps user` → `synapse server --join`", "syn-mc-user", "sockperf-mc", "sockperf"),
    ("bare C client → `synapse server --join` (Synapse's path, no Synapse client)", "c-mc", "sockperf-mc",
     "sockperf"),
    ("Synapse client, defaults, against the bare C client on the same path", "syn-mc", "c-mc", "bare C"),
    ("bare C client → bare C reflector answering to the sender's address", "c-uc-answer", "sockperf-mc",
     "sockperf"),
    ("bare C client → bare C reflector answering to the group", "c-group-answer", "sockperf-mc", "sockperf"),
    ("the answer's path alone: bare C to the sender's address against bare C to the group", "c-uc-answer",
     "c-group-answer", "to the group"),
    ("sockperf, CPUs kept out of idle states", "sockperf-mc-awake", "sockperf-mc-awake", "sockperf"),
    ("Synapse client `--keep-awake`, defaults, against sockperf kept awake", "syn-mc-awake",
     "sockperf-mc-awake", "sockperf, awake"),
]
table([pair_row(label, MC, k, r, rl) for label, k, r, rl in MC_ROWS])
_grp = r50(MC, "syn-mc-group", "sockperf-mc")
_mc = r50(MC, "syn-mc", "sockperf-mc")
_mc_c = r50(MC, "syn-mc", "c-mc")
_path = r50(MC, "c-uc-answer", "c-group-answer")
_awake = r50(MC, "syn-mc-awake", "sockperf-mc-awake")
if _mc is not None:
    p(f"Reading: on sockperf's path (the answer to the group), Synapse's multicast p50 against "
      f"sockperf's {says(_grp, 1.0)}. On its default path (each answer to the sender's own address, "
      f"which tells many responders apart) against sockperf's {says(_mc, 1.0)}; against the bare C "
      f"client on that path {says(_mc_c)}; the answer's path alone (a bare reflector answering to the "
      f"sender against one answering to the group) {says(_path)}; with the CPUs kept awake, Synapse "
      f"against sockperf {says(_awake, 1.0)}. On this VM a blocking round trip is two wake-ups of idle "
      "CPUs, and an answer to the sender's address comes back later than one to the group whichever "
      "program sends it (the bare C rows): the default path costs that, not Synapse's client, which "
      "costs what the bare C client costs on it.")
else:
    p(f"Reading: {mc.missing('syn-mc')}.")
p()

# not measured ---------------------------------------------------------------------------
p("## What is not measured here")
p()
hw = machine.get("hw_clock", "0").strip()
p("- Hardware (NIC) timestamps: " + ("no PTP hardware clock on this machine" if hw in ("", "0")
  else f"{hw} PTP clock(s) present but no script measures them") +
  ", so neither their cost nor the `SIOCSHWTSTAMP` path has run here.")
p("- Anything over a real network: loopback runs both stacks but no driver or wire; on loopback the")
p("  sender also pays the receiver's softirq, which a network moves to the far host.")
cyc = machine.get("perf_cycles", "")
if "not supported" in cyc or "not counted" in cyc or not cyc:
    p("- CPU cycles per round trip: `perf stat -e cycles` reports `<not supported>` in this VM, so the")
    p("  deterministic count offered here is §14's system calls, not cycles.")
else:
    p("- CPU cycles per round trip: `perf stat -e cycles` works here, but no script uses it yet.")
p("- qperf (not installed); sockperf is compared for the blocking round trips only (§1 UDP, §16 TCP,")
p("  §22 multicast),")
p("  irtt for the paced schedule only (§8). TCP with `--busy-poll`, and the TCP split's own cost")
p("  (kernel stamps on against off is in §16 only as `--timestamps user`), have no C reference here.")
p()

sys.stdout.write("\n".join(out))
