//! What the reflector says about the path and its clock, through a real
//! router (three namespaces, `tests/it/common/routed.rs`): a NAT on the router
//! (iptables `MASQUERADE`) shows in the Location TLV (RFC 8972 §4.2), and
//! the warnings about the one-way figures follow what the Timestamp
//! Information TLV (§4.3) and this host's kernel say. Root, `ip` and
//! `iptables` with the nat table are needed; without them the tests say so
//! and pass.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::routed::{A_ADDR, B_ADDR, Routed};
use crate::common::*;
use std::process::Command;

/// The router, rewriting the requests' source to its own address on B's
/// side (`10.232.2.1`), or `None` when this machine cannot.
fn natted(test: &str) -> Option<Routed> {
    if !netns::usable(test) {
        return None;
    }
    let t = Routed::new();
    let ok = Command::new("ip")
        .args(["netns", "exec", &t.r, "iptables", "-t", "nat", "-A"])
        .args(["POSTROUTING", "-o", "cosrb", "-j", "MASQUERADE"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        announce::skip(test, "iptables has no MASQUERADE target here");
        return None;
    }
    Some(t)
}

#[test]
fn a_nat_on_the_path_is_reported_from_the_location_tlv() {
    let Some(t) = natted("a_nat_on_the_path_is_reported_from_the_location_tlv") else {
        return;
    };
    let server = t.server();
    let j = t.client(&format!("{B_ADDR}:8862"), &["--stamp", "--tlv", "location"]);
    let loc = &j["stamp_extensions"]["location"];
    let seen = loc["source_seen"].as_str().unwrap();
    let sent = loc["source_sent"].as_str().unwrap();
    assert!(
        seen.starts_with("10.232.2.1:"),
        "the router's address: {loc}"
    );
    assert!(sent.starts_with(&format!("{A_ADDR}:")), "{loc}");
    assert_eq!(loc["source_translated"], true, "{loc}");
    assert_eq!(loc["destination_translated"], false, "{loc}");
    assert!(
        loc["destination_seen"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{B_ADDR}:8862")),
        "{loc}"
    );
    drop(server);
}

/// Across the router the reflector is another host to the client, so the
/// one-way figures rest on two clocks. Both ends here read one kernel's
/// clock state, so the reflector's Timestamp Information and this host's
/// own check agree, and each warning is given exactly when its clock is
/// unsynchronised.
#[test]
fn one_way_warnings_follow_the_timestamp_information_tlv() {
    if !netns::usable("one_way_warnings_follow_the_timestamp_information_tlv") {
        return;
    }
    let t = Routed::new();
    let server = t.server();
    let j = t.client(
        &format!("{B_ADDR}:8862"),
        &["--stamp", "--tlv", "timestamp-info"],
    );
    let ext = &j["stamp_extensions"];
    let clock = &ext["timestamp_info"];
    let synced = clock["synchronised"].as_bool().unwrap();
    assert_eq!(clock["t2_method"], "software", "{clock}");
    let sync = clock["t2_sync"].as_str().unwrap();
    assert_eq!(sync == "local", !synced, "{clock}");
    let warnings: Vec<&str> = ext["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let reflector = warnings
        .iter()
        .any(|w| w.contains("rest on the reflector's clock") && w.contains(sync));
    let host = warnings
        .iter()
        .any(|w| w.contains("rest on this host's clock"));
    assert_eq!((reflector, host), (!synced, !synced), "{ext}");
    assert_eq!(warnings.len(), if synced { 0 } else { 2 }, "{ext}");
    drop(server);
}
