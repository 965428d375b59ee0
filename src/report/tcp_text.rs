//! The text report's TCP section: connections and what broke them, the
//! handshake's share (`--connect-each`), how the far kernel's ACKs came
//! back (which says whether the kernel RTT could be split off), the
//! kernel's own view (`TCP_INFO`), replies late by a resend and on which
//! leg (`stats::tcp_legs`), and replies that came
//! in pieces (with Nagle's signature named).

use std::io::{self, Write};
use synapse_stats::TcpFigures;
use synapse_stats::tcp::Timing;
use synapse_units::{count_of, format_ns, group_thousands};

/// Writes the section; `replies` is the run's answered requests.
pub fn write_tcp(out: &mut impl Write, t: &TcpFigures, replies: u64) -> io::Result<()> {
    writeln!(out, "TCP:")?;
    write_connections(out, t)?;
    if let (Some(c), Some(f)) = (&t.connect_ns, &t.first_byte_ns) {
        writeln!(out, "  connect      {}", timing(c))?;
        writeln!(out, "  first byte   {}", timing(f))?;
    }
    let a = &t.acks;
    if a.separate + a.piggybacked + a.missing > 0 {
        writeln!(
            out,
            "  far kernel's ACK of the request: {} on its own (kernel RTT split off), {} riding on the reply (far side answered within its delayed-ACK time: no split), {} not stamped",
            group_thousands(a.separate),
            group_thousands(a.piggybacked),
            group_thousands(a.missing)
        )?;
    }
    write_kernel(out, t)?;
    if t.pieces.split > 0 {
        writeln!(
            out,
            "  {} read in two or more pieces ({} with 30-250 ms between pieces)",
            if t.pieces.split == 1 {
                "1 reply".to_string()
            } else {
                format!("{} replies", group_thousands(t.pieces.split))
            },
            group_thousands(t.pieces.stalled)
        )?;
    }
    if t.nagle_suspected(replies) {
        writeln!(
            out,
            "  ⚠ replies stall at 40-200 ms between pieces: the peer writes a reply in parts with Nagle's algorithm on, waiting for this side's delayed ACK (set TCP_NODELAY on the peer, or write each reply whole)"
        )?;
    }
    writeln!(out)
}

fn write_connections(out: &mut impl Write, t: &TcpFigures) -> io::Result<()> {
    let broken: Vec<String> = TcpFigures::BREAKS
        .iter()
        .zip(t.broken)
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{} {}", group_thousands(n), name.replace('_', " ")))
        .collect();
    let failed: Vec<String> = TcpFigures::CONNECT_FAILURES
        .iter()
        .zip(t.connect_failed)
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{} {}", group_thousands(n), name.replace('_', " ")))
        .collect();
    writeln!(
        out,
        "  {} opened{}; lost mid-run: {}; failed attempts: {}",
        count_of(t.connections, "connection"),
        if t.connect_each {
            " (one per transaction)".to_string()
        } else {
            format!(", {}", count_of(t.reconnects, "reconnect"))
        },
        none_or(&broken),
        none_or(&failed)
    )?;
    if t.lost_with_connection + t.unsent > 0 || t.disconnected.count > 0 {
        writeln!(
            out,
            "  {} lost with {} connection, {} never sent (no connection); {} without a connection, {:.1} ms in all, longest {:.1} ms",
            count_of(t.lost_with_connection, "request"),
            if t.lost_with_connection == 1 {
                "its"
            } else {
                "their"
            },
            group_thousands(t.unsent),
            count_of(t.disconnected.count, "spell"),
            t.disconnected.total_ms,
            t.disconnected.longest_ms
        )?;
    }
    Ok(())
}

fn write_kernel(out: &mut impl Write, t: &TcpFigures) -> io::Result<()> {
    let k = &t.kernel;
    let ns = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| format_ns(v as f64));
    if k.srtt_ns.is_some() || k.min_rtt_ns.is_some() {
        writeln!(
            out,
            "  kernel's view (TCP_INFO): srtt {}, rttvar {}, min_rtt {}, rto {}",
            ns(k.srtt_ns),
            ns(k.rttvar_ns),
            ns(k.min_rtt_ns),
            ns(k.rto_ns)
        )?;
    }
    if k.retransmits > 0 || k.dsack_dups > 0 || k.out_of_order_in > 0 {
        writeln!(
            out,
            "  resends: {} ({}), {} DSACK, {} out of order in",
            count_of(k.retransmits, "segment"),
            count_of(k.bytes_retrans, "byte"),
            group_thousands(k.dsack_dups),
            group_thousands(k.out_of_order_in),
        )?;
    }
    if let Some(said) = &t.resends.summary {
        writeln!(out, "  {said}")?;
    }
    Ok(())
}

fn timing(t: &Timing) -> String {
    format!(
        "p50 {}, p99 {}, mean {}, max {}",
        format_ns(t.p50 as f64),
        format_ns(t.p99 as f64),
        format_ns(t.mean),
        format_ns(t.max as f64)
    )
}

fn none_or(parts: &[String]) -> String {
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_stats::tcp::TcpStats;

    fn text(t: &TcpFigures, replies: u64) -> String {
        let mut out = Vec::new();
        write_tcp(&mut out, t, replies).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn breaks_and_acks_are_named() {
        let mut f = TcpStats::new(false).figures();
        f.connections = 3;
        f.reconnects = 2;
        f.broken = [1, 1, 0, 0];
        f.connect_failed = [4, 0, 0];
        f.acks.piggybacked = 7;
        let t = text(&f, 100);
        assert!(
            t.contains("3 connections opened, 2 reconnects; lost mid-run: 1 reset, 1 closed by peer; failed attempts: 4 refused"),
            "{t}"
        );
        assert!(
            t.contains("0 on its own (kernel RTT split off), 7 riding on the reply"),
            "{t}"
        );
        assert!(!t.contains("Nagle"), "{t}");
    }

    #[test]
    fn nagle_is_named_when_replies_stall() {
        let mut f = TcpStats::new(false).figures();
        f.pieces.split = 10;
        f.pieces.stalled = 10;
        let t = text(&f, 100);
        assert!(t.contains("Nagle's algorithm"), "{t}");
        assert!(
            t.contains("10 replies read in two or more pieces (10 with"),
            "{t}"
        );
    }

    #[test]
    fn replies_late_by_a_resend_are_latency_on_a_named_leg() {
        use synapse_stats::tcp_legs::{AckSeen, Resends, SlowReply};
        let mut f = TcpStats::new(false).figures();
        assert!(!text(&f, 100).contains("retransmissions"));
        let mut r = Resends::default();
        r.record(&SlowReply {
            extra_ns: 300_000_000,
            ack: AckSeen::WithReply,
            ..SlowReply::default()
        });
        f.kernel.retransmits = 0;
        f.resends = r.into();
        let t = text(&f, 100);
        assert!(
            t.contains("  retransmissions showed as latency, not loss: replies late by about a retransmission timeout (1), on the reverse leg (server → client). Replies the server resent"),
            "{t}"
        );
        assert!(!t.contains("resends:"), "nothing resent here: {t}");
    }
}
