//! System calls per round trip, counted by `strace -c -f` on the real
//! client: a ping-pong costs one send and one receive, as in a bare C
//! loop, whether it blocks or busy-polls. Two runs of different lengths
//! are counted and subtracted, so start-up and the report's own calls
//! (a constant) fall out and what is left is the per-packet cost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use crate::common::{start_server, synapse, tool};
use std::collections::BTreeMap;
use std::path::Path;

/// Calls per syscall name: (all calls, failed calls).
type Counts = BTreeMap<String, (u64, u64)>;

/// Reads `strace -c`'s table.
fn parse(table: &str) -> Counts {
    let mut counts = Counts::new();
    for line in table.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        // % time, seconds, usecs/call, calls, [errors,] syscall
        if cols.len() < 5 || cols[0].parse::<f64>().is_err() || cols.last() == Some(&"total") {
            continue;
        }
        let name = cols[cols.len() - 1].to_string();
        let calls = cols[3].parse().unwrap();
        let errors = if cols.len() == 6 {
            cols[4].parse().unwrap()
        } else {
            0
        };
        counts.insert(name, (calls, errors));
    }
    counts
}

/// The client's calls for a run of `packets`, under strace.
fn count(strace: &Path, port: u16, packets: u64, extra: &[&str]) -> Counts {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("strace.txt");
    let base = synapse();
    let status = std::process::Command::new(strace)
        .args(["-f", "-c", "-o"])
        .arg(&out)
        .arg(base.get_program())
        .args(["client", &format!("127.0.0.1:{port}"), "--json"])
        .args(["--packets", &packets.to_string(), "--warmup", "100"])
        .args(extra)
        .envs(base.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(common::scratch_dir())
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let json = common::json_of(&status.stdout);
    assert_eq!(
        json["packets"]["received"], packets,
        "every packet answered"
    );
    parse(&std::fs::read_to_string(out).unwrap())
}

/// Calls per packet between two runs, and which calls they were.
fn per_packet(
    strace: &Path,
    extra: &[&str],
    successful_only: bool,
) -> (f64, BTreeMap<String, f64>) {
    // Starved of CPU, a blocking receive could outlast its timeout and
    // wait again: the count is taken with no other measurement running.
    let _one = common::one_at_a_time();
    let (_server, port) = start_server(&[]);
    let (short, long) = (1_000u64, 6_000u64);
    let a = count(strace, port, short, extra);
    let b = count(strace, port, long, extra);
    let calls = |c: &Counts, name: &str| {
        c.get(name)
            .map_or(0, |(n, e)| if successful_only { n - e } else { *n })
    };
    let mut each = BTreeMap::new();
    let mut total = 0.0;
    for name in b.keys() {
        let extra_calls = calls(&b, name) as f64 - calls(&a, name) as f64;
        let per = extra_calls / (long - short) as f64;
        total += per;
        if per > 0.01 {
            each.insert(name.clone(), per);
        }
    }
    (total, each)
}

/// Blocking mode waits in the receive itself: one send and one receive
/// per round trip, no `ppoll` (before, it was three).
#[test]
fn a_blocking_round_trip_is_two_system_calls() {
    let Some(strace) = tool("strace", "a_blocking_round_trip_is_two_system_calls") else {
        return;
    };
    for extra in [&["--timestamps", "user"][..], &[]] {
        let (total, each) = per_packet(&strace, extra, false);
        println!("blocking {extra:?}: {total:.3} per round trip: {each:?}");
        assert!(
            total <= 2.05,
            "{extra:?}: {total:.3} per round trip: {each:?}"
        );
        assert!(total >= 1.95, "a send and a receive each: {each:?}");
        assert!(!each.contains_key("ppoll"), "{each:?}");
    }
}

/// Busy-polling spins on a non-blocking receive, which fails (`EAGAIN`)
/// until the reply is there; the calls that do something are one send and
/// one receive per round trip.
#[test]
fn a_busy_poll_round_trip_is_two_successful_system_calls() {
    let test = "a_busy_poll_round_trip_is_two_successful_system_calls";
    let Some(strace) = tool("strace", test) else {
        return;
    };
    let (total, each) = per_packet(&strace, &["--busy-poll"], true);
    println!("busy-poll: {total:.3} successful per round trip: {each:?}");
    assert!(total <= 2.05, "{total:.3} per round trip: {each:?}");
    assert!(total >= 1.95, "a send and a receive each: {each:?}");
}

/// TCP over one connection: a request is one `send`, its reply one
/// receive (the 8-byte reply comes in one segment), blocking or spinning;
/// the kernel's `TCP_INFO` is read now and then, never per round trip.
#[test]
fn a_tcp_round_trip_is_two_system_calls() {
    let Some(strace) = tool("strace", "a_tcp_round_trip_is_two_system_calls") else {
        return;
    };
    for (extra, successful_only) in [
        (&["--tcp", "--timestamps", "user"][..], false),
        (&["--tcp"][..], false),
        (&["--tcp", "--busy-poll"][..], true),
    ] {
        let (total, each) = per_packet(&strace, extra, successful_only);
        println!("{extra:?}: {total:.3} per round trip: {each:?}");
        // `TCP_INFO` is read around a sampled transaction (one in
        // --tx-stamp-every, drawn at random) and once a second: counted
        // apart, as it follows the sampling and the clock, not the round
        // trips (a starved machine's slow round trips see more seconds).
        let info = each.get("getsockopt").copied().unwrap_or(0.0);
        assert!(info <= 0.1, "{extra:?}: TCP_INFO per round trip: {each:?}");
        let calls = total - info;
        assert!(
            calls <= 2.05,
            "{extra:?}: {calls:.3} per round trip: {each:?}"
        );
        assert!(calls >= 1.95, "a send and a receive each: {each:?}");
        assert!(!each.contains_key("ppoll"), "{each:?}");
    }
}

#[test]
fn the_strace_table_is_read() {
    let table = "% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 48.81    0.011433           0     20122        22 recvfrom
 46.21    0.010824           0     20100           sendto
------ ----------- ----------- --------- --------- ----------------
100.00    0.023427           0     40424        29 total
";
    let c = parse(table);
    assert_eq!(c["recvfrom"], (20122, 22));
    assert_eq!(c["sendto"], (20100, 0));
    assert_eq!(c.len(), 2);
}
