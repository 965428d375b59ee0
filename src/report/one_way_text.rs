//! The text report's one-way section: the clocks' error, the delays
//! between each set of cut points (figures only where that error is
//! small against them), their jitter, and the clocks' offset, drift and
//! steps as read from the same stamps.

use super::jitter_text::jitter_line;
use std::io::{self, Write};
use synapse_stats::{CutPointFigures, DelayFigures, OffsetFigures, OneWayFigures, TRUST_RATIO};
use synapse_units::{format_ns, group_thousands};

/// What each set of cut points is, as the report names it.
const KERNEL: &str = "kernel cut points: T2 − T1 as the kernel (or NIC) sent it, T4 as the kernel received it − T3 (measured by Follow-Up when asked)";
const APPLICATION: &str =
    "application cut points: T2 − T1 before the send call, T4 after the receive − T3 as carried";

/// The whole section.
pub fn write_one_way(out: &mut impl Write, w: &OneWayFigures) -> io::Result<()> {
    writeln!(
        out,
        "One-way delay (STAMP; a figure is shown when the clocks' error is at most {:.0} % of its median):",
        TRUST_RATIO * 100.0
    )?;
    writeln!(out, "  Clocks:    {}", clocks_line(w))?;
    if let Some(why) = &w.untrusted_reason {
        writeln!(out, "  ⚠ {why}")?;
    }
    if let Some(k) = &w.kernel {
        writeln!(out, "  {KERNEL}:")?;
        write_legs(out, k, w.error_bound_ns)?;
    }
    writeln!(out, "  {APPLICATION}:")?;
    write_legs(out, &w.application, w.error_bound_ns)?;
    let (which, best) = match &w.kernel {
        Some(k) => ("kernel", k),
        None => ("application", &w.application),
    };
    if let Some(o) = &best.clocks {
        write_offset(out, o, which)?;
    }
    writeln!(out)
}

/// Whose clock says what, and the bound it puts on a delay.
fn clocks_line(w: &OneWayFigures) -> String {
    if w.same_clock {
        return "one clock (the reflector runs on this host): no clock error".into();
    }
    let e = &w.clock_errors;
    let side = |unsynced: u64, max: u64| {
        if unsynced > 0 {
            format!(
                "not synchronised (S=0 in {} of {})",
                group_thousands(unsynced),
                group_thousands(e.replies)
            )
        } else {
            format!("± {}", format_ns(max as f64))
        }
    };
    let total = match w.error_bound_ns {
        Some(b) => format!("a delay is right within ± {}", format_ns(b as f64)),
        None => "no bound on a delay".into(),
    };
    format!(
        "this host {}, the reflector {} (each end's STAMP error estimate): {total}",
        side(e.client_unsynchronized, e.client_max_ns),
        side(e.reflector_unsynchronized, e.reflector_max_ns),
    )
}

fn write_legs(out: &mut impl Write, c: &CutPointFigures, bound: Option<u64>) -> io::Result<()> {
    for (name, d) in [("Forward:", &c.forward), ("Backward:", &c.backward)] {
        writeln!(out, "    {name:<11}{}", leg_line(d, bound))?;
        if let Some(j) = &d.jitter {
            writeln!(out, "               jitter {}", jitter_line(j))?;
        }
    }
    Ok(())
}

/// A direction's delays when trusted (with their bound), else not: its
/// jitter, which a clock offset cancels out of, is shown either way.
fn leg_line(d: &DelayFigures, bound: Option<u64>) -> String {
    let n = group_thousands(d.samples);
    if d.trusted {
        let b = bound.map_or(String::new(), |b| format!("± {}, ", format_ns(b as f64)));
        format!(
            "P50 {}, P99 {} ({b}{n} samples)",
            delay(d.p50),
            delay(d.p99)
        )
    } else {
        format!("not shown ({n} samples)")
    }
}

