//! The text report a headless run prints: its set-up, packets and loss,
//! the RTT figures and their distribution, and the PASS/FAIL verdict.

use super::percentiles::Percentile;
use super::{BreakdownReport, LogSummary, Outcome, Report};
use std::io::{self, Write};
use synapse_stats::{DistributionBucket, RttFigures, Summary};
use synapse_units::{Scale, count_of, format_ns, format_ns_plain, format_rate, group_thousands};

const BAR_WIDTH: usize = 30;

/// ANSI colours, or nothing when colour is off.
struct Paint(bool);

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn green(&self, s: &str) -> String {
        self.wrap("32", s)
    }
    fn red(&self, s: &str) -> String {
        self.wrap("31", s)
    }
    fn cyan(&self, s: &str) -> String {
        self.wrap("36", s)
    }
}

/// Writes the text report. `color` adds ANSI colours (callers pass it only
/// for terminals without `NO_COLOR`).
pub fn write_text(out: &mut impl Write, report: &Report, color: bool) -> io::Result<()> {
    let paint = Paint(color);
    write_setup(out, report)?;
    if report.nothing_measured() {
        // No figures, so no verdict on them: say what happened.
        return writeln!(
            out,
            "Nothing was measured: the run was stopped before its first measured request (warm-up requests are not counted)."
        );
    }
    let ending = if report.interrupted {
        "Stopped"
    } else if report.gave_up.is_some() {
        "Gave up on a silent peer"
    } else {
        "Test completed"
    };
    write_packets(out, report, ending)?;
    if let Some(n) = report.unauthenticated_replies {
        writeln!(
            out,
            "          authenticated (HMAC-SHA-256): {} answers failed the check (never measured)",
            group_thousands(n)
        )?;
    }
    match &report.load {
        // A load run's figures are its phases': the whole run's would mix
        // idle and loaded probes.
        Some(l) => super::load_text::write_load(out, report, l)?,
        None => write_run_figures(out, report, &paint)?,
    }
    if let Some(log) = &report.log {
        write_log(out, log, &paint)?;
    }
    if let Some(h) = &report.hdr_log {
        writeln!(
            out,
            "Interval log: {} ({})",
            h.path.display(),
            count_of(h.intervals, "interval")
        )?;
        if let Some(e) = &h.error {
            writeln!(out, "{}", paint.red(&format!("  ✗ {e}")))?;
        }
        writeln!(out)?;
    }
    if let Some(b) = &report.baseline {
        write_baseline(out, report, b)?;
        writeln!(out)?;
    }
    write_verdict(out, report, &paint)
}

/// The whole run's figures: latency, timing, the split, TCP, the
/// distribution.
fn write_run_figures(out: &mut impl Write, report: &Report, paint: &Paint) -> io::Result<()> {
    let s = &report.summary;
    write_latency(out, s, &report.percentiles, &scale_of(s))?;
    if let Some(f) = &report.floor {
        writeln!(out, "Floor:   {}", f.sentence())?;
    }
    writeln!(out)?;
    super::timing_text::write_timing(out, s)?;
    super::extensions_text::write_extensions(out, report)?;
    if let Some(b) = &report.breakdown {
        write_breakdown(out, b, s.packets.received)?;
        writeln!(out)?;
    } else if let Some(note) = &report.config.timestamps_note {
        writeln!(out, "Timestamps: {note}")?;
        writeln!(out)?;
    }
    if let Some(t) = &report.tcp {
        super::tcp_text::write_tcp(out, t, s.packets.received)?;
    }
    if let Some(g) = &report.group {
        super::responders_text::write_group(out, g)?;
    }
    write_distribution(out, s, paint)?;
    writeln!(out)?;
    Ok(())
}

