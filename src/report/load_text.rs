//! A load run's text report: a line per phase (its round trip, its
//! inflation over idle with 95 % intervals, goodput, RPM, loss), then each
//! loaded phase's stage split in a sentence, and the clocks.

use super::Report;
use super::load::{LoadReport, goodput_text, sentence};
use std::io::{self, Write};
use synapse_stats::load::figures::Percentiles;
use synapse_stats::load::{PhaseEnd, PhaseFigures};
use synapse_units::{format_bps, format_ns, signed_ns};

/// The load's section of the text report.
pub fn write_load(out: &mut impl Write, report: &Report, l: &LoadReport) -> io::Result<()> {
    write_header(out, report, l)?;
    writeln!(
        out,
        "  {:<14} {:<34} {:<38} {:<28} {:>7}  loss",
        "phase", "RTT p50 [95 % CI]", "inflation p50 [95 % CI]", "goodput", "RPM"
    )?;
    for p in l.phases() {
        write_phase_line(out, p)?;
    }
    writeln!(out)?;
    for p in l.phases().iter().filter(|p| p.name != "idle") {
        write_split(out, p)?;
    }
    write_clocks(out, l)?;
    writeln!(
        out,
        "RPM here is probe-based: the UDP probes' and the load connections' (tcpi_rtt) round trips, a 95 % trimmed mean each (IETF responsiveness draft), not networkQuality's HTTP and TLS measure."
    )?;
    if let Some(f) = &l.outcome.failure {
        writeln!(
            out,
            "The load was broken off: {f}; the phases above are what was measured before it."
        )?;
    }
    writeln!(out)
}

fn write_header(out: &mut impl Write, report: &Report, l: &LoadReport) -> io::Result<()> {
    let c = &report.config;
    let probes = match (c.protocol, c.interval_ns) {
        ("stamp", Some(i)) => format!("STAMP probes every {}", format_ns(i as f64)),
        (_, Some(i)) => format!("echo probes every {}", format_ns(i as f64)),
        _ => "probes".into(),
    };
    let g = &l.outcome.grant;
    writeln!(
        out,
        "Latency under load ({probes} to {}; bulk TCP with the reflector's load port {}, at most {} a session each way):",
        c.server,
        l.outcome.load_port,
        format_bps(g.rate_bps as f64)
    )
}

/// `98.4 ms [96.9 ms–100.1 ms]`, or the figure alone without an interval.
fn with_interval(p: &Percentiles, signed: bool) -> String {
    let f = p.p50();
    let show = |v: f64| if signed { signed_ns(v) } else { format_ns(v) };
    match (f.ci_low, f.ci_high) {
        (Some(lo), Some(hi)) => format!("{} [{} to {}]", show(f.ns), show(lo), show(hi)),
        _ => show(f.ns),
    }
}

fn write_phase_line(out: &mut impl Write, p: &PhaseFigures) -> io::Result<()> {
    let rtt = p
        .rtt_intervals_ns
        .as_ref()
        .map_or_else(|| "no replies".into(), |r| with_interval(r, false));
    let inflation = p
        .inflation_ns
        .as_ref()
        .map_or_else(String::new, |i| with_interval(i, true));
    let goodput = if p.name == "idle" {
        String::new()
    } else {
        goodput_text(p)
    };
    let rpm = p.rpm.map_or_else(String::new, |r| format!("{r:.0}"));
    let l = &p.loss;
    let loss = if l.sent == 0 {
        "—".to_string()
    } else {
        let pct = 100.0 * l.lost as f64 / l.sent as f64;
        let mut s = format!("{pct:.1} %");
        if l.forward + l.backward > 0 {
            s.push_str(&format!(" ({} there, {} back)", l.forward, l.backward));
        }
        s
    };
    writeln!(
        out,
        "  {:<14} {rtt:<34} {inflation:<38} {goodput:<28} {rpm:>7}  {loss}",
        p.name
    )
}

/// How a loaded phase ran, and where its added delay sits.
fn write_split(out: &mut impl Write, p: &PhaseFigures) -> io::Result<()> {
    let mut how = match &p.end {
        PhaseEnd::Stable => "goodput and latency stable".to_string(),
        PhaseEnd::Cap => "cut short by --load-phase".to_string(),
        PhaseEnd::Interrupted => "interrupted".to_string(),
        PhaseEnd::Failed(why) => format!("broken off: {why}"),
        PhaseEnd::Time => "ran its time".to_string(),
    };
    if let Some(c) = p.confidence {
        how.push_str(&format!(
            "; the IETF draft's confidence: goodput {}, latency {}",
            c.goodput.name(),
            c.latency.name()
        ));
    }
    if let Some((down, up)) = p.streams {
        how.push_str(&format!("; streams {down} down, {up} up"));
    }
    if let Some(cc) = &p.cc {
        how.push_str(&format!(", {cc}"));
    }
    let first = p.name[..1].to_uppercase() + &p.name[1..];
    writeln!(out, "{first} ({how}):")?;
    for (side, r) in [
        ("reflector's", p.retransmits.down),
        ("this host's", p.retransmits.up),
    ] {
        if let Some(r) = r {
            writeln!(
                out,
                "  retransmitted by the {side} senders: {} segments, {} bytes",
                r.segments, r.bytes
            )?;
        }
    }
    match sentence(p) {
        Some(s) => writeln!(out, "  {s}")?,
        None => writeln!(out, "  no added delay resolved")?,
    }
    if p.clock_step {
        writeln!(
            out,
            "  a step of the reflector's clock falls in this phase's span: forward and back are given together (network), as no offset enters their sum"
        )?;
    }
    if !p.stage_inflation_ns.is_empty() {
        let parts: Vec<String> = p
            .stage_inflation_ns
            .iter()
            .map(|(s, v)| format!("{} {}", s.key().replace('_', " "), signed_ns(*v)))
            .collect();
        writeln!(out, "  mean added per stage: {}", parts.join(" · "))?;
    }
    Ok(())
}

fn write_clocks(out: &mut impl Write, l: &LoadReport) -> io::Result<()> {
    let c = &l.outcome.figures.clock;
    let drift = c.drift_ppm.map_or_else(
        || "no drift estimate (fewer than two idle phases with one-way stamps)".into(),
        |d| {
            format!(
                "drift {} ppm from the idle phases, followed in every baseline",
                synapse_units::signed(d, 2)
            )
        },
    );
    let steps = match c.steps.as_slice() {
        [] => "no step".to_string(),
        s => s
            .iter()
            .map(|st| {
                format!(
                    "a step of {} (± {}) at {:.1} s",
                    signed_ns(st.size_ns as f64),
                    format_ns(st.bound_ns as f64),
                    st.at_ns.saturating_sub(l.outcome.origin_ns) as f64 / 1e9
                )
            })
            .collect::<Vec<_>>()
            .join(", "),
    };
    writeln!(out, "Clocks: {drift}; {steps}.")
}