/// The offset, its drift and its steps.
fn write_offset(out: &mut impl Write, o: &OffsetFigures, which: &str) -> io::Result<()> {
    writeln!(
        out,
        "  Offset:    reflector {} ± {} (the tightest exchange, at {:.1} s, {which} cut points; RFC 5905 §8)",
        offset_words(o.offset_ns),
        format_ns(o.bound_ns as f64),
        o.at_s
    )?;
    match &o.drift {
        Some(d) if d.resolved => writeln!(
            out,
            "  Drift:     {:+.2} ± {:.2} ppm (a line through {} points over {:.1} s)",
            d.ppm, d.interval_ppm, d.points, d.span_s
        )?,
        Some(d) => writeln!(
            out,
            "  Drift:     none resolved ({:+.2} ± {:.2} ppm spans 0)",
            d.ppm, d.interval_ppm
        )?,
        None => writeln!(out, "  Drift:     too few readings for a line")?,
    }
    for s in &o.steps {
        writeln!(
            out,
            "  Step:      at {:.1} s, {} ± {} → {} ± {}",
            s.at_s,
            signed(s.from_ns),
            format_ns(s.from_bound_ns as f64),
            signed(s.to_ns),
            format_ns(s.to_bound_ns as f64)
        )?;
    }
    if o.more_steps > 0 {
        writeln!(out, "  Steps:     {} more", group_thousands(o.more_steps))?;
    }
    Ok(())
}

fn offset_words(ns: i64) -> String {
    match ns {
        0 => "level with the client".to_string(),
        o if o > 0 => format!("{} ahead of the client", format_ns(o as f64)),
        o => format!("{} behind the client", format_ns(o.unsigned_abs() as f64)),
    }
}

fn signed(ns: i64) -> String {
    let sign = if ns < 0 { "−" } else { "+" };
    format!("{sign}{}", format_ns(ns.unsigned_abs() as f64))
}

/// A trusted one-way delay below zero is within its bound of zero: never
/// a negative figure.
fn delay(ns: i64) -> String {
    if ns < 0 {
        "< 0".to_string()
    } else {
        format_ns(ns as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use synapse_stats::{FarSide, Record, Stats, Summary};

    fn text(stats: &Stats) -> String {
        let s = Summary::from_stats(stats, Duration::from_secs(1));
        let mut out = Vec::new();
        write_one_way(&mut out, s.one_way_ns.as_ref().unwrap()).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn delays_across_unsynchronised_clocks_are_not_figures() {
        let mut stats = Stats::new().with_one_way(false);
        for seq in 0..10 {
            // The reflector's clock a second behind: forward reads −1 s.
            let far = FarSide::new(seq as u32)
                .with_application(Some(-1_000_000_000 + 400), Some(1_000_000_000 + 500))
                .with_errors(None, Some(1_000.0));
            stats.record(&Record::sample(seq, seq * 1_000, 1_000, false).with_far(far));
        }
        let text = text(&stats);
        assert!(
            text.contains("reflector's clock is not synchronised"),
            "{text}"
        );
        assert!(text.contains("Forward:   not shown (10 samples)"), "{text}");
        assert!(!text.contains("P50 −") && !text.contains("P50 <"), "{text}");
        assert!(
            text.contains("reflector 1.00 s behind the client ± 450 ns"),
            "{text}"
        );
        assert!(text.contains("no bound on a delay"), "{text}");
    }

    #[test]
    fn one_clock_shows_both_sets_of_cut_points_and_no_drift() {
        let mut stats = Stats::new().with_one_way(true);
        for seq in 0..400u64 {
            let q = (seq as i64 * 37) % 900;
            let far = FarSide::new(seq as u32)
                .with_application(Some(9_000 + q), Some(12_000))
                .with_kernel(Some(5_000 + q), Some(5_100))
                .with_errors(None, None);
            stats.record(&Record::sample(seq, seq * 10_000_000, 30_000, false).with_far(far));
        }
        let text = text(&stats);
        assert!(text.contains("one clock"), "{text}");
        assert!(
            text.contains(KERNEL) && text.contains(APPLICATION),
            "{text}"
        );
        assert!(text.contains("Forward:   P50 5."), "{text}");
        assert!(text.contains("Drift:     none resolved"), "{text}");
        assert!(text.contains("kernel cut points; RFC 5905"), "{text}");
        assert_eq!(delay(-5), "< 0");
    }
}