/// What `--log` wrote, and why it stopped if it did.
fn write_log(out: &mut impl Write, log: &LogSummary, paint: &Paint) -> io::Result<()> {
    let dropped = match (log.dropped, &log.error) {
        (0, _) => String::new(),
        (n, Some(_)) => format!("; {} not written", count_of(n, "packet")),
        (n, None) => format!(
            "; {} the writer could not keep up with",
            count_of(n, "packet")
        ),
    };
    writeln!(
        out,
        "Packet log: {} ({} whole{dropped})",
        log.path,
        count_of(log.rows, "row")
    )?;
    if let Some(e) = &log.error {
        writeln!(
            out,
            "{}",
            paint.red(&format!("  ✗ writing failed, so the run was ended: {e}"))
        )?;
    }
    writeln!(out)
}

/// The title, and what was measured how.
fn write_setup(out: &mut impl Write, report: &Report) -> io::Result<()> {
    let c = &report.config;
    writeln!(out, "┌─────────────────────────────┐")?;
    writeln!(out, "│  Synapse Results            │")?;
    writeln!(out, "└─────────────────────────────┘")?;
    writeln!(out)?;
    if report.interrupted {
        writeln!(
            out,
            "Interrupted: the figures cover what was measured before the stop."
        )?;
        writeln!(out)?;
    }
    // Whom the run measured: the reflector it started, or one elsewhere.
    let whom = if c.mode == "loopback" {
        "the in-process reflector on"
    } else if c.server.ip().is_multicast() {
        "the members of the group"
    } else {
        "the reflector at"
    };
    writeln!(
        out,
        "Target:   {whom} {}, from {}, {}-byte payload",
        c.server,
        super::local_text(c.local, c.settings.connect_each),
        c.size
    )?;
    writeln!(out, "Mode:     {}", super::timing_text::mode_line(c))?;
    writeln!(
        out,
        "Thread:   CPU {}{}, {}{}{}",
        c.cpu,
        if c.cpu_auto {
            " (auto; --cpu to choose)"
        } else {
            ""
        },
        if c.busy_poll { "busy-poll" } else { "blocking" },
        match (c.rt_requested, c.realtime) {
            (true, true) => ", SCHED_FIFO",
            (true, false) => ", SCHED_FIFO refused",
            _ => "",
        },
        match (c.settings.keep_awake, c.kept_awake) {
            (true, true) => ", CPUs kept awake",
            (true, false) => ", --keep-awake refused",
            _ => "",
        }
    )?;
    match (&c.profile, &c.config_file) {
        (Some(p), Some(f)) => writeln!(out, "Config:   profile '{p}' from {f}")?,
        (None, Some(f)) => writeln!(out, "Config:   {f} (no profile)")?,
        _ => writeln!(
            out,
            "Config:   none (built-in defaults and the command line)"
        )?,
    }
    writeln!(out)
}

/// Packet accounting, outages, duration and rate.
fn write_packets(out: &mut impl Write, report: &Report, ending: &str) -> io::Result<()> {
    let s = &report.summary;
    let p = &s.packets;
    writeln!(
        out,
        "Packets:  {} sent, {} lost ({:.2}%)",
        group_thousands(p.sent),
        group_thousands(p.lost),
        p.loss_percent()
    )?;
    writeln!(
        out,
        "          {} late, {} duplicate, {} reordered, {} stray",
        group_thousands(p.late),
        group_thousands(p.duplicate),
        group_thousands(p.reordered),
        group_thousands(p.stray)
    )?;
    // Which loss this is: RFC 7680 counts a request without a reply
    // within the waiting time as lost, whether or not one came later.
    let wait = format_ns_plain(report.config.settings.timeout.as_nanos() as u64);
    let unanswered = p.lost + p.late;
    if unanswered == 0 {
        writeln!(
            out,
            "          └─ no loss: every reply came within the {wait} timeout (RFC 7680)"
        )?;
    } else {
        let share = 100.0 * unanswered as f64 / p.sent.max(1) as f64;
        writeln!(
            out,
            "          └─ loss by RFC 7680 (no reply within the {wait} timeout; late replies too): {} of {}, {share:.2}%",
            group_thousands(unanswered),
            group_thousands(p.sent)
        )?;
    }
    if p.lost > 0 {
        writeln!(
            out,
            "          └─ Packet loss should be 0% for reliable measurements"
        )?;
    }
    let o = &s.outages;
    if o.count == 0 {
        writeln!(
            out,
            "Outages:  none (no two requests in a row went unanswered)"
        )?;
    } else {
        writeln!(
            out,
            "Outages:  {}, the longest {} ({}); {} without timely replies in all",
            group_thousands(o.count),
            format_ns(o.longest_ms * 1e6),
            count_of(o.longest_packets, "request"),
            format_ns(o.total_ms * 1e6)
        )?;
    }
    super::path_text::write_path_errors(out, report)?;
    writeln!(out)?;
    match (s.duration_s, s.rate_pps) {
        (Some(d), Some(rate)) => {
            writeln!(out, "Duration: {d:.2}s")?;
            writeln!(
                out,
                "          └─ {ending} at {} packets/second",
                format_rate(rate)
            )?;
        }
        // One request is a round trip, not a run: no length, no rate.
        _ => writeln!(
            out,
            "Duration: none from {} (no length or rate without two)",
            count_of(p.sent, "request")
        )?,
    }
    writeln!(out)
}

