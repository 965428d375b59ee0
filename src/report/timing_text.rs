//! The text report's timing sections beyond the RTT: how the send schedule
//! was kept (paced runs), jitter (labelled by what it is the jitter of),
//! one-way delays with the clocks they were read on, and loss by direction.

use super::EffectiveConfig;
use super::jitter_text::jitter_line;
use std::io::{self, Write};
use synapse_stats::Summary;
use synapse_units::{format_ns, group_thousands};

/// `ping-pong (one request in flight)` or `paced, periodic, every 1 ms`.
pub fn mode_line(c: &EffectiveConfig) -> String {
    if c.settings.transport == synapse_engine::Transport::Tcp {
        return if c.settings.connect_each {
            "TCP connect-request-response (a new connection per transaction, one at a time)".into()
        } else {
            "TCP request/response over one connection (one request in flight)".into()
        };
    }
    match c.interval_ns {
        None => {
            "ping-pong (one request in flight; the next when its reply or timeout comes)".into()
        }
        Some(ns) => format!(
            "paced, {} {} (requests leave on schedule, {})",
            c.pattern,
            if c.pattern == "poisson" {
                format!("gaps with a mean of {}", format_ns(ns as f64))
            } else {
                format!("every {}", format_ns(ns as f64))
            },
            // A group's answers are gathered until the next slot at most.
            if c.server.ip().is_multicast() {
                "one in flight, its answers until the next"
            } else {
                "many in flight"
            }
        ),
    }
}

/// Every section that has something to say.
pub fn write_timing(out: &mut impl Write, s: &Summary) -> io::Result<()> {
    write_schedule(out, s)?;
    if let Some(j) = &s.jitter_ns {
        writeln!(out, "Jitter of the RTT:")?;
        writeln!(out, "  {}", jitter_line(j))?;
        writeln!(out)?;
    }
    if let Some(w) = &s.one_way_ns {
        super::one_way_text::write_one_way(out, w)?;
    }
    if let Some(d) = &s.loss_direction {
        writeln!(
            out,
            "Loss by direction ({} reflector): {} forward (never reached it), {} backward (reply lost), {} unknown",
            d.reflector,
            group_thousands(d.forward),
            group_thousands(d.backward),
            group_thousands(d.unknown)
        )?;
        if d.reflector == "stateless" && d.unknown > 0 {
            writeln!(
                out,
                "  └─ a stateless reflector copies the sender's numbers, so losses cannot be placed"
            )?;
        }
        writeln!(out)?;
    } else if s.packets.lost > 0 {
        // Plain echo: the reply is the request, so nothing says which way
        // it went missing; say so rather than leave the reader to guess.
        writeln!(
            out,
            "Loss by direction: unknown for all {} (only STAMP replies from a stateful reflector tell the ways apart)",
            group_thousands(s.packets.lost)
        )?;
        writeln!(out)?;
    }
    Ok(())
}

fn write_schedule(out: &mut impl Write, s: &Summary) -> io::Result<()> {
    let Some(sch) = &s.schedule else {
        return Ok(());
    };
    let slots = s.packets.sent + sch.misses;
    writeln!(
        out,
        "Schedule ({}, {} {}):",
        sch.pattern.name(),
        if sch.pattern.name() == "poisson" {
            "mean gap"
        } else {
            "every"
        },
        format_ns(sch.interval_ns as f64)
    )?;
    let share = if slots == 0 {
        0.0
    } else {
        100.0 * sch.misses as f64 / slots as f64
    };
    writeln!(
        out,
        "  Missed slots:   {} of {} ({share:.2} %), skipped, never made up for",
        group_thousands(sch.misses),
        group_thousands(slots)
    )?;
    let three = |label: &str, [p50, p99, max]: [u64; 3], why: &str| {
        format!(
            "  {label:<16}P50 {}, P99 {}, max {}  ({why})",
            format_ns(p50 as f64),
            format_ns(p99 as f64),
            format_ns(max as f64)
        )
    };
    let error = [sch.error_p50_ns, sch.error_p99_ns, sch.error_max_ns];
    writeln!(out, "{}", three("Send error:", error, "sent − scheduled"))?;
    if let Some(r) = &s.rtt_from_schedule_ns {
        let why = "reply − scheduled send: a stalled sender shows here";
        writeln!(
            out,
            "{}",
            three("From schedule:", [r.p50, r.p99, r.max], why)
        )?;
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use synapse_stats::{FarSide, Record, RecordKind, Stats};

    fn text_of(stamp: bool) -> String {
        let mut stats = Stats::new();
        for seq in 0..10 {
            let r = Record::sample(seq, 0, 1_000, false);
            let far = FarSide::new(seq as u32).with_application(Some(500), Some(500));
            stats.record(&if stamp { r.with_far(far) } else { r });
        }
        stats.record(&Record::event(RecordKind::Lost, 10, 0, false));
        let last = Record::sample(11, 0, 1_000, false);
        let far = FarSide::new(10).with_application(Some(500), Some(500));
        stats.record(&if stamp { last.with_far(far) } else { last });
        let mut out = Vec::new();
        write_timing(
            &mut out,
            &Summary::from_stats(&stats, Duration::from_secs(1)),
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn plain_echo_says_the_direction_of_its_losses_is_unknown() {
        let text = text_of(false);
        assert!(
            text.contains("Loss by direction: unknown for all 1 "),
            "{text}"
        );
        let text = text_of(true);
        assert!(
            text.contains("1 forward (never reached it), 0 backward (reply lost), 0 unknown"),
            "{text}"
        );
    }
}
