//! RFC 8972 STAMP extensions between Synapse's own client and reflector,
//! through the real binary: every TLV's values where both ends can check
//! them (the two per-packet logs join on the sequence number), and the
//! reflector's handling of unknown, malformed and unauthenticated TLVs,
//! driven by requests built here octet by octet, not by Synapse's codec.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::collections::HashMap;
use std::net::UdpSocket;
use std::process::Stdio;
use std::time::Duration;

/// `synapse server` with STAMP on its own port; its guard, stdout and the
/// STAMP port.
fn stamp_server(extra: &[&str]) -> (Server, u16) {
    let (echo, stamp) = (free_udp_port(), free_udp_port());
    let child = synapse()
        .args(["server", "--no-ui", "--bind", &format!("127.0.0.1:{echo}")])
        .args(["--stamp-port", &stamp.to_string()])
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (guard, stdout, _) = wait_until_ready(child);
    (Server { guard, stdout }, stamp)
}

/// A CSV file as rows of named fields.
fn csv(path: &std::path::Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect()
}

fn ns(field: &str) -> Option<u64> {
    let (s, f) = field.split_once('.')?;
    Some(s.parse::<u64>().ok()? * 1_000_000_000 + f.parse::<u64>().ok()?)
}

/// Follow-Up Telemetry: each answer's kernel send time comes back in the
/// next answer. The client's log then holds, for every packet but the
/// last (nothing follows it), the T3_DRV the server's own log wrote for
/// that answer, and the dwell runs to it: T3_DRV − T2, which the server's
/// log calls RESPONSE.
#[test]
fn follow_up_gives_the_client_the_reflectors_kernel_send_time() {
    let dir = tempfile::tempdir().unwrap();
    let (srv_log, cli_log) = (dir.path().join("srv.csv"), dir.path().join("cli.csv"));
    let (server, port) = stamp_server(&["--log", srv_log.to_str().unwrap()]);
    let j = success_json(
        &synapse()
            .args(["client", &format!("127.0.0.1:{port}"), "--stamp"])
            .args(["--tlv", "follow-up", "--packets", "300", "--warmup", "5"])
            .args(["--log", cli_log.to_str().unwrap(), "--json"])
            .args(["--threshold", "1s"])
            .output()
            .unwrap(),
    );
    let _ = server.interrupt_and_collect();
    let fu = &j["stamp_extensions"]["follow_up"];
    assert_eq!(fu["none_yet"], 1, "the session's first answer: {j}");
    assert_eq!(fu["matched"], 304, "every answer but the last: {j}");
    assert_eq!(fu["unmatched"], 0, "{j}");
    let dwell = j["breakdown"]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["segment"] == "server_dwell")
        .unwrap()
        .clone();
    assert_eq!(
        (dwell["samples"].as_u64(), dwell["missing"].as_u64()),
        (Some(299), Some(1)),
        "{dwell}"
    );
    assert!(
        j["breakdown"]["points"].to_string().contains("Follow-Up"),
        "{j}"
    );
    // The server's rows by the sequence number on the wire (client k + 1).
    let server_rows: HashMap<u64, HashMap<String, String>> = csv(&srv_log)
        .into_iter()
        .filter(|r| r["PROTO"] == "stamp")
        .map(|r| (r["SEQ"].parse().unwrap(), r))
        .collect();
    let rows = csv(&cli_log);
    assert_eq!(rows.len(), 300);
    let mut filled = 0;
    for r in &rows {
        let k: u64 = r["SEQ"].parse().unwrap();
        let s = &server_rows[&(k + 1)];
        let Some(t3) = ns(&r["T3_DRV"]) else {
            assert_eq!(k, 304, "only the last packet lacks its follow-up");
            continue;
        };
        filled += 1;
        let theirs = ns(&s["T3_DRV"]).unwrap();
        assert!(t3.abs_diff(theirs) <= 1, "packet {k}: {t3} vs {theirs}");
        let t2 = ns(&r["T2_SW"]).unwrap();
        let response: u64 = s["RESPONSE"].parse().unwrap();
        assert!(
            (t3 - t2).abs_diff(response) <= 2,
            "packet {k}: dwell vs RESPONSE"
        );
        assert_eq!(r["T3_HW"], "", "no NIC clock here");
    }
    assert_eq!(filled, 299);
}