/// Every criterion, then the closing line: PASS (the seed's line when the
/// mean threshold was all there was to judge), FAIL with the criteria that
/// failed, INCONCLUSIVE, INTERRUPTED or RUN FAILED.
fn write_verdict(out: &mut impl Write, report: &Report, paint: &Paint) -> io::Result<()> {
    let v = &report.verdict;
    let scale = scale_of(&report.summary);
    writeln!(out, "Verdict:")?;
    for c in &v.criteria {
        let mark = match c.outcome {
            super::verdict::Held::Yes => paint.green("✓"),
            super::verdict::Held::No => paint.red("✗"),
            super::verdict::Held::Inconclusive => paint.cyan("?"),
        };
        writeln!(
            out,
            "  {mark} {}{}",
            c.describe_in(Some(&scale)),
            why(&c.metric)
        )?;
    }
    let line = closing_line(report);
    let line = match report.outcome() {
        Outcome::Pass => paint.green(&line),
        Outcome::Inconclusive => paint.cyan(&line),
        _ => paint.red(&line),
    };
    writeln!(out, "{line}")
}

/// What a criterion counts, where its name does not say.
fn why(metric: &str) -> &'static str {
    match metric {
        "loss" => "  (lost + late, of sent; --max-loss)",
        "outage" => "  (the longest; --max-outage)",
        _ => "",
    }
}

/// The last line of the report.
fn closing_line(report: &Report) -> String {
    let s = &report.summary;
    let v = &report.verdict;
    match report.outcome() {
        Outcome::RunFailed => format!(
            "✗ RUN FAILED: {}; the figures above are what was measured before it",
            report.run_failure().unwrap_or("a log could not be written")
        ),
        Outcome::Interrupted => format!(
            "■ INTERRUPTED{}{} ({} sent): not judged; the criteria above are what was measured before the stop",
            report
                .signal
                .map(|n| format!(" by {}", super::signal_name(n)))
                .unwrap_or_default(),
            s.duration_s
                .map(|d| format!(" after {d:.2} s"))
                .unwrap_or_default(),
            group_thousands(s.packets.sent)
        ),
        Outcome::Fail if s.packets.received == 0 => "✗ FAIL: no replies were received".into(),
        Outcome::Fail => {
            let failed: Vec<String> = v
                .failed()
                .map(|c| format!("{}{}", c.describe_in(Some(&scale_of(s))), why(&c.metric)))
                .collect();
            format!("✗ FAIL: {}", failed.join("; "))
        }
        Outcome::Inconclusive => {
            let open: Vec<String> = v.unsettled().map(|c| c.metric.clone()).collect();
            let exit = if report.inconclusive_fails {
                "counted as a failure (--fail-on-inconclusive)"
            } else {
                "exit 4"
            };
            format!(
                "? INCONCLUSIVE: neither a regression nor its absence shown for {}; {exit}",
                open.join(", ")
            )
        }
        Outcome::Pass => {
            let means: Vec<_> = v.criteria.iter().filter(|c| c.metric == "mean").collect();
            match (means.as_slice(), s.rtt_ns.as_ref(), v.criteria.len()) {
                // The original tool's line, in the report's own unit.
                ([c], Some(r), 3) => format!(
                    "✓ PASS: Mean latency ({}) is below {} threshold",
                    scale_of(s).format(r.mean),
                    format_ns_plain(c.limit as u64)
                ),
                (_, _, 0) => "✓ PASS: nothing was asked to be judged (a load run is judged by --max-inflation and --min-rpm)".into(),
                _ => "✓ PASS: every criterion held".into(),
            }
        }
    }
}

