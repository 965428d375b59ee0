//! What really happened to each request, from the two ends' own logs: the
//! reflector's log says which requests reached it, the client's which
//! came back and when. Synapse's counters are checked against these,
//! packet by packet.

use super::outputs::{ClientRow, ServerRow};
use super::sheet::Sheet;
use serde_json::Value;
use std::collections::HashSet;

/// A flow's losses placed the way Synapse places them, but from the truth.
#[derive(Debug, Default, Clone, Copy)]
pub struct Placed {
    /// Lost (no reply by the deadline, and none later).
    pub lost: i64,
    /// Never reached the reflector, between two replies.
    pub forward: i64,
    /// Reached it, reply lost, between two replies.
    pub backward: i64,
    /// Before the first reply to arrive, or after the highest answered.
    pub unknown: i64,
    /// Replies that came after one to a later request (RFC 4737), in the
    /// order the client's kernel stamped their arrival.
    pub reordered: i64,
}

/// The requests of the client on `port` the reflector answered.
pub fn arrived(server: &[ServerRow], proto: &str, port: u16) -> HashSet<u64> {
    server
        .iter()
        .filter(|r| r.proto == proto && r.port() == port)
        .map(ServerRow::request)
        .collect()
}

/// Places a flow's losses from its client log and the requests that
/// arrived.
pub fn place(rows: &[ClientRow], arrived: &HashSet<u64>) -> Placed {
    let late: HashSet<u64> = rows
        .iter()
        .filter(|r| r.status == "late")
        .map(|r| r.seq)
        .collect();
    let mut replies: Vec<(i64, u64)> = rows
        .iter()
        .filter(|r| r.status == "ok" || r.status == "late")
        .filter_map(|r| Some((r.t4_kernel.or(r.t4)?, r.seq)))
        .collect();
    replies.sort_unstable();
    let answered: Vec<&(i64, u64)> = replies.iter().filter(|r| !late.contains(&r.1)).collect();
    let first = answered.first().map_or(u64::MAX, |r| r.1);
    let top = answered.iter().map(|r| r.1).max().unwrap_or(0);
    let mut p = Placed::default();
    for r in rows
        .iter()
        .filter(|r| r.status == "lost" && !late.contains(&r.seq))
    {
        p.lost += 1;
        if r.seq < first || r.seq > top {
            p.unknown += 1;
        } else if arrived.contains(&r.seq) {
            p.backward += 1;
        } else {
            p.forward += 1;
        }
    }
    let mut highest = None;
    for &(_, seq) in &replies {
        if highest.is_some_and(|h| seq < h) {
            p.reordered += 1;
        }
        highest = highest.max(Some(seq));
    }
    p
}

/// Synapse's loss direction against the truth, exactly.
pub fn check_direction(sheet: &mut Sheet, run: &str, j: &Value, truth: &Placed) {
    let d = &j["loss_direction"];
    let get = |k: &str| d[k].as_i64().unwrap_or(-1);
    sheet.exact(
        &format!("{run}: lost"),
        truth.lost,
        j["packets"]["lost"].as_i64().unwrap_or(-1),
        "requests logged lost",
    );
    sheet.row(
        &format!("{run}: reflector"),
        "stateful (Synapse's reflector)",
        "",
        d["reflector"].as_str().unwrap_or("none"),
        "the same",
        d["reflector"] == "stateful",
    );
    for (key, want, why) in [
        (
            "forward",
            truth.forward,
            "lost and absent from the reflector's log",
        ),
        (
            "backward",
            truth.backward,
            "lost but in the reflector's log",
        ),
        (
            "unknown",
            truth.unknown,
            "lost outside the replies' bracket",
        ),
    ] {
        sheet.exact(&format!("{run}: loss {key}"), want, get(key), why);
    }
}

/// The counters every run must keep: nothing strays in, nothing is made
/// up, every request is accounted for.
pub fn check_accounting(sheet: &mut Sheet, run: &str, j: &Value, rows: &[ClientRow]) {
    let p = &j["packets"];
    let n = |k: &str| p[k].as_i64().unwrap_or(-1);
    let requests = rows
        .iter()
        .filter(|r| r.status == "ok" || r.status == "lost");
    sheet.exact(
        &format!("{run}: sent = received + lost + late"),
        n("received") + n("lost") + n("late"),
        n("sent"),
        "Synapse's own invariant",
    );
    sheet.exact(
        &format!("{run}: requests in the log"),
        requests.count() as i64,
        n("sent"),
        "one row per request",
    );
    sheet.expect(&format!("{run}: stray"), 0, n("stray"));
}
