//! The text report's line on what the path said beyond silence: ICMP
//! errors (and, over TCP, the peer's FIN or RST), by kind and by who sent
//! them, so a reflector that died is told apart from a route that broke.

use super::Report;
use std::io::{self, Write};
use synapse_stats::PathErrors;
use synapse_units::{count_of, group_thousands};

/// `Errors:` and a line per sender, when the path said anything.
pub fn write_path_errors(out: &mut impl Write, report: &Report) -> io::Result<()> {
    let e = &report.path_errors;
    if e.total() == 0 {
        return Ok(());
    }
    let kinds: Vec<String> = e
        .kinds()
        .map(|(k, n)| format!("{} {}", group_thousands(n), k.words()))
        .collect();
    writeln!(
        out,
        "Errors:   {} from the path: {}",
        group_thousands(e.total()),
        kinds.join(", ")
    )?;
    for line in sender_lines(e, report.config.server.ip()) {
        writeln!(out, "          └─ {line}")?;
    }
    Ok(())
}

/// One line per sender: `12 from 10.0.1.2 (the reflector's host), the
/// last port unreachable`.
fn sender_lines(e: &PathErrors, reflector: std::net::IpAddr) -> Vec<String> {
    let mut lines: Vec<String> = e
        .senders()
        .map(|s| {
            let who = match s.address {
                None => "this host".to_string(),
                Some(a) if a == reflector => format!("{a} (the reflector's host)"),
                Some(a) => format!("{a} (a router on the way)"),
            };
            format!(
                "{} from {who}, the last {}",
                count_of(s.count, "error"),
                s.last.words()
            )
        })
        .collect();
    if e.other_senders() > 0 {
        lines.push(format!(
            "{} from other senders",
            count_of(e.other_senders(), "error")
        ));
    }
    lines
}