fn write_baseline(
    out: &mut impl Write,
    report: &Report,
    b: &crate::config::BaselineComparison,
) -> io::Result<()> {
    let name = report.config.profile.as_deref().unwrap_or("?");
    writeln!(
        out,
        "Against the baseline of profile '{name}' ({}):",
        b.baseline.date
    )?;
    if let Some(why) = &b.not_compared {
        writeln!(out, "  Not compared: {why}")?;
        return write_rule(out, b);
    }
    let Some(s) = report.summary.rtt_ns.as_ref() else {
        return Ok(());
    };
    let c = &b.change_percent;
    // A percentile resting on fewer than 10 replies beyond it is not
    // resolved: no change is shown for it.
    let resolved = |name: &str| {
        report
            .percentiles
            .iter()
            .find(|p| p.name == name)
            .is_none_or(|p| p.resolved)
    };
    for (label, name, then, now, change) in [
        ("P50", "p50", b.baseline.p50_ns, s.p50, c.p50),
        ("P99", "p99", b.baseline.p99_ns, s.p99, c.p99),
        ("P99.9", "p99.9", b.baseline.p999_ns, s.p999, c.p999),
    ] {
        let change = if resolved(name) {
            format!("{} %", synapse_units::signed(change, 1))
        } else {
            "not resolved in this run: no change shown".into()
        };
        writeln!(
            out,
            "  {:<8} {:>10} → {:>10}  ({change})",
            format!("{label}:"),
            format_ns(then as f64),
            format_ns(now as f64),
        )?;
    }
    writeln!(
        out,
        "  {:<8} {:>9.2}% → {:>9.2}%  ({} points)",
        "Loss:",
        b.baseline.loss_percent,
        report.summary.packets.loss_percent(),
        synapse_units::signed(b.loss_change_points, 2)
    )?;
    write_rule(out, b)
}

/// How `--fail-on-regression` judged the run, and the test's sentences.
fn write_rule(out: &mut impl Write, b: &crate::config::BaselineComparison) -> io::Result<()> {
    use crate::config::RegressionRule;
    let Some(rule) = b.rule else {
        return Ok(());
    };
    match (rule, &b.test, b.limit_percent) {
        (RegressionRule::Significance, Some(test), _) => {
            writeln!(
                out,
                "  --fail-on-regression, the test of synapse compare against the baseline's {}: {}",
                count_of(test.runs_a as u64, "stored run"),
                test.verdict.words()
            )?;
            return super::compare_text::write_comparison(out, test);
        }
        (RegressionRule::FixedPercent, _, Some(limit)) => {
            let v = if b.regressed { "regressed" } else { "within" };
            writeln!(
                out,
                "  --fail-on-regression (old rule): {v} the {limit} % limit on p50 and p99"
            )?;
        }
        _ => writeln!(out, "  --fail-on-regression: NOT CHECKED")?,
    }
    if let Some(note) = &b.rule_note {
        writeln!(out, "  Method: {note}")?;
    }
    Ok(())
}

