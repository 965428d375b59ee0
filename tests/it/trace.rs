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
    netns::usable(test)
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
    assert_ne!(suspect["from"]["address"], r, "R is never blamed");
}

/// Whether a suspect's 95 % interval holds B's 30 %.
fn covers_b_drop(suspect: &Value) -> bool {
    let low = suspect["loss_low"].as_f64().unwrap();
    let high = suspect["loss_high"].as_f64().unwrap();
    low <= B_DROP && B_DROP <= high
}

/// Runs `trace` (which asserts everything else about its run) until the
/// suspect it returns has 30 % within its interval, at most three times:
/// a 95 % interval misses the truth one run in twenty, so a miss is
/// measured again (each said), never widened; three in a row fail.
fn until_covered(what: &str, mut trace: impl FnMut() -> Value) {
    for attempt in 1..=3 {
        let suspect = trace();
        if covers_b_drop(&suspect) {
            return;
        }
        println!(
            "{what}, run {attempt}: 30 % outside the interval, as one run in 20 is: {suspect}"
        );
    }
    panic!("{what}: 30 % outside the 95 % interval three runs in a row");
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
    let to = format!("{S_V4}:8080");
    let mut ports = (Vec::new(), Vec::new());
    until_covered("the tree", || {
        let before = lab.udp_sent(&lab.c, false);
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
        let list = |p: &Value| -> Vec<u64> {
            p["ports"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect()
        };
        ports = (list(through_a), list(through_b));
        assert_eq!(ports.0.len() + ports.1.len(), 16);
        through_b["suspect"].clone()
    });
    // Each alone, on its own 5-tuple.
    let (b_port, a_port) = (ports.1[0].to_string(), ports.0[0].to_string());
    until_covered("a port through B", || {
        let (one, code) = trace(&lab, &[&to, "--source-port", &b_port, "--rate", "500/s"]);
        assert_eq!(code, 3, "{one}");
        assert_eq!(one["ports"][0].as_u64().unwrap().to_string(), b_port);
        assert_b_path(&one, R_V4, B_V4, S_V4);
        assert_eq!(one["suspect"], one["paths"][0]["suspect"]);
        one["suspect"].clone()
    });
    let (one, code) = trace(&lab, &[&to, "--source-port", &a_port, "--rate", "500/s"]);
    assert_eq!(code, 0, "{one}");
    assert_eq!(one["suspect"], Value::Null);
    assert_eq!(address(at(&one["hops"], 2)), A_V4);
    assert_eq!(at(&one["hops"], 3)["loss"], 0.0);
}

/// `synapse trace ARGS` (text) in C: its stdout and exit status.
fn trace_text(lab: &EcmpLab, args: &[&str]) -> (String, i32) {
    let out = netns::synapse_in(&lab.c)
        .arg("trace")
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap(),
    )
}

