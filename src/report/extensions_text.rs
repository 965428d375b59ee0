//! The text report's class-of-service and STAMP-extensions sections, and
//! the warnings both reports give about what the one-way figures rest on.

use super::Report;
use std::io::{self, Write};
use synapse_engine::extensions::TlvSummary;
use synapse_stats::cos::{DscpCount, EcnCounts, LegFigures};
use synapse_stats::{CosFigures, Summary};
use synapse_units::{count_of, group_thousands};

/// What the STAMP extensions say that the reader must know: one-way
/// delays resting on a clock nobody synchronises.
pub fn warnings(summary: &Summary, ext: Option<&TlvSummary>, same_clock: bool) -> Vec<String> {
    let mut out = Vec::new();
    let Some(one_way) = summary.one_way_ns.as_ref().filter(|_| !same_clock) else {
        return out;
    };
    if let Some(clock) = ext.and_then(|e| e.timestamp_info.as_ref())
        && !clock.synchronised
    {
        out.push(format!(
            "one-way delays rest on the reflector's clock, which no external source keeps (Timestamp Information: T2 {}, T3 {})",
            clock.t2_sync, clock.t3_sync
        ));
    }
    let unsynced = one_way.clock_errors.client_unsynchronized;
    if unsynced > 0 {
        out.push(format!(
            "one-way delays rest on this host's clock, which the kernel said was not synchronised when {} of the requests left",
            group_thousands(unsynced)
        ));
    }
    out
}

/// Both sections, when the run has them.
pub fn write_extensions(out: &mut impl Write, report: &Report) -> io::Result<()> {
    if let Some(c) = &report.summary.class_of_service {
        write_cos(out, c)?;
        writeln!(out)?;
    }
    if let Some(e) = &report.extensions {
        write_tlvs(out, e)?;
        for w in &report.extension_warnings {
            writeln!(out, "  ⚠ {w}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

fn dscps(list: &[DscpCount]) -> String {
    let parts: Vec<String> = list
        .iter()
        .map(|d| match d.name {
            Some(n) => format!("{n} ×{}", group_thousands(d.count)),
            None => format!("DSCP {} ×{}", d.dscp, group_thousands(d.count)),
        })
        .collect();
    parts.join(", ")
}

fn ecns(e: &EcnCounts) -> String {
    let parts: Vec<String> = [
        ("Not-ECT", e.not_ect),
        ("ECT(1)", e.ect1),
        ("ECT(0)", e.ect0),
        ("CE", e.ce),
    ]
    .iter()
    .filter(|(name, n)| *n > 0 || *name == "CE")
    .map(|(name, n)| format!("{name} {}", group_thousands(*n)))
    .collect();
    parts.join(", ")
}

/// One leg's line: sent, arrived (re-marked), ECN on arrival and CE.
fn leg(out: &mut impl Write, arrow: &str, l: &LegFigures) -> io::Result<()> {
    let sent = if l.dscp_sent.is_empty() {
        "not reported".to_string()
    } else {
        dscps(&l.dscp_sent)
    };
    writeln!(out, "  {arrow}  sent:    {sent}")?;
    if l.reported == 0 {
        writeln!(
            out,
            "              arrived: not reported ({} replies did not say)",
            group_thousands(l.not_reported)
        )?;
        return Ok(());
    }
    let remarked = match l.remarked {
        Some(n) => format!(" ({} re-marked)", group_thousands(n)),
        None => String::new(),
    };
    writeln!(
        out,
        "              arrived: {}{remarked}",
        dscps(&l.dscp_received)
    )?;
    if let Some(e) = &l.ecn_received {
        let on_path = match l.ce_on_path {
            Some(n) if e.ce > 0 => format!(", {} set on this leg's path", group_thousands(n)),
            _ => String::new(),
        };
        writeln!(out, "              ECN:     {}{on_path}", ecns(e))?;
    }
    if l.not_reported > 0 {
        writeln!(
            out,
            "              ({} replies did not report this leg)",
            group_thousands(l.not_reported)
        )?;
    }
    Ok(())
}

fn write_cos(out: &mut impl Write, c: &CosFigures) -> io::Result<()> {
    writeln!(out, "Class of service, per leg (DSCP, ECN):")?;
    leg(out, "→ forward ", &c.forward)?;
    leg(out, "← backward", &c.backward)
}

fn write_tlvs(out: &mut impl Write, e: &TlvSummary) -> io::Result<()> {
    writeln!(out, "STAMP extensions (RFC 8972): {}", e.asked)?;
    let mut flags = format!(
        "{} U, {} M, {} I",
        group_thousands(e.unrecognized),
        group_thousands(e.malformed),
        group_thousands(e.integrity_failed)
    );
    if e.hmac_verified + e.hmac_failed > 0 {
        flags.push_str(&format!(
            "; HMAC TLV verified {}, failed {}",
            group_thousands(e.hmac_verified),
            group_thousands(e.hmac_failed)
        ));
    }
    writeln!(
        out,
        "  Replies:    {} read; TLVs flagged {flags}",
        group_thousands(e.replies)
    )?;
    if let Some(f) = &e.follow_up {
        writeln!(
            out,
            "  Follow-Up:  {} took the reflector's measured T3 ({} by its NIC); {} had none yet; {} named another packet than the one waiting (its reply lost, or a later loss reported first)",
            count_of(f.matched, "packet"),
            group_thousands(f.hardware),
            if f.none_yet == 1 {
                "1 reply".to_string()
            } else {
                format!("{} replies", group_thousands(f.none_yet))
            },
            group_thousands(f.unmatched)
        )?;
    }
    match &e.timestamp_info {
        Some(t) => writeln!(
            out,
            "  Reflector clock: T2 {} ({}), T3 {} ({})",
            t.t2_method, t.t2_sync, t.t3_method, t.t3_sync
        )?,
        None if e.asked.contains("timestamp-info") => {
            writeln!(out, "  Reflector clock: not reported")?;
        }
        None => {}
    }
    match &e.location {
        Some(l) => {
            let nat = match (l.source_translated, l.destination_translated) {
                (false, false) => "as sent: no NAT".to_string(),
                (true, false) => format!("sent from {}: a NAT rewrote the source", l.source_sent),
                (false, true) => format!(
                    "sent to {}: the destination was rewritten",
                    l.destination_sent
                ),
                (true, true) => format!(
                    "sent {} → {}: both rewritten",
                    l.source_sent, l.destination_sent
                ),
            };
            writeln!(
                out,
                "  Location:   the reflector saw {} → {} ({nat})",
                l.source_seen, l.destination_seen
            )?;
        }
        None if e.asked.contains("location") => writeln!(out, "  Location:   not reported")?,
        None => {}
    }
    match &e.direct {
        Some(d) => writeln!(
            out,
            "  Direct Measurement: the reflector received {} of {} sent and had answered {}; lost forward {}, backward {}",
            group_thousands(u64::from(d.reflector_received)),
            group_thousands(u64::from(d.sender_transmitted)),
            group_thousands(u64::from(d.reflector_transmitted)),
            group_thousands(d.forward_lost),
            group_thousands(d.backward_lost)
        ),
        None if e.asked.contains("direct") => {
            writeln!(out, "  Direct Measurement: not reported")
        }
        None => Ok(()),
    }
}