fn write_breakdown(out: &mut impl Write, b: &BreakdownReport, replies: u64) -> io::Result<()> {
    writeln!(
        out,
        "Round-trip breakdown ({} timestamps{}, {}):",
        b.timestamps,
        b.interface
            .as_deref()
            .map(|i| format!(" on {i}"))
            .unwrap_or_default(),
        if b.protocol == "stamp" {
            "STAMP"
        } else {
            "plain echo"
        }
    )?;
    let opt = |v: Option<u64>| v.map_or_else(|| "-".into(), |ns| format_ns(ns as f64));
    writeln!(out, "  {:<20} {:>10} {:>10}   between", "", "P50", "P99")?;
    for seg in &b.segments {
        writeln!(
            out,
            "  {:<20} {:>10} {:>10}   {}{}",
            seg.label,
            opt(seg.p50_ns),
            opt(seg.p99_ns),
            seg.span,
            if seg.hardware { "  [hardware]" } else { "" }
        )?;
    }
    let gaps: Vec<String> = b
        .segments
        .iter()
        .filter(|s| s.missing > 0)
        .map(|s| format!("{} {}", s.label, group_thousands(s.missing)))
        .collect();
    if gaps.is_empty() {
        writeln!(out, "  Missing stamps: none")?;
    } else {
        writeln!(
            out,
            "  Missing stamps (of {} replies; never filled in from another clock): {}",
            group_thousands(replies),
            gaps.join(", ")
        )?;
    }
    let mut sources: Vec<(&str, Vec<&str>)> = Vec::new();
    for p in &b.points {
        match sources.iter_mut().find(|(s, _)| *s == p.source) {
            Some((_, points)) => points.push(p.point),
            None => sources.push((p.source, vec![p.point])),
        }
    }
    for (source, points) in sources {
        writeln!(out, "  {}: {source}", points.join(", "))?;
    }
    if let Some(note) = &b.note {
        writeln!(out, "  Note: {note}")?;
    }
    if b.tx_stamp_every > 1 {
        writeln!(
            out,
            "  Sampled: TX stamps on 1 packet in {} on average, drawn at random \
             (--tx-stamp-every); the split is theirs, the round-trip figures are every packet's",
            b.tx_stamp_every
        )?;
        if let Some(mean) = b.split_packets_rtt_mean_ns {
            writeln!(
                out,
                "  Mean RTT of the stamped packets: {} (of all: see above)",
                format_ns(mean)
            )?;
        }
    }
    if b.stale_tx_stamps > 0 {
        writeln!(
            out,
            "  {} TX stamps arrived after their packet was settled (not used)",
            group_thousands(b.stale_tx_stamps)
        )?;
    }
    write_nic_clock(out, b)
}

/// How the NIC's clock was placed on the system clock, and what of the
/// send path to the wire read below zero.
fn write_nic_clock(out: &mut impl Write, b: &BreakdownReport) -> io::Result<()> {
    if let Some(c) = &b.nic_clock {
        writeln!(
            out,
            "  NIC clock on the system clock: {} ten times a second ({} readings), window {} \
             (widest {}), rate {:+.3} ppm, {} steps absorbed, {} NIC stamps not placed",
            c.method,
            group_thousands(c.readings),
            format_ns(c.window_ns as f64),
            format_ns(c.window_max_ns as f64),
            c.rate_ppm,
            group_thousands(c.steps),
            group_thousands(c.unplaced)
        )?;
    }
    for s in &b.segments {
        if let Some(z) = s.below_zero.filter(|z| z.readings > 0) {
            writeln!(
                out,
                "  {}: {} readings below zero (down to −{}; the reading's error), kept: its \
                 percentiles read them as 0, its mean as they are",
                s.label.trim(),
                group_thousands(z.readings),
                format_ns(z.lowest_ns.unsigned_abs() as f64)
            )?;
        }
    }
    Ok(())
}

/// The report's one unit for round-trip figures, from its median.
fn scale_of(s: &Summary) -> Scale {
    Scale::for_figure(s.rtt_ns.as_ref().map_or(1e3, |r| r.p50 as f64))
}