/// The ports of a quick trace to `to` from 16 ports starting at `first`
/// that went by A, and those that went by B (hops at TTL 2 `a`, `b`).
/// 96 probes at 100 a second: R's answers (a burst of six) mostly go.
fn ports_by_next_hop(
    lab: &EcmpLab,
    to: &str,
    first: u16,
    a: &str,
    b: &str,
) -> (Vec<u16>, Vec<u16>) {
    let first = first.to_string();
    let (t, _) = trace(
        lab,
        &[
            to,
            "--source-port",
            &first,
            "--paths",
            "16",
            "--probes",
            "3",
            "--max-ttl",
            "2",
        ],
    );
    let mut by = (Vec::new(), Vec::new());
    for p in t["paths"].as_array().unwrap() {
        let ports = p["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u16);
        match address(at(&p["hops"], 2)) {
            x if x == a => by.0.extend(ports),
            x if x == b => by.1.extend(ports),
            other => panic!("TTL 2 answered by {other}: {t}"),
        }
    }
    assert!(
        !by.0.is_empty() && !by.1.is_empty(),
        "16 ports all one way: {t}"
    );
    by
}

/// A closed port on S: its port unreachable, rate-limited like R's
/// time-exceeded, is the only hop past B that shows the loss, and one
/// rate-limited answer confirms nothing: inconclusive (4), with the
/// candidate B → S said. (S answers six at once, then one a second: one
/// trace's worth.) `--resolve` names each hop from C's hosts file.
#[test]
fn a_port_unreachable_alone_confirms_nothing() {
    let test = "a_port_unreachable_alone_confirms_nothing";
    if !lab_possible(test) {
        return;
    }
    let _alone = one_at_a_time();
    let lab = EcmpLab::new();
    let to = format!("{S_V4}:9");
    let (_, through_b) = ports_by_next_hop(&lab, &to, 41_000, A_V4, B_V4);
    let port = through_b[0].to_string();
    lab.name_hosts(&[(R_V4, "r.lab"), (B_V4, "b.lab"), (S_V4, "s.lab")]);
    let (t, code) = trace(
        &lab,
        &[&to, "--source-port", &port, "--rate", "500/s", "--resolve"],
    );
    assert_eq!(code, 4, "{t}");
    let names: Vec<&Value> = t["hops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["names"][0])
        .collect();
    assert_eq!(names, ["r.lab", "b.lab", "s.lab"], "--resolve: {t}");
    assert_eq!(t["verdict"], "inconclusive");
    assert_eq!(t["suspect"], Value::Null);
    let path = &t["paths"][0];
    assert_eq!(path["candidate"]["from"]["address"], B_V4, "{t}");
    assert_eq!(path["candidate"]["to"]["address"], S_V4);
    let end = at(&t["hops"], 3);
    assert_eq!(end["answer"], "port_unreachable", "{end}");
    assert_eq!(end["state"], "lossy");
    assert_eq!(at(&t["hops"], 1)["state"], "rate_limited");
}

/// IPv6, the same lab: eight ports, both next hops, the link after B
/// blamed, 30 % within its interval, R never blamed.
#[test]
fn over_ipv6_the_link_after_b_is_blamed_too() {
    let test = "over_ipv6_the_link_after_b_is_blamed_too";
    if !lab_possible(test) {
        return;
    }
    let _alone = one_at_a_time();
    let lab = EcmpLab::new();
    let _s = lab.reflectors();
    let to = format!("[{S_V6}]:8080");
    until_covered("IPv6", || {
        let (t, code) = trace(&lab, &[&to, "--paths", "8", "--rate", "1000/s"]);
        let paths = t["paths"].as_array().unwrap();
        assert_eq!(
            paths.len(),
            2,
            "eight ports, both next hops (all one way: 1 in 128): {t}"
        );
        assert_eq!(code, 3, "{t}");
        let via = |x: &str| {
            paths
                .iter()
                .find(|p| address(at(&p["hops"], 2)) == x)
                .unwrap()
        };
        let (via_a, via_b) = (via(A_V6), via(B_V6));
        let suspect = &via_b["suspect"];
        assert_eq!(suspect["from"]["address"], B_V6, "{t}");
        assert_eq!(suspect["to"]["address"], S_V6);
        assert_eq!(via_a["verdict"], "no_suspect", "{via_a}");
        assert_eq!(t["blamed"]["from"], B_V6);
        assert_eq!(address(at(&via_b["hops"], 1)), R_V6);
        assert_ne!(suspect["from"]["address"], R_V6, "R is never blamed");
        suspect.clone()
    });
}

/// Debian's `traceroute -U --sport P -p PORT`, which pins the flow's 5-tuple
/// as `synapse trace` does, finds the same router at every hop it hears,
/// for a port through A and one through B. R hashes on the headers' 5-tuple
/// here (`fib_multipath_hash_policy=3`): traceroute connects its sockets, and
/// on a host's own veth links policy 1 would hash on the random flow hash
/// Linux gives a connected socket, which travels with its packets, not on
/// the 5-tuple.
#[test]
fn traceroute_finds_the_same_hops() {
    let test = "traceroute_finds_the_same_hops";
    if !lab_possible(test) {
        return;
    }
    let Some(traceroute) = tool("traceroute", test) else {
        return;
    };
    let _alone = one_at_a_time();
    let lab = EcmpLab::new();
    lab.exec(
        &lab.r,
        "sysctl",
        &[
            "-qw",
            "net.ipv4.fib_multipath_hash_policy=3",
            "net.ipv4.fib_multipath_hash_fields=0x0037",
        ],
    );
    let to = format!("{S_V4}:9");
    let (through_a, through_b) = ports_by_next_hop(&lab, &to, 42_000, A_V4, B_V4);
    for (port, next) in [(through_a[0], A_V4), (through_b[0], B_V4)] {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", &lab.c])
            .arg(&traceroute)
            .args([
                "-n",
                "-U",
                &format!("--sport={port}"),
                "-p",
                "9",
                "-q",
                "3",
                "-N",
                "1",
            ])
            .args(["-w", "1", "-m", "5", S_V4])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        println!("traceroute from port {port}:\n{text}");
        // "TTL ADDR RTT ms [ADDR RTT ms | RTT ms | *]…": every address heard.
        let heard: Vec<(u64, Vec<String>)> = text
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let ttl = w.next()?.parse().ok()?;
                let addrs = w
                    .filter(|x| x.parse::<std::net::IpAddr>().is_ok())
                    .map(String::from);
                Some((ttl, addrs.collect()))
            })
            .collect();
        let want: [(u64, &str); 3] = [(1, R_V4), (2, next), (3, S_V4)];
        assert_eq!(
            heard.len(),
            3,
            "three hops, then the port unreachable: {text}"
        );
        for (ttl, addrs) in &heard {
            let expected = want[(*ttl - 1) as usize].1;
            assert!(
                addrs.iter().all(|a| a == expected),
                "TTL {ttl}: {addrs:?}, synapse: {expected}"
            );
        }
        assert!(
            !heard[1].1.is_empty() && !heard[2].1.is_empty(),
            "A or B and S answer: {text}"
        );
    }
}

