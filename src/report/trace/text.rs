//! `synapse trace`'s text report: per path, a table of its hops and the
//! verdict in a sentence; over several ports, the tree first.

use super::{TraceReport, inconclusive_text};
use std::io::{self, Write};
use synapse_stats::trace::{AnswerKind, HopFigures, HopState, Proportion, TreePath, Verdict};
use synapse_units::{count_of, format_ns, format_rate};

/// A share as `30.0 %`.
fn pct(r: f64) -> String {
    format!("{:.1} %", r * 100.0)
}

/// A loss and its interval: `30.0 % [20.2–41.3 %]`.
pub fn loss_text(l: &Proportion) -> String {
    format!(
        "{} [{:.1}–{:.1} %]",
        pct(l.ratio),
        l.low * 100.0,
        l.high * 100.0
    )
}

/// What an ICMP unreachable code says, for the destination's family.
fn unreachable_text(code: u8, ipv6: bool) -> &'static str {
    match (ipv6, code) {
        (false, 0) | (true, 0) => "network unreachable (no route)",
        (false, 1) | (true, 3) => "host unreachable",
        (false, 3) | (true, 4) => "port unreachable",
        (false, 9 | 10 | 13) | (true, 1) => "administratively prohibited",
        (false, 2) => "protocol unreachable",
        _ => "unreachable",
    }
}

/// The note after a hop's figures: how it answered, what its loss means.
fn note(h: &HopFigures, ipv6: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    match h.kind {
        Some(AnswerKind::Echo) => parts.push("echo".into()),
        Some(AnswerKind::PortUnreachable) => parts.push("port unreachable".into()),
        Some(AnswerKind::Unreachable(c)) => parts.push(unreachable_text(c, ipv6).into()),
        Some(AnswerKind::TimeExceeded) | None => {}
    }
    match h.state {
        HopState::RateLimited => parts.push("ICMP rate-limited: not loss".into()),
        HopState::Lossy => parts.push("loss persists".into()),
        HopState::Silent => parts.push("no answer".into()),
        HopState::Clean => {}
    }
    if !h.mpls.is_empty() {
        let labels: Vec<String> = h.mpls.iter().map(|m| m.label.to_string()).collect();
        parts.push(format!("MPLS {}", labels.join(" ")));
    }
    parts.join("; ")
}