fn write_latency(
    out: &mut impl Write,
    s: &Summary,
    percentiles: &[Percentile],
    scale: &Scale,
) -> io::Result<()> {
    writeln!(
        out,
        "Latency Statistics (round-trip time, over {} {}):",
        group_thousands(s.packets.received),
        if s.packets.received == 1 {
            "reply"
        } else {
            "replies"
        }
    )?;
    type Figure = fn(&RttFigures) -> f64;
    let rows: [(&str, Figure, &str); 4] = [
        ("Mean", |r| r.mean, "Average latency"),
        ("StdDev", |r| r.stddev, "Spread around the mean"),
        ("Min", |r| r.min as f64, "Fastest packet"),
        ("Max", |r| r.max as f64, "Slowest packet"),
    ];
    for (name, figure, note) in rows {
        let shown = s
            .rtt_ns
            .as_ref()
            .map_or_else(|| "—".to_string(), |r| scale.format(figure(r)));
        writeln!(out, "  {:<8} {shown:>10}  ← {note}", format!("{name}:"))?;
    }
    for p in percentiles {
        writeln!(out, "{}", percentile_line(p, scale))?;
    }
    if s.rtt_ns.is_none() {
        writeln!(out, "  (no replies, so no round-trip figures)")?;
        return Ok(());
    }
    if percentiles.iter().any(|p| p.ci_low_ns.is_some()) {
        writeln!(
            out,
            "  [brackets: 95 % within this run, a block bootstrap over its slices; runs differ by more]"
        )?;
    }
    let unanswered = s.packets.lost + s.packets.late;
    if unanswered > 0 {
        writeln!(
            out,
            "  {} without a timely reply are not in these figures (their delay is undefined, RFC 6703 §4); the thresholds count them as ≥ the timeout",
            count_of(unanswered, "request")
        )?;
    }
    Ok(())
}

/// `  P99:       45.3 µs  [41.0–52.0 µs]  ← 99% of packets …`, or the
/// same marked not resolved.
fn percentile_line(p: &Percentile, scale: &Scale) -> String {
    let label = format!("P{}:", &p.name[1..]);
    let note = match p.name {
        "p50" => "50% of packets are faster than this (median)".to_string(),
        n => format!("{}% of packets are faster than this", &n[1..]),
    };
    let value = scale.format(p.ns as f64);
    if !p.resolved {
        return format!(
            "  {label:<8} {value:>10}  not resolved: {} beyond it of {} (p{} needs {}+)",
            p.beyond,
            group_thousands(p.samples),
            &p.name[1..],
            group_thousands(min_samples(p.quantile))
        );
    }
    match (p.ci_low_ns, p.ci_high_ns) {
        (Some(lo), Some(hi)) => {
            let ci = format!("[{}–{}]", scale.format(lo), scale.format(hi));
            format!("  {label:<8} {value:>10}  {ci:<21} ← {note}")
        }
        _ => format!("  {label:<8} {value:>10}  ← {note}"),
    }
}

/// Replies needed for quantile `q` to have 10 beyond it.
fn min_samples(q: f64) -> u64 {
    (synapse_stats::significance::BEYOND as f64 / (1.0 - q)).round() as u64
}

