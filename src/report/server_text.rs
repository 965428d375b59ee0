//! What a headless `synapse server` prints: a banner, one line per session
//! as it ends, and the totals at the end.

use crate::plan::ServerPlan;
use crate::session::{ServerFinish, ServerSession, Side};
use std::io::{self, Write};
use synapse_engine::{ReflectorStamping, ReflectorTotals, SessionInfo, TcpEchoTotals};
use synapse_units::{count_of, group_thousands};

/// Where the reflectors listen, how they run, and where the log goes.
pub fn write_banner(out: &mut impl Write, plan: &ServerPlan, s: &ServerSession) -> io::Result<()> {
    let t = &plan.thread;
    writeln!(
        out,
        "Synapse server listening on {} (CPU {}{}, {})",
        s.echo_addr(),
        t.cpu,
        if t.cpu_auto { " auto" } else { "" },
        if t.busy_poll { "busy-poll" } else { "blocking" }
    )?;
    if let Some(addr) = s.stamp_addr() {
        let auth = if plan.stamp_key.is_some() {
            ", authenticated requests only (HMAC-SHA-256)"
        } else {
            ""
        };
        writeln!(out, "STAMP (RFC 8762) reflector on {addr}{auth}")?;
    }
    if let Some(addr) = s.tcp_addr() {
        writeln!(
            out,
            "TCP echo on {addr} (at most {} connections per source)",
            plan.tcp_per_source
        )?;
    }
    if let (Some(addr), Some(l)) = (s.load_addr(), &plan.load) {
        let signed = if l.key.is_some() {
            ", sessions signed with the key"
        } else {
            ""
        };
        writeln!(
            out,
            "Load sessions (bulk TCP) on {addr}: at most {} at once, {} s of load and {} each way a session{signed}",
            l.max_sessions,
            l.max_seconds,
            synapse_units::format_bps(l.rate_bps as f64)
        )?;
    }
    write_groups(out, plan, s)?;
    if plan.timestamps != ReflectorStamping::default() {
        let st = &s.stamping;
        let on = st.interface.as_deref().map(|i| format!(" on {i}"));
        let note = st.note.as_deref().map(|n| format!(" ({n})"));
        writeln!(
            out,
            "Timestamps: {}{}{}{}",
            st.source.name(),
            on.unwrap_or_default(),
            if st.hardware.as_ref().is_some_and(|g| g.changed()) {
                ", switched on for this run"
            } else {
                ""
            },
            note.unwrap_or_default()
        )?;
    }
    if let Some(path) = s.log_path() {
        writeln!(out, "Logging every answer to {}", path.display())?;
    }
    if !plan.admission.allow.is_open() {
        writeln!(out, "Answering only {}", plan.admission.allow)?;
    }
    writeln!(out, "Limits: {}", plan.admission.limits)?;
    if let Some(who) = &s.became {
        writeln!(out, "Running as {who}")?;
    }
    writeln!(
        out,
        "Ready to echo packets... (Ctrl-C prints totals and exits)"
    )
}

/// One load event, as the server's log says it.
pub fn load_line(ev: &synapse_engine::load::LoadEvent) -> String {
    use synapse_engine::load::LoadEvent;
    match ev {
        LoadEvent::Started { peer } => format!("load: session from {peer} started"),
        LoadEvent::Refused { peer, reason } => format!("load: refused {peer}: {reason}"),
        LoadEvent::Ended {
            peer,
            phases,
            sent,
            received,
            problem,
        } => format!(
            "load: session from {peer} ended: {}, {} sent, {} received{}",
            count_of(u64::from(*phases), "phase"),
            count_of(*sent, "byte"),
            count_of(*received, "byte"),
            problem
                .as_deref()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default()
        ),
    }
}

/// The groups joined, where and by whom; the name answers carry.
fn write_groups(out: &mut impl Write, plan: &ServerPlan, s: &ServerSession) -> io::Result<()> {
    if let Some((groups, interface, sides)) = s.joined() {
        let list: Vec<String> = groups.iter().map(ToString::to_string).collect();
        let by: Vec<&str> = sides
            .iter()
            .map(|side| match side {
                Side::Echo => "echo",
                Side::Stamp => "STAMP",
            })
            .collect();
        let to = if plan.groups.answer_to_group {
            "each answer to the group, on its sender's port"
        } else {
            "each answer to its sender's own address"
        };
        writeln!(
            out,
            "Joined {} on {} ({}; {to})",
            list.join(", "),
            interface.as_deref().unwrap_or("the route's interface"),
            by.join(" and ")
        )?;
    }
    if let Some(name) = &plan.name {
        writeln!(out, "Echo answers that ask are named {name}")?;
    }
    Ok(())
}

/// One finished session.
pub fn session_line(side: Side, s: &SessionInfo) -> String {
    format!(
        "{}session ended: {}  {}  {}{}",
        match side {
            Side::Echo => "",
            Side::Stamp => "STAMP ",
        },
        s.peer,
        count_of(s.packets, "packet"),
        count_of(s.bytes, "byte"),
        if s.refused.total() > 0 {
            format!("  refused: {}", s.refused)
        } else {
            String::new()
        }
    )
}