/// Every TLV against Synapse's own reflector on loopback: the class of
/// service per leg as marked, the addresses and ports as this client sent
/// them (no NAT), the counters matching what was sent, the clock as this
/// host's kernel says, and no flag raised.
#[test]
fn every_tlv_comes_back_answered_from_the_synapse_reflector() {
    let (server, port) = stamp_server(&[]);
    let packets = 400u64;
    let j = success_json(
        &synapse()
            .args(["client", &format!("127.0.0.1:{port}"), "--stamp"])
            .args(["--tlv", "all", "--dscp", "AF41", "--ecn", "ect1"])
            .args([
                "--packets",
                &packets.to_string(),
                "--warmup",
                "10",
                "--json",
            ])
            .args(["--threshold", "1s", "--size", "200"])
            .output()
            .unwrap(),
    );
    let (out, _) = server.interrupt_and_collect();
    let received = j["packets"]["received"].as_u64().unwrap();
    assert_eq!(received, packets, "{j}");
    assert_eq!(j["config"]["size"], 200, "padded to --size: {j}");
    let cos = &j["class_of_service"];
    for leg in ["forward", "backward"] {
        let l = &cos[leg];
        assert_eq!(l["reported"], received, "{leg}: {cos}");
        assert_eq!(
            l["dscp_received"],
            serde_json::json!([{"dscp": 34, "name": "AF41", "count": received}]),
            "{leg}"
        );
        assert_eq!(l["remarked"], 0, "{leg}");
        assert_eq!(l["ecn_received"]["ect1"], received, "{leg}");
        assert_eq!(l["ce"], 0, "{leg}");
    }
    let e = &j["stamp_extensions"];
    assert_eq!(
        (
            e["unrecognized"].as_u64(),
            e["malformed"].as_u64(),
            e["integrity_failed"].as_u64()
        ),
        (Some(0), Some(0), Some(0)),
        "{e}"
    );
    let loc = &e["location"];
    assert_eq!(loc["source_seen"], j["config"]["local"], "{e}");
    assert_eq!(loc["destination_seen"], format!("127.0.0.1:{port}"), "{e}");
    assert_eq!(loc["source_translated"], false);
    let d = &e["direct"];
    assert_eq!(
        d["sender_transmitted"],
        packets + 10,
        "warm-up counted: {e}"
    );
    assert_eq!(d["reflector_received"], packets + 10);
    assert_eq!(d["reflector_transmitted"], packets + 9, "before the last");
    assert_eq!(
        (d["forward_lost"].as_u64(), d["backward_lost"].as_u64()),
        (Some(0), Some(0))
    );
    let synced = synapse_engine::protocol::clock_state::ClockState::of_this_host().synchronized;
    let clock = &e["timestamp_info"];
    assert_eq!(
        clock["t2_sync"],
        if synced { "ntp" } else { "local" },
        "{e}"
    );
    assert_eq!(
        (clock["t2_method"].as_str(), clock["t3_method"].as_str()),
        (Some("software"), Some("software"))
    );
    assert!(
        out.contains(&format!(
            "TLVs (RFC 8972) in {} requests: 0 unrecognized, 0 malformed, 0 failed integrity",
            packets + 10
        )),
        "{out}"
    );
}

/// The text report says it too, and without --stamp the CoS figures come
/// from this host alone: the forward leg's arrival is not reported.
#[test]
fn plain_echo_reads_the_reply_leg_only() {
    let (server, port) = start_server(&[]);
    let j = success_json(
        &synapse()
            .args(["client", &format!("127.0.0.1:{port}"), "--dscp", "EF"])
            .args(["--packets", "200", "--json", "--threshold", "1s"])
            .output()
            .unwrap(),
    );
    drop(server);
    let cos = &j["class_of_service"];
    assert_eq!(cos["forward"]["reported"], 0, "{cos}");
    assert_eq!(cos["forward"]["not_reported"], 200);
    assert_eq!(
        cos["forward"]["remarked"],
        serde_json::Value::Null,
        "not 0: unknown"
    );
    assert_eq!(cos["forward"]["dscp_sent"][0]["name"], "EF");
    // Synapse's echo reflector answers with the system's marks.
    assert_eq!(cos["backward"]["reported"], 200, "{cos}");
    assert_eq!(cos["backward"]["dscp_received"][0]["dscp"], 0);
    assert_eq!(
        cos["backward"]["dscp_sent"],
        serde_json::json!([]),
        "nobody said"
    );
    assert!(j["stamp_extensions"].is_null());
}