/// `0-20 µs`, `1.5-2.0 ms`, `>10 ms`: both ends in the unit of the upper one.
fn range_label(b: &DistributionBucket) -> String {
    let (scale, unit) = match b.high_ns.unwrap_or(b.low_ns) {
        0..1_000 => (1.0, "ns"),
        1_000..1_000_000 => (1e3, "µs"),
        1_000_000..1_000_000_000 => (1e6, "ms"),
        _ => (1e9, "s"),
    };
    let fmt = |ns: u64| {
        let v = ns as f64 / scale;
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    match b.high_ns {
        Some(h) => format!("{}-{} {unit}", fmt(b.low_ns), fmt(h)),
        None => format!(">{} {unit}", fmt(b.low_ns)),
    }
}

fn write_distribution(out: &mut impl Write, s: &Summary, paint: &Paint) -> io::Result<()> {
    writeln!(
        out,
        "Latency Distribution (packet count by range, edges at the percentiles):"
    )?;
    let buckets = &s.distribution.buckets;
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    let Some(largest) = buckets.iter().map(|b| b.count).max().filter(|&m| m > 0) else {
        return writeln!(out, "  (no samples)");
    };
    for b in buckets {
        let share = 100.0 * b.count as f64 / total as f64;
        let len = (b.count as f64 / largest as f64 * BAR_WIDTH as f64).round() as usize;
        let bar = match (b.count, len) {
            (0, _) => String::new(),
            (_, 0) => "▌".to_string(),
            (_, n) => "█".repeat(n),
        };
        let bar = format!("{bar:<BAR_WIDTH$}");
        let bar = match share {
            s if s > 50.0 => paint.green(&bar),
            s if s > 10.0 => paint.cyan(&bar),
            _ => bar,
        };
        let pct = if share < 0.1 && b.count > 0 {
            "<0.1%".to_string()
        } else {
            format!("{share:.1}%")
        };
        let marks = if b.marks.is_empty() {
            String::new()
        } else {
            format!(" ← {}", b.marks.join(", "))
        };
        writeln!(
            out,
            "  {:>14}:  {bar} {pct:>6} ({:>17}){marks}",
            range_label(b),
            count_of(b.count, "packet")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ClientPlan, Target};
    use std::time::Duration;
    use synapse_engine::capabilities::Source;
    use synapse_engine::{ClientOutcome, Placement, StampingInfo, ThreadPlacement};
    use synapse_stats::{Record, RecordKind, SegmentSet, Split, Stats};

    /// A run of 1000 packets around 60 µs with a slow tail, 3 lost, one
    /// late, split by kernel stamps: the same report every time.
    fn report() -> Report {
        let segments = SegmentSet::for_run(true, false, false);
        let mut stats = Stats::with_segments(segments);
        for seq in 0..1000u64 {
            let rtt = 50_000 + (seq * 7919 % 20) * 1_000 + if seq % 100 == 0 { 400_000 } else { 0 };
            let split =
                Split::from_parts([Some(3_000), Some(rtt - 9_000), None, Some(6_000), None]);
            stats.record(&Record::sample(seq, seq * 100_000, rtt, false).with_split(split));
        }
        for seq in 1000..1003 {
            stats.record(&Record::event(RecordKind::Lost, seq, 0, false));
        }
        stats.record(&Record::event(
            RecordKind::Late { reordered: false },
            1000,
            0,
            false,
        ));
        let thread = ThreadPlacement {
            cpu: 1,
            cpu_auto: true,
            busy_poll: false,
            rt: false,
            keep_awake: false,
        };
        let mut plan = ClientPlan::of_defaults(Target::Remote("192.0.2.10:8080".parse().unwrap()));
        plan.packets = Some(1_003);
        plan.thread = thread;
        plan.reflector_thread = thread;
        let outcome = ClientOutcome {
            stats,
            measured: Duration::from_millis(1_250),
            placement: Placement::plain(1, true),
            interrupted: false,
            ring_overflow: 0,
            log_overflow: 0,
            stale_stamps: 0,
            unauthenticated: 0,
            extensions: None,
            stamping: StampingInfo {
                source: Source::Software,
                interface: Some("eth0".into()),
                segments,
                ..StampingInfo::default()
            },
            tcp: None,
            nic_clock: None,
            gave_up: None,
            group: None,
        };
        let server = "192.0.2.10:8080".parse().unwrap();
        Report::new(
            &plan,
            server,
            "192.0.2.1:40000".parse().unwrap(),
            &outcome,
            Vec::new(),
            None,
        )
    }

    #[test]
    fn the_text_report() {
        let mut out = Vec::new();
        write_text(&mut out, &report(), false).unwrap();
        insta::assert_snapshot!(String::from_utf8(out).unwrap());
    }

    #[test]
    fn range_labels_use_the_upper_bound_unit() {
        let b = |low, high| DistributionBucket {
            low_ns: low,
            high_ns: high,
            count: 1,
            marks: Vec::new(),
        };
        assert_eq!(range_label(&b(0, Some(20_000))), "0-20 µs");
        assert_eq!(range_label(&b(1_500_000, Some(2_000_000))), "1.5-2 ms");
        assert_eq!(range_label(&b(10_000_000, None)), ">10 ms");
        assert_eq!(range_label(&b(500, Some(600))), "500-600 ns");
    }
}
