//! Latency under load in a lab of namespaces (C — R — S, offloads off, a
//! 10 Mbit/s token bucket), against irtt measuring beside `iperf3 -R` in
//! the same lab: the download's inflation agrees with irtt's and sits on
//! the way back; a shallow queue inflates it little; a queue on the
//! client's own egress is found in its queue discipline; goodput is the
//! bucket's rate; `--max-inflation` exits 3 and 0 on the right sides.
//!
//! The load runs CUBIC on both tools (`--load-cc cubic`, `iperf3 -C
//! cubic`): a loss-based sender fills the queue to its limit whichever
//! tool drives it, where BBR's standing queue differs from run to run.

use crate::common::bottleneck::{Bottleneck, Egress, S_ADDR};
use crate::common::netns;
use crate::common::*;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;

/// irtt's median round trip in namespace `ns` over `secs`, ns.
fn irtt_median(lab: &Bottleneck, irtt: &std::path::Path, secs: u32) -> f64 {
    let file = scratch_dir().join(format!("irtt-{}-{secs}.json", std::process::id()));
    let out = Command::new("ip")
        .args(["netns", "exec", &lab.c])
        .arg(irtt)
        .args([
            "client",
            "-i",
            "10ms",
            "-d",
            &format!("{secs}s"),
            "-q",
            "-o",
        ])
        .arg(&file)
        .arg(format!("{S_ADDR}:2112"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "irtt: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    j["stats"]["rtt"]["median"].as_f64().unwrap()
}

/// irtt's inflation: its median under `iperf3 -R -P 4 -C cubic` less its
/// idle median, ns. CUBIC fills the queue for seconds (its median round
/// trip here ~375 ms in seconds 3 to 6 of the load, ~575 ms after), so
/// irtt measures the same seconds of the load as Synapse's phase does: 4
/// to 8 (its last MAD intervals, or its stable ones).
fn irtt_inflation(lab: &Bottleneck, irtt: &std::path::Path, iperf3: &std::path::Path) -> f64 {
    let in_s = |tool: &std::path::Path, args: &[&str]| {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &lab.s]).arg(tool).args(args);
        c.stdout(Stdio::null()).stderr(Stdio::null());
        Guard(c.spawn().unwrap())
    };
    let _irtt_server = in_s(irtt, &["server", "-b", &format!("{S_ADDR}:2112")]);
    let _iperf_server = in_s(iperf3, &["-s", "-p", "5201"]);
    std::thread::sleep(Duration::from_millis(500));
    let idle = irtt_median(lab, irtt, 3);
    let mut load = Command::new("ip");
    load.args(["netns", "exec", &lab.c]).arg(iperf3);
    load.args([
        "-c", S_ADDR, "-p", "5201", "-R", "-P", "4", "-C", "cubic", "-t", "9",
    ]);
    let load = Guard(load.stdout(Stdio::null()).spawn().unwrap());
    std::thread::sleep(Duration::from_secs(4));
    let loaded = irtt_median(lab, irtt, 4);
    drop(load);
    println!("irtt: idle median {idle} ns, under iperf3 -R {loaded} ns");
    loaded - idle
}

/// A load run's JSON and exit status.
fn load_run(lab: &Bottleneck, args: &[&str]) -> (Value, i32) {
    let out = lab.client(args).output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 3,
        "exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (json_of(&out.stdout), code)
}

/// The phase named `name` of a load run.
fn phase<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["load"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no {name} phase: {}", j["load"]))
}

fn share(p: &Value, stage: &str) -> f64 {
    p["stage_share"][stage].as_f64().unwrap_or(0.0)
}

const CUBIC: [&str; 6] = [
    "--load-streams",
    "4",
    "--load-cc",
    "cubic",
    "--max-inflation",
    "100ms",
];

fn cubic<'a>(args: &[&'a str]) -> Vec<&'a str> {
    [args, &CUBIC[..]].concat()
}

#[test]
fn a_bottleneck_queue_is_measured_placed_and_judged_as_irtt_sees_it() {
    let test = "a_bottleneck_queue_is_measured_placed_and_judged_as_irtt_sees_it";
    if !netns::usable(test) {
        return;
    }
    let (Some(irtt), Some(iperf3)) = (tool("irtt", test), tool("iperf3", test)) else {
        return;
    };
    let _one = one_at_a_time();
    let lab = Bottleneck::new();
    let _server = lab.server(&[]);

    // A deep queue (750 kB at 10 Mbit/s: 600 ms) toward the client.
    lab.bucket(Egress::RouterToClient, "750kb");
    let (j, code) = load_run(&lab, &cubic(&["--load", "download", "--load-phase", "8s"]));
    let d = phase(&j, "download");
    let ours = d["inflation_ns"]["p50"].as_f64().unwrap();
    let theirs = irtt_inflation(&lab, &irtt, &iperf3);
    println!(
        "download p50 inflation: Synapse {ours} ns, irtt {theirs} ns; {}",
        d["stage_share"]
    );
    assert!(
        (ours - theirs).abs() <= 0.2 * theirs,
        "Synapse +{ours} ns against irtt's +{theirs} ns under iperf3 -R"
    );
    assert!(
        share(d, "backward") >= 0.7,
        "on the way back: {}",
        d["stage_share"]
    );
    let down = d["goodput_bps"]["down"].as_f64().unwrap();
    assert!(
        (8e6..=12e6).contains(&down),
        "the bucket's 10 Mbit/s: {down}"
    );
    assert_eq!(
        (code, j["outcome"].as_str()),
        (3, Some("fail")),
        "beyond --max-inflation 100ms"
    );
    assert!(d["inflation_ns"]["p50_ci_low"].as_f64().unwrap() > 100e6);
    assert!(
        d["stage_inflation_ns"]["forward"].is_f64(),
        "STAMP legs: {d}"
    );

    // A shallow queue (20 kB: 16 ms).
    lab.bucket(Egress::RouterToClient, "20kb");
    let (j, code) = load_run(&lab, &cubic(&["--load", "download", "--load-phase", "5s"]));
    let d = phase(&j, "download");
    let shallow = d["inflation_ns"]["p50"].as_f64().unwrap();
    assert!(shallow < 25e6, "a well-kept queue: +{shallow} ns");
    assert_eq!(code, 0, "within --max-inflation 100ms: {}", j["verdict"]);
    lab.clear(Egress::RouterToClient);

    // The queue on the client's own egress: its queue discipline.
    lab.bucket(Egress::Client, "750kb");
    let (j, _) = load_run(&lab, &cubic(&["--load", "upload", "--load-phase", "5s"]));
    let u = phase(&j, "upload");
    println!("upload: {} {}", u["inflation_ns"]["p50"], u["stage_share"]);
    assert!(u["inflation_ns"]["p50"].as_f64().unwrap() > 50e6, "{u}");
    assert!(
        share(u, "send_queue") >= 0.7,
        "in this host's qdisc: {}",
        u["stage_share"]
    );
    let up = u["goodput_bps"]["up"].as_f64().unwrap();
    assert!((8e6..=12e6).contains(&up), "the bucket's 10 Mbit/s: {up}");
}