/// One path's table.
fn write_hops(out: &mut dyn Write, r: &TraceReport, path: &TreePath) -> io::Result<()> {
    let ipv6 = r.destination.is_ipv6();
    let names: Vec<String> = path
        .hops
        .iter()
        .map(|h| match h.addresses.split_first() {
            Some((first, [])) => r.addr_text(*first),
            Some((first, rest)) => format!("{} +{}", r.addr_text(*first), rest.len()),
            None => "*".into(),
        })
        .collect();
    let width = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(7);
    writeln!(
        out,
        " TTL  {:<width$}  Answered  Loss [95 % interval]      RTT p50       p90",
        "Address"
    )?;
    for (h, name) in path.hops.iter().zip(&names) {
        let answered = format!("{}/{}", h.answered, h.sent);
        let loss = h.loss.map_or_else(|| "-".into(), |l| loss_text(&l));
        let rtt = |v: Option<u64>| v.map_or_else(|| "-".into(), |ns| format_ns(ns as f64));
        let line = format!(
            " {:>3}  {name:<width$}  {answered:>8}  {loss:<24} {:>8}  {:>8}  {}",
            h.ttl,
            rtt(h.rtt_p50_ns),
            rtt(h.rtt_p90_ns),
            note(h, ipv6)
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// A path's verdict in a sentence.
pub fn verdict_text(r: &TraceReport, path: &TreePath) -> String {
    let ipv6 = r.destination.is_ipv6();
    match &path.verdict {
        Verdict::Suspect(s) => {
            let by = if path
                .hops
                .iter()
                .any(|h| h.ttl >= s.to.ttl && h.kind == Some(AnswerKind::Echo))
            {
                "confirmed by the destination's echo".to_string()
            } else {
                format!("shown by {} hops to the end", s.hops_showing)
            };
            format!(
                "Suspect link: {} → {}: {} lost, {by}",
                r.hop_text(s.from),
                r.hop_text(s.to),
                loss_text(&s.loss)
            )
        }
        Verdict::NoSuspect => {
            let end = path.hops.iter().rev().find(|h| h.answers());
            let at_end = end
                .and_then(|h| h.loss)
                .map(|l| format!(" ({} lost at the end)", loss_text(&l)))
                .unwrap_or_default();
            format!("No suspect: no loss persists to the destination{at_end}")
        }
        Verdict::Inconclusive(why) => {
            let candidate = match why {
                synapse_stats::trace::Inconclusive::Unconfirmed(s) => format!(
                    " Candidate: {} → {}, {} lost.",
                    r.hop_text(s.from),
                    r.hop_text(s.to),
                    loss_text(&s.loss)
                ),
                _ => String::new(),
            };
            format!("Inconclusive: {}.{candidate}", inconclusive_text(why))
        }
        Verdict::Unreachable(at, code) => format!(
            "Unreachable: {} says {}",
            r.hop_text(*at),
            unreachable_text(*code, ipv6)
        ),
    }
}

/// The whole report.
pub fn write_trace_text(out: &mut dyn Write, r: &TraceReport) -> io::Result<()> {
    writeln!(
        out,
        "Trace to {} from {} over UDP, {}, {} probes a hop, at most {}/s",
        r.destination,
        r.local.ip(),
        ports_text(&r.ports),
        r.probes,
        format_rate(r.rate),
    )?;
    let many = r.tree.paths.len() > 1 || r.ports.len() > 1;
    if many {
        writeln!(
            out,
            "ECMP tree: {} over {}",
            count_of(r.tree.paths.len() as u64, "distinct path"),
            count_of(r.ports.len() as u64, "port")
        )?;
    }
    for (i, path) in r.tree.paths.iter().enumerate() {
        writeln!(out)?;
        if many {
            let route: Vec<String> = path
                .hops
                .iter()
                .map(|h| {
                    h.addresses
                        .first()
                        .map_or_else(|| "*".into(), |a| r.addr_text(*a))
                })
                .collect();
            writeln!(
                out,
                "Path {}, {}: {}",
                i + 1,
                ports_text(&path.ports),
                route.join(" → ")
            )?;
        }
        write_hops(out, r, path)?;
        if r.interrupted {
            // Stopped before its probes were all sent: not judged.
            writeln!(
                out,
                "Not judged (interrupted); so far: {}",
                verdict_text(r, path)
            )?;
        } else {
            writeln!(out, "{}", verdict_text(r, path))?;
        }
    }
    if many {
        writeln!(out)?;
        write_tree_verdict(out, r)?;
    }
    writeln!(
        out,
        "{} sent in {:.2} s{}{}",
        count_of(r.counts.sent, "probe"),
        r.sending_time().as_secs_f64(),
        if r.counts.send_failed > 0 {
            format!(", {} could not be sent", r.counts.send_failed)
        } else {
            String::new()
        },
        if r.interrupted {
            "; interrupted before the end: what was settled is shown"
        } else {
            ""
        }
    )
}

/// The tree's sentence: the link the lossy paths share.
fn write_tree_verdict(out: &mut dyn Write, r: &TraceReport) -> io::Result<()> {
    let link = |l: &synapse_stats::trace::tree::Link| {
        let from = l.0.map_or_else(|| "this host".into(), |a| r.addr_text(a));
        format!("{from} → {}", r.addr_text(l.1))
    };
    match (&r.tree.blamed, r.tree.common.is_empty()) {
        (Some(b), _) => writeln!(
            out,
            "Blamed link: {} (every lossy path's suspect, on no clean path)",
            link(b)
        ),
        (None, false) => {
            let all: Vec<String> = r.tree.common.iter().map(link).collect();
            writeln!(
                out,
                "Links on every lossy path and on no clean one: {}",
                all.join(", ")
            )
        }
        (None, true) => writeln!(out, "No link is on every lossy path and on no clean one."),
    }
}

/// `port 40000` or `ports 40000 40001 …`.
fn ports_text(ports: &[u16]) -> String {
    let shown: Vec<String> = ports.iter().take(8).map(u16::to_string).collect();
    let more = if ports.len() > 8 { " …" } else { "" };
    match ports {
        [one] => format!("source port {one}"),
        _ => format!("source ports {}{more}", shown.join(" ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_engine::trace::TraceCounts;
    use synapse_stats::trace::{HopTally, PathTally, Responder};

    fn hop(addr: &str, kind: AnswerKind, sent: u32, answered: u32) -> HopTally {
        HopTally {
            sent,
            answered,
            responders: vec![Responder {
                addr: addr.parse().unwrap(),
                kind,
                answers: answered,
                mpls: Vec::new(),
            }],
            rtt_ns: vec![50_000; answered as usize],
        }
    }

    fn report(end: AnswerKind, answered: u32) -> TraceReport {
        let path = PathTally {
            port: 40_000,
            destination: "10.0.0.9".parse().unwrap(),
            hops: vec![
                hop("10.0.0.1", AnswerKind::TimeExceeded, 80, 9),
                hop("10.0.0.2", AnswerKind::TimeExceeded, 80, 80),
                hop("10.0.0.9", end, 80, answered),
            ],
            max_ttl: 3,
        };
        let counts = TraceCounts {
            sent: 240,
            first_send_ns: Some(0),
            last_send_ns: Some(2_390_000_000),
            ..TraceCounts::default()
        };
        TraceReport::new(
            "10.0.0.9:8080".parse().unwrap(),
            "10.0.0.100:40000".parse().unwrap(),
            &[path],
            counts,
            false,
        )
        .asked(80, 30, 100.0)
    }

    fn text(r: &TraceReport) -> String {
        let mut out = Vec::new();
        write_trace_text(&mut out, r).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The lab's path through B, as text: R's line says rate-limited,
    /// the echo's that loss persists, the verdict names B → S.
    #[test]
    fn a_suspect_is_named_and_the_rate_limited_router_labelled() {
        let r = report(AnswerKind::Echo, 56);
        let t = text(&r);
        let line = |addr: &str| {
            let cell = format!(" {addr} ");
            t.lines().find(|l| l.contains(&cell)).unwrap().to_string()
        };
        assert!(
            line("10.0.0.1").ends_with("ICMP rate-limited: not loss"),
            "{t}"
        );
        assert!(line("10.0.0.1").contains(" 9/80 "), "{t}");
        assert!(line("10.0.0.9").ends_with("echo; loss persists"), "{t}");
        assert!(
            t.contains("Suspect link: 10.0.0.2 (hop 2) → 10.0.0.9 (hop 3): 30.0 % [20.3–41.3 %] lost, confirmed by the destination's echo"),
            "{t}"
        );
        assert!(t.contains("240 probes sent in 2.39 s"), "{t}");
        assert_eq!(r.exit_status(), 3);
    }

    /// A port unreachable short of answers: inconclusive, the candidate said.
    #[test]
    fn an_unconfirmed_loss_is_inconclusive_with_its_candidate() {
        let r = report(AnswerKind::PortUnreachable, 7);
        let t = text(&r);
        assert!(
            t.contains("Inconclusive: the loss is shown only by one answer"),
            "{t}"
        );
        assert!(
            t.contains("Candidate: 10.0.0.2 (hop 2) → 10.0.0.9 (hop 3)"),
            "{t}"
        );
        assert_eq!(r.exit_status(), 4);
    }

    /// Names, when resolved, go before the address.
    #[test]
    fn names_are_shown_beside_addresses() {
        let mut r = report(AnswerKind::Echo, 80);
        r.resolve(|a| (a.to_string() == "10.0.0.2").then(|| "b.lab".to_string()));
        let t = text(&r);
        assert!(t.contains("b.lab (10.0.0.2)"), "{t}");
        assert!(t.contains("No suspect"), "{t}");
        assert_eq!(r.exit_status(), 0);
    }
}