/// Bad input and faults end with a clear report and their exit status,
/// never a hang: a network R has no route to (its ICMP net unreachable,
/// exit 2), a destination that answers nothing (exit 4, and the rounds
/// after the first stop one hop past the last that answered), a
/// `--max-ttl` short of the destination (exit 4). And the rate stated is
/// never exceeded: C's own firewall counts the probes beyond 1.25 times
/// it (a token bucket of two), and counts none.
#[test]
fn faults_end_in_a_clear_report_and_the_rate_holds() {
    let test = "faults_end_in_a_clear_report_and_the_rate_holds";
    if !lab_possible(test) {
        return;
    }
    let _alone = one_at_a_time();
    let lab = EcmpLab::new();
    let _s = lab.reflectors();
    let (t, code) = trace(&lab, &["10.99.0.1", "--probes", "2"]);
    assert_eq!(code, 2, "{t}");
    assert_eq!(t["verdict"], "unreachable");
    assert_eq!(t["reason"]["unreachable"]["address"], R_V4, "{t}");
    // R's no-route errors cost two of its tokens each (ip_error's and
    // icmp_send's limits share them): let them come back.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let (text, code) = trace_text(&lab, &["10.99.0.1", "--probes", "2"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(&format!(
            "Unreachable: {R_V4} (hop 1) says network unreachable"
        )),
        "{text}"
    );

    lab.exec(
        &lab.s,
        "iptables",
        &["-A", "INPUT", "-p", "udp", "--dport", "7000", "-j", "DROP"],
    );
    let to = format!("{S_V4}:7000");
    let (t, code) = trace(
        &lab,
        &[&to, "--probes", "10", "--max-ttl", "6", "--rate", "1000/s"],
    );
    assert_eq!(code, 4, "{t}");
    assert!(
        t["reason"].as_str().unwrap().contains("never answered"),
        "{t}"
    );
    let hops = t["hops"].as_array().unwrap();
    assert_eq!(hops.len(), 6, "the first round climbs to --max-ttl: {t}");
    assert_eq!(at(&t["hops"], 3)["state"], "silent");
    assert_eq!(
        at(&t["hops"], 3)["sent"],
        10,
        "later rounds go one past the last hop heard"
    );
    assert_eq!(at(&t["hops"], 4)["sent"], 1, "and no further");

    let (t, code) = trace(
        &lab,
        &[&format!("{S_V4}:8080"), "--max-ttl", "2", "--probes", "10"],
    );
    assert_eq!(code, 4, "{t}");
    assert_eq!(t["hops"].as_array().unwrap().len(), 2);

    let chain = ["-p", "udp", "-d", S_V4, "--dport", "8080"];
    let mut limited = vec!["-A", "OUTPUT"];
    limited.extend_from_slice(&chain);
    limited.extend_from_slice(&[
        "-m",
        "limit",
        "--limit",
        "50/sec",
        "--limit-burst",
        "2",
        "-j",
        "ACCEPT",
    ]);
    lab.exec(&lab.c, "iptables", &limited);
    let mut beyond = vec!["-A", "OUTPUT"];
    beyond.extend_from_slice(&chain);
    beyond.extend_from_slice(&["-j", "ACCEPT"]);
    lab.exec(&lab.c, "iptables", &beyond);
    let (t, _) = trace(
        &lab,
        &[&format!("{S_V4}:8080"), "--probes", "10", "--rate", "40/s"],
    );
    let counts = lab.exec(&lab.c, "iptables", &["-nvxL", "OUTPUT"]);
    let packets: Vec<u64> = counts
        .lines()
        .filter(|l| l.contains("dpt:8080"))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(packets.len(), 2, "{counts}");
    assert_eq!(
        packets[0],
        t["sent"].as_u64().unwrap(),
        "every probe within the rate: {counts}"
    );
    assert_eq!(packets[1], 0, "none beyond it: {counts}");
}

