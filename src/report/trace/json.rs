//! `synapse trace --json`: one object. `hops` (each: `ttl`, `addresses`,
//! `sent`, `answered`, `loss` as a ratio with `loss_low`/`loss_high`, its
//! 95 % interval, `rtt_ns` with `p50` and `p90`) and `suspect` (null, or
//! `from` and `to`, each `address` and `ttl`, and `loss`) are the leading
//! path's; `paths` holds every distinct path, `common_links` and `blamed`
//! what they share. The agent's `--json` lines carry the same object.

use super::{TraceReport, inconclusive_text};
use serde_json::{Value, json};
use std::net::IpAddr;
use synapse_stats::trace::{
    AnswerKind, HopFigures, HopRef, HopState, Inconclusive, Suspect, TreePath, Verdict,
};

fn kind_name(k: AnswerKind) -> &'static str {
    match k {
        AnswerKind::TimeExceeded => "time_exceeded",
        AnswerKind::Echo => "echo",
        AnswerKind::PortUnreachable => "port_unreachable",
        AnswerKind::Unreachable(_) => "unreachable",
    }
}

fn state_name(s: HopState) -> &'static str {
    match s {
        HopState::Clean => "clean",
        HopState::Lossy => "lossy",
        HopState::RateLimited => "rate_limited",
        HopState::Silent => "silent",
    }
}

fn hop(r: &TraceReport, h: &HopFigures) -> Value {
    let names: Vec<Option<&String>> = h.addresses.iter().map(|a| r.names.get(a)).collect();
    json!({
        "ttl": h.ttl,
        "addresses": h.addresses,
        "names": names,
        "sent": h.sent,
        "answered": h.answered,
        "loss": h.loss.map(|l| l.ratio),
        "loss_low": h.loss.map(|l| l.low),
        "loss_high": h.loss.map(|l| l.high),
        "rtt_ns": h.rtt_p50_ns.map(|p50| json!({"p50": p50, "p90": h.rtt_p90_ns})),
        "answer": h.kind.map(kind_name),
        "icmp_code": match h.kind {
            Some(AnswerKind::Unreachable(c)) => Some(c),
            _ => None,
        },
        "state": state_name(h.state),
        "mpls": h.mpls.iter().map(|m| json!({
            "label": m.label, "tc": m.tc, "bottom": m.bottom, "ttl": m.ttl,
        })).collect::<Vec<_>>(),
    })
}

fn hop_ref(h: HopRef) -> Value {
    json!({"address": h.addr, "ttl": h.ttl})
}

fn suspect(s: &Suspect) -> Value {
    json!({
        "from": hop_ref(s.from),
        "to": hop_ref(s.to),
        "loss": s.loss.ratio,
        "loss_low": s.loss.low,
        "loss_high": s.loss.high,
        "hops_showing": s.hops_showing,
    })
}

fn verdict_name(v: &Verdict) -> &'static str {
    match v {
        Verdict::NoSuspect => "no_suspect",
        Verdict::Suspect(_) => "suspect",
        Verdict::Inconclusive(_) => "inconclusive",
        Verdict::Unreachable(..) => "unreachable",
    }
}

fn path(r: &TraceReport, p: &TreePath) -> Value {
    let (suspect_v, candidate, reason) = match &p.verdict {
        Verdict::Suspect(s) => (suspect(s), Value::Null, Value::Null),
        Verdict::Inconclusive(why) => (
            Value::Null,
            match why {
                Inconclusive::Unconfirmed(s) => suspect(s),
                _ => Value::Null,
            },
            json!(inconclusive_text(why)),
        ),
        Verdict::Unreachable(at, code) => (
            Value::Null,
            Value::Null,
            json!({"unreachable": hop_ref(*at), "icmp_code": code}),
        ),
        Verdict::NoSuspect => (Value::Null, Value::Null, Value::Null),
    };
    json!({
        "ports": p.ports,
        "hops": p.hops.iter().map(|h| hop(r, h)).collect::<Vec<_>>(),
        "verdict": verdict_name(&p.verdict),
        "suspect": suspect_v,
        "candidate": candidate,
        "reason": reason,
    })
}

fn link(l: &(Option<IpAddr>, IpAddr)) -> Value {
    json!({"from": l.0, "to": l.1})
}

/// The report as one JSON value.
pub fn trace_json(r: &TraceReport) -> Value {
    let paths: Vec<Value> = r.tree.paths.iter().map(|p| path(r, p)).collect();
    let main = r.main_path().map(|p| path(r, p)).unwrap_or(Value::Null);
    let overall = match r.overall() {
        super::Overall::NoSuspect => "no_suspect",
        super::Overall::Suspect => "suspect",
        super::Overall::Inconclusive => "inconclusive",
        super::Overall::Unreachable => "unreachable",
    };
    json!({
        "destination": r.destination.to_string(),
        "local": r.local.to_string(),
        "ports": r.ports,
        "probes": r.probes,
        "max_ttl": r.max_ttl,
        "rate": r.rate,
        "hops": main.get("hops").cloned().unwrap_or(json!([])),
        "suspect": main.get("suspect").cloned().unwrap_or(Value::Null),
        "verdict": overall,
        "reason": main.get("reason").cloned().unwrap_or(Value::Null),
        "paths": paths,
        "common_links": r.tree.common.iter().map(link).collect::<Vec<_>>(),
        "blamed": r.tree.blamed.as_ref().map(link),
        "sent": r.counts.sent,
        "send_failed": r.counts.send_failed,
        "sending_ns": r.sending_time().as_nanos() as u64,
        "interrupted": r.interrupted,
        "exit_status": r.exit_status(),
    })
}