/// ` (2 send errors; refused: 3 rate, 1 not allowed)`: what was not
/// answered, when anything was not.
fn unanswered(t: &ReflectorTotals) -> String {
    let mut parts = Vec::new();
    if t.oversized > 0 {
        parts.push(format!(
            "{} oversized dropped",
            group_thousands(t.oversized)
        ));
    }
    if t.send_errors > 0 {
        parts.push(count_of(t.send_errors, "send error"));
    }
    if t.refused.total() > 0 {
        parts.push(format!("refused: {}", t.refused));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

fn echo_totals(t: &ReflectorTotals) -> String {
    format!(
        "totals: {}, {}, {} echoed{}",
        count_of(t.sessions, "session"),
        count_of(t.packets, "packet"),
        count_of(t.bytes, "byte"),
        unanswered(t)
    )
}

fn stamp_totals(t: &ReflectorTotals) -> String {
    format!(
        "STAMP totals: {}, {} reflected{}{}{}",
        count_of(t.sessions, "session"),
        count_of(t.packets, "packet"),
        unanswered(t),
        if t.t2_from_user > 0 {
            format!(
                ", {} with T2 from user space (no kernel RX stamp)",
                t.t2_from_user
            )
        } else {
            String::new()
        },
        tlv_totals(&t.tlv)
    )
}

/// `; TLVs (RFC 8972) in 1,000 requests: 3 U, 1 M, 0 I, 999 follow-ups`.
fn tlv_totals(t: &synapse_engine::TlvTotals) -> String {
    if t.requests == 0 {
        return String::new();
    }
    format!(
        "; TLVs (RFC 8972) in {}: {} unrecognized, {} malformed, {} failed integrity; {} carried a follow-up",
        count_of(t.requests, "request"),
        t.unrecognized,
        t.malformed,
        t.integrity_failed,
        count_of(t.follow_ups, "answer")
    )
}

fn tcp_totals(t: &TcpEchoTotals) -> String {
    let mut ended = Vec::new();
    for (n, what) in [
        (t.closed, "closed by the client"),
        (t.reset, "reset"),
        (t.stalled, "stalled (client not reading) and closed"),
        (t.open, "open at the stop"),
    ] {
        if n > 0 {
            ended.push(format!("{} {what}", group_thousands(n)));
        }
    }
    let mut refused = Vec::new();
    for (n, why) in [
        (t.refused_not_allowed, "not allowed"),
        (t.refused_per_source, "over the per-source cap"),
        (t.refused_total, "over --max-sessions"),
    ] {
        if n > 0 {
            refused.push(format!("{} {why}", group_thousands(n)));
        }
    }
    format!(
        "TCP totals: {}, {} echoed{}{}",
        count_of(t.connections, "connection"),
        count_of(t.bytes, "byte"),
        if ended.is_empty() {
            String::new()
        } else {
            format!(" ({})", ended.join(", "))
        },
        if refused.is_empty() {
            String::new()
        } else {
            format!("; refused: {}", refused.join(", "))
        }
    )
}

/// The sessions still open at the stop, the totals of each reflector and
/// what the log holds. A failed reflector's error is returned after what
/// the others did is written.
pub fn write_totals(out: &mut impl Write, f: &ServerFinish) -> io::Result<()> {
    if let Ok(o) = &f.echo {
        for s in &o.open_at_stop {
            writeln!(out, "{}", session_line(Side::Echo, s))?;
        }
        writeln!(out, "{}", echo_totals(&o.totals))?;
    }
    if let Some(Ok(o)) = &f.stamp {
        for s in &o.open_at_stop {
            writeln!(out, "{}", session_line(Side::Stamp, s))?;
        }
        writeln!(out, "{}", stamp_totals(&o.totals))?;
    }
    if let Some(Ok(t)) = &f.load {
        writeln!(
            out,
            "load: {}, {} refused; {} sent, {} received",
            count_of(t.sessions, "session"),
            t.refused,
            count_of(t.sent, "byte"),
            count_of(t.received, "byte")
        )?;
    }
    let left: usize = [Some(&f.echo), f.stamp.as_ref()]
        .into_iter()
        .flatten()
        .filter_map(|o| o.as_ref().ok())
        .map(|o| o.groups_left)
        .sum();
    if left > 0 {
        writeln!(
            out,
            "left {} on exit",
            count_of(left as u64, "group membership")
        )?;
    }
    // Said only when a TCP client came: a UDP-only server's totals stay as they were.
    if let Some(Ok(o)) = &f.tcp
        && o.totals.connections + o.totals.refused() > 0
    {
        writeln!(out, "{}", tcp_totals(&o.totals))?;
    }
    if let Some(log) = &f.log {
        let stale: u64 = [Some(&f.echo), f.stamp.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|o| o.as_ref().ok())
            .map(|o| o.stale_stamps)
            .sum();
        writeln!(
            out,
            "log: {} written to {}{}{}",
            count_of(log.rows, "answer"),
            log.path.display(),
            if log.dropped > 0 {
                let why = if log.error.is_some() {
                    "writing had failed"
                } else {
                    "the writer fell behind"
                };
                format!(" ({} dropped: {why})", log.dropped)
            } else {
                String::new()
            },
            if stale > 0 {
                format!("; {stale} TX stamps came after their row was written")
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}