/// The agent in C, probing S from eight ports with `--trace-on-loss 10`:
/// a path through B loses 30 %, so that path is traced on its own socket;
/// the trace's `--json` line names the link after B, /metrics has the
/// suspect series naming B and counts the trace's probes, which are
/// bounded; the windows count no stray and no loss on the paths through
/// A while the trace runs (its time-exceeded are the trace's, never the
/// reflector's).
#[test]
fn the_agents_triggered_trace_names_b() {
    let test = "the_agents_triggered_trace_names_b";
    if !lab_possible(test) {
        return;
    }
    let Some(_) = tool("curl", test) else {
        return;
    };
    let _alone = one_at_a_time();
    let lab = EcmpLab::new();
    let _s = lab.reflectors();
    for attempt in 1..=3 {
        let mut agent = netns::synapse_in(&lab.c)
            .args([
                "agent",
                "--no-ui",
                "--json",
                "--reflect",
                "none",
                "--name",
                "c",
            ])
            .args([
                "--metrics-listen",
                "127.0.0.1:0",
                "--peer",
                &format!("s={S_V4}:8080"),
            ])
            .args(["--paths", "8", "--interval", "10ms", "--report-every", "2s"])
            .args(["--trace-on-loss", "10"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let lines = json_lines(agent.stdout.take().unwrap());
        let metrics = metrics_address(agent.stderr.take().unwrap());
        let _agent = Guard(agent);
        let mut windows = Vec::new();
        let trace = loop {
            let v = lines
                .recv_timeout(std::time::Duration::from_secs(30))
                .expect("a window or a trace within 30 s");
            if v.get("trace").is_some() {
                break Some(v);
            }
            let lossy = v["paths"]["each"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["lost"].as_u64() > Some(2));
            windows.push(v);
            if windows.len() == 3 && !lossy {
                break None; // eight ports all through A: new ports
            }
        };
        let Some(t) = trace else {
            println!("attempt {attempt}: no port through B");
            continue;
        };
        let port = t["port"].as_u64().unwrap();
        let suspect = &t["trace"]["suspect"];
        assert_eq!(suspect["from"]["address"], B_V4, "{t}");
        assert_eq!(suspect["to"]["address"], S_V4, "{t}");
        assert_eq!(t["trace"]["ports"][0], port);
        assert!(t["trigger_loss_percent"].as_f64().unwrap() > 10.0);
        let sent = t["trace"]["sent"].as_u64().unwrap();
        assert!(sent > 0 && sent <= 80 * 30, "bounded: {sent}");
        let url = format!("http://{}/metrics", metrics.recv().unwrap());
        let text = lab.exec(&lab.c, "curl", &["-s", &url]);
        let series = format!(
            "synapse_trace_suspect_loss_ratio{{source=\"c\",peer=\"s\",hop=\"{B_V4}\",ttl=\"2\"}}"
        );
        assert!(text.contains(&series), "{text}");
        assert!(
            text.contains(&format!(
                "synapse_trace_probes_total{{source=\"c\"}} {sent}"
            )),
            "{text}"
        );
        assert!(
            text.contains("synapse_traces_total{source=\"c\",verdict=\"suspect\"} 1"),
            "{text}"
        );
        // The windows around the trace: no stray, and the paths that lost
        // nothing before it lost nothing while it ran.
        let clean = |w: &Value| -> Vec<u64> {
            w["paths"]["each"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["lost"] == 0)
                .map(|p| p["port"].as_u64().unwrap())
                .collect()
        };
        let before = clean(windows.last().unwrap());
        let after = lines
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        assert!(!before.is_empty(), "a path through A: {:?}", windows.last());
        let still = clean(&after);
        assert!(
            before.iter().all(|p| still.contains(p)),
            "{before:?} then {after}"
        );
        for w in windows.iter().chain([&after]) {
            assert_eq!(w["stray"], 0, "{w}");
        }
        return;
    }
    panic!("three agents' eight ports all went through A (1 in 128 each)");
}

/// Every JSON line a child prints, as it comes.
fn json_lines(out: std::process::ChildStdout) -> std::sync::mpsc::Receiver<Value> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line)
                && tx.send(v).is_err()
            {
                return;
            }
        }
    });
    rx
}

/// The address the agent serves /metrics on, from its note on stderr.
fn metrics_address(err: std::process::ChildStderr) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("metrics on http://").nth(1) {
                let _ = tx.send(rest.trim_end_matches("/metrics").to_string());
            }
        }
    });
    rx
}