/// Options that cannot work are refused before anything is sent.
#[test]
fn bad_class_of_service_and_tlv_options_are_usage_errors() {
    for (args, says) in [
        (&["--dscp", "64"][..], "outside 0..=63"),
        (&["--dscp", "XF"][..], "not a DSCP"),
        (&["--ecn", "ect2"][..], "not an ECN setting"),
        (&["--tlv", "cos"][..], "--stamp"),
        (&["--stamp", "--tlv", "cos,bogus"][..], "'bogus'"),
    ] {
        let out = synapse().arg("client").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

const U: u8 = 0x80;
const M: u8 = 0x40;
const I: u8 = 0x20;

/// An RFC 8762 figure 3 session-sender packet, sequence `seq`, then `tlvs`.
fn request(seq: u32, tlvs: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend(seq.to_be_bytes());
    p.extend([0xEB, 0x0A, 0x1B, 0x2C, 0, 0, 0, 0]); // T1
    p.extend([0x00, 0x01]); // error estimate: S=0, scale 0, multiplier 1
    p.extend([0u8; 30]);
    p.extend(tlvs);
    p
}

fn tlv(flags: u8, kind: u8, value: &[u8]) -> Vec<u8> {
    let mut t = vec![flags, kind];
    t.extend((value.len() as u16).to_be_bytes());
    t.extend(value);
    t
}

/// One session-sender: a socket of its own, so the reflector counts its
/// requests as one session.
fn sender() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s
}

fn exchange(s: &UdpSocket, port: u16, datagram: &[u8]) -> Vec<u8> {
    s.send_to(datagram, ("127.0.0.1", port)).unwrap();
    let mut buf = [0u8; 2048];
    let (n, _) = s.recv_from(&mut buf).unwrap();
    buf[..n].to_vec()
}

/// RFC 8972 §4 at the reflector, from requests built here: an unknown
/// type keeps U and its value; a CoS TLV is answered (U cleared, DSCP2 the
/// request's, here 0); a Direct Measurement TLV with a length its type does
/// not allow gets M and stops the processing (the CoS TLV after it keeps
/// U, unfilled); a TLV claiming more octets than the datagram holds gets
/// M and nothing past the datagram is read. Every answer is exactly as long
/// as its request, and every refusal is counted in the totals (U: the
/// unknown type, and the TLV left unprocessed after a malformed one).
#[test]
fn the_reflector_flags_unknown_and_malformed_tlvs_and_counts_them() {
    let (server, port) = stamp_server(&[]);
    let s = sender();
    let cos = tlv(U, 4, &[0xb8, 0, 0x80, 0]);
    // 1: unknown type 200, then CoS.
    let mut tlvs = tlv(U, 200, b"keep");
    tlvs.extend(&cos);
    let req = request(1, &tlvs);
    let ans = exchange(&s, port, &req);
    assert_eq!(ans.len(), req.len());
    assert_eq!(
        &ans[44..52],
        &tlv(U, 200, b"keep")[..],
        "unknown: as it came, U kept"
    );
    assert_eq!(ans[52], 0, "CoS understood: U cleared");
    assert_eq!(ans[52 + 4] >> 2, 46, "DSCP1 kept");
    assert_eq!(
        (ans[52 + 5] >> 2) & 3,
        0,
        "ECN of the request as it arrived: Not-ECT"
    );
    assert_eq!((ans[52 + 6] >> 4) & 3, 3, "RPE: the reply marked as asked");
    // 2: a Direct Measurement TLV of 8 octets (12 required), then CoS.
    let mut tlvs = tlv(U, 5, &[0; 8]);
    tlvs.extend(&cos);
    let req = request(2, &tlvs);
    let ans = exchange(&s, port, &req);
    assert_eq!(ans.len(), req.len());
    assert_eq!(ans[44], M, "bad length: malformed");
    assert_eq!(ans[56], U, "after a malformed TLV: not processed");
    assert_eq!(&ans[60..64], &cos[4..], "and not filled");
    // 3: CoS, then a header claiming 1,000 octets with 6 left.
    let mut tlvs = cos.clone();
    tlvs.extend(tlv(U, 3, &[1, 2]));
    let n = tlvs.len();
    tlvs[n - 4..n - 2].copy_from_slice(&1000u16.to_be_bytes());
    let req = request(3, &tlvs);
    let ans = exchange(&s, port, &req);
    assert_eq!(ans.len(), req.len(), "never longer");
    assert_eq!(ans[44], 0, "the CoS TLV before it answered");
    assert_eq!(ans[52], M, "runs past the datagram: malformed");
    assert_eq!(&ans[56..], &[1, 2], "its octets untouched");
    let (out, _) = server.interrupt_and_collect();
    assert!(
        out.contains(
            "TLVs (RFC 8972) in 3 requests: 2 unrecognized, 2 malformed, 0 failed integrity"
        ),
        "{out}"
    );
}

const KEY: &str = "00112233445566778899aabbccddeeff";

fn hmac16(key: &[u8], parts: &[&[u8]]) -> [u8; 16] {
    use hmac::{KeyInit, Mac};
    let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
    for p in parts {
        m.update(p);
    }
    let full = m.finalize().into_bytes();
    full[..16].try_into().unwrap()
}

/// An authenticated (112-octet) request with `tlvs`, its base HMAC over
/// octets 0..96.
fn authenticated_request(key: &[u8], seq: u32, tlvs: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 112];
    p[..4].copy_from_slice(&seq.to_be_bytes());
    p[4..12].copy_from_slice(&[0xEB, 0x0A, 0x1B, 0x2C, 0, 0, 0, 0]);
    p[16..24].copy_from_slice(&[0xEB, 0x0A, 0x1B, 0x2C, 0, 0, 0, 0]);
    p[24..26].copy_from_slice(&[0x00, 0x01]);
    let mac = hmac16(key, &[&p[..96]]);
    p[96..112].copy_from_slice(&mac);
    p.extend(tlvs);
    p
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// RFC 8972 §4.8 in authenticated mode: TLVs without an HMAC TLV, or with
/// one that does not verify, all come back with I and unfilled; with one
/// that verifies (HMAC-SHA-256 over the sequence number and the TLVs
/// before it, 16 octets), they are answered and the answer's own HMAC TLV
/// verifies over the answer's sequence number.
#[test]
fn authenticated_tlvs_are_answered_only_under_a_verifying_hmac_tlv() {
    let key = hex(KEY);
    let file = key_file(&format!("{KEY}\n"), 0o600);
    let (server, port) = stamp_server(&["--hmac-key-file", file.path().to_str().unwrap()]);
    let s = sender();
    let dm = tlv(U, 5, &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
    // No HMAC TLV.
    let ans = exchange(&s, port, &authenticated_request(&key, 1, &dm));
    assert_eq!(ans[112], I, "integrity failed");
    assert_eq!(&ans[120..128], &[0; 8], "counters not filled");
    // A wrong HMAC TLV.
    let mut wrong = dm.clone();
    wrong.extend(tlv(U, 8, &[0xAA; 16]));
    let ans = exchange(&s, port, &authenticated_request(&key, 2, &wrong));
    assert_eq!((ans[112], ans[128]), (I, I));
    // A right one.
    let mut signed = dm.clone();
    let mac = hmac16(&key, &[&3u32.to_be_bytes(), &dm]);
    signed.extend(tlv(U, 8, &mac));
    let req = authenticated_request(&key, 3, &signed);
    let ans = exchange(&s, port, &req);
    assert_eq!(ans.len(), req.len());
    assert_eq!((ans[112], ans[128]), (0, 0), "answered");
    assert_eq!(&ans[120..124], &[0, 0, 0, 3], "R_RxC: its third request");
    let theirs = hmac16(&key, &[&ans[..4], &ans[112..128]]);
    assert_eq!(&ans[132..148], &theirs, "the answer's HMAC TLV verifies");
    let (out, _) = server.interrupt_and_collect();
    assert!(
        out.contains("in 3 requests: 0 unrecognized, 0 malformed, 2 failed integrity"),
        "{out}"
    );
}

/// Class of service over IPv6: the traffic class set once on the client's
/// socket (`IPV6_TCLASS`), read on arrival at both ends
/// (`IPV6_RECVTCLASS`); every packet of both legs arrives as it was sent.
#[test]
fn class_of_service_over_ipv6_reads_both_legs() {
    if UdpSocket::bind("[::1]:0").is_err() {
        announce::skip(
            "class_of_service_over_ipv6_reads_both_legs",
            "no IPv6 loopback",
        );
        return;
    }
    let (echo, stamp) = (free_udp_port(), free_udp_port());
    let child = synapse()
        .args(["server", "--no-ui", "--bind", &format!("[::1]:{echo}")])
        .args(["--stamp-port", &stamp.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (guard, stdout, _) = wait_until_ready(child);
    let server = Server { guard, stdout };
    let j = success_json(
        &synapse()
            .args(["client", &format!("[::1]:{stamp}"), "--stamp"])
            .args(["--dscp", "AF41", "--ecn", "ect1"])
            .args(["--packets", "200", "--json", "--threshold", "1s"])
            .output()
            .unwrap(),
    );
    drop(server);
    for leg in ["forward", "backward"] {
        let l = &j["class_of_service"][leg];
        assert_eq!(l["reported"], 200, "{leg}: {l}");
        assert_eq!(l["dscp_sent"][0]["name"], "AF41", "{leg}: {l}");
        assert_eq!(l["dscp_received"][0]["name"], "AF41", "{leg}: {l}");
        assert_eq!(l["dscp_received"][0]["count"], 200, "{leg}: {l}");
        assert_eq!(l["ecn_received"]["ect1"], 200, "{leg}: {l}");
        assert_eq!(
            (l["remarked"].as_u64(), l["ce"].as_u64()),
            (Some(0), Some(0)),
            "{leg}: {l}"
        );
    }
}
