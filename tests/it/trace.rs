//! `synapse trace` in the lab of `common::ecmp_lab` (C — R — {A, B} — S,
//! an L4 multipath hash at R, 30 % loss on B's link to S, R rate-limiting
//! its ICMP as Linux does by default): the suspect link is the one after
//! B, R is labelled rate-limited and never blamed, a port through A has
//! no suspect, a port-unreachable destination confirms nothing alone,
//! `--paths 16` finds both next hops and blames B's link; the same over
//! IPv6; Debian's `traceroute` finds the same hops; bad input ends with a
//! clear report, never a hang, and no faster than the stated rate.
//! Everything asserted is what the runs themselves counted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::ecmp_lab::*;
use crate::common::*;
use serde_json::Value;

/// Whether the lab can be built here (root, `ip`, `iptables`).
fn lab_possible(test: &str) -> bool {
    if let Some(why) = netns::unavailable() {
        println!("SKIPPED {test}: {why}");
        return false;
    }
    true
}

/// `synapse trace ARGS --json` in C: its report and exit status.
fn trace(lab: &EcmpLab, args: &[&str]) -> (Value, i32) {
    let out = netns::synapse_in(&lab.c)
        .arg("trace")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let code = out.status.code().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{e}: {text} {}", String::from_utf8_lossy(&out.stderr)));
    (json, code)
}

/// A hop's address at `ttl` in a path's `hops`.
fn at(hops: &Value, ttl: u64) -> &Value {
    hops.as_array()
        .unwrap()
        .iter()
        .find(|h| h["ttl"] == ttl)
        .unwrap_or_else(|| panic!("no hop {ttl}: {hops}"))
}

fn address(hop: &Value) -> &str {
    hop["addresses"][0].as_str().unwrap_or("")
}

/// What a path through B must show: R rate-limited (loss, never
/// blamed), B clean, S's echo short of 30 % within its interval, the
/// link B → S the suspect.
fn assert_b_path(path: &Value, r: &str, b: &str, s: &str) {
    let hops = &path["hops"];
    let (one, two, three) = (at(hops, 1), at(hops, 2), at(hops, 3));
    assert_eq!(
        (address(one), address(two), address(three)),
        (r, b, s),
        "{path}"
    );
    assert_eq!(one["state"], "rate_limited", "{one}");
    assert!(one["loss"].as_f64().unwrap() > 0.5, "R answers few: {one}");
    assert_eq!(two["state"], "clean", "{two}");
    assert_eq!(three["answer"], "echo");
    let suspect = &path["suspect"];
    assert_eq!(suspect["from"]["address"], b, "{path}");
    assert_eq!(suspect["from"]["ttl"], 2);
    assert_eq!(suspect["to"]["address"], s);
    assert_eq!(suspect["to"]["ttl"], 3);
    let (lo, hi) = (
        suspect["loss_low"].as_f64().unwrap(),
        suspect["loss_high"].as_f64().unwrap(),
    );
    assert!(
        lo <= B_DROP && B_DROP <= hi,
        "30 % within [{lo}, {hi}]: {suspect}"
    );
    assert_ne!(suspect["from"]["address"], r, "R is never blamed");
}

/// Sixteen ports: the tree has both next hops, B's ports lose past B,
/// A's ports lose nothing, and the link blamed is B → S. Then one port of
/// each, traced alone on its own 5-tuple, says the same with its exit
/// status: 3 through B, 0 through A. The kernel's own count of datagrams
/// C sent is the report's.
#[test]
fn the_tree_finds_both_next_hops_and_blames_the_link_after_b() {
    let test = "the_tree_finds_both_next_hops_and_blames_the_link_after_b";
    if !lab_possible(test) {
        return;
    }
    let _alone = one_at_a_time();
    let lab = EcmpLab::new();
    let _s = lab.reflectors();
    let before = lab.udp_sent(&lab.c, false);
    let to = format!("{S_V4}:8080");
    let (t, code) = trace(&lab, &[&to, "--paths", "16", "--rate", "1000/s"]);
    assert_eq!(
        lab.udp_sent(&lab.c, false) - before,
        t["sent"].as_u64().unwrap(),
        "every probe counted once"
    );
    assert_eq!(code, 3, "{t}");
    let paths = t["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 2, "both next hops: {t}");
    let via = |b: &str| {
        paths
            .iter()
            .find(|p| address(at(&p["hops"], 2)) == b)
            .unwrap_or_else(|| panic!("no path via {b}: {t}"))
    };
    let (through_a, through_b) = (via(A_V4), via(B_V4));
    assert_b_path(through_b, R_V4, B_V4, S_V4);
    assert_eq!(through_a["verdict"], "no_suspect", "{through_a}");
    assert_eq!(at(&through_a["hops"], 1)["state"], "rate_limited");
    assert_eq!(t["blamed"]["from"], B_V4, "{t}");
    assert_eq!(t["blamed"]["to"], S_V4);
    let ports = |p: &Value| -> Vec<u64> {
        p["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    assert_eq!(ports(through_a).len() + ports(through_b).len(), 16);
    // Each alone, on its own 5-tuple.
    let (b_port, a_port) = (
        ports(through_b)[0].to_string(),
        ports(through_a)[0].to_string(),
    );
    let (one, code) = trace(&lab, &[&to, "--source-port", &b_port, "--rate", "500/s"]);
    assert_eq!(code, 3, "{one}");
    assert_eq!(one["ports"][0].as_u64().unwrap().to_string(), b_port);
    assert_b_path(&one, R_V4, B_V4, S_V4);
    assert_eq!(one["suspect"], one["paths"][0]["suspect"]);
    let (one, code) = trace(&lab, &[&to, "--source-port", &a_port, "--rate", "500/s"]);
    assert_eq!(code, 0, "{one}");
    assert_eq!(one["suspect"], Value::Null);
    assert_eq!(address(at(&one["hops"], 2)), A_V4);
    assert_eq!(at(&one["hops"], 3)["loss"], 0.0);
}
