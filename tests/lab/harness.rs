//! Running scenarios: on this kernel when it has netem (as root), else in
//! a guest kernel booted for them (`tests/lab/boot`). A machine that can do
//! neither skips, saying why, except in CI, where that is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

/// Where the lab's runs and results go: `target/lab/`.
pub fn lab_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("lab")
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lab")
}

/// A group's finished run.
pub struct Run {
    pub dir: PathBuf,
    /// `guest under TCG`, `guest under KVM` or `this host (KERNEL)`.
    pub machine: String,
    pub seconds: f64,
}

/// Runs `scenarios` as one group (one guest boot) and returns where their
/// outputs are; `None` when this machine cannot run the lab (skipped,
/// with the reason printed). Groups run one at a time: a guest takes both
/// CPUs of the machines this was written on.
pub fn run(group: &str, scenarios: &[&str]) -> Option<Run> {
    let host = host_has_netem();
    let cmd = if host {
        Command::new(scripts().join("run-scenario"))
    } else {
        guest(group, "")
    };
    launch(group, cmd, scenarios, host)
}

/// Runs `scenarios` in a guest whatever this kernel has, with devices
/// (`qemu_args`) this machine lacks, such as NICs with hardware clocks.
pub fn run_in_guest(group: &str, scenarios: &[&str], qemu_args: &str) -> Option<Run> {
    if !has_python() {
        return unavailable(
            group,
            "python3 is not installed (the lab's second opinions)",
        );
    }
    launch(group, guest(group, qemu_args), scenarios, false)
}

/// The lab's own probes of the truth (clocks, a NIC's setting) are Python.
fn has_python() -> bool {
    Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `tests/lab/boot DIR run-scenario`, bounded.
fn guest(group: &str, qemu_args: &str) -> Command {
    let mut c = Command::new(scripts().join("boot"));
    c.arg(group_dir(group)).arg(scripts().join("run-scenario"));
    c.env("LAB_PASS", "SYNAPSE");
    c.env("LAB_TIMEOUT", "600");
    c.env("LAB_QEMU_ARGS", qemu_args);
    c
}

/// Runs a two-host scenario (`tests/lab/two-hosts`): two guests, two
/// kernels, two clocks, whatever this kernel has. Its sides' outputs are
/// in `DIR/a` and `DIR/b`.
pub fn run_two(group: &str, scenario: &str) -> Option<Run> {
    if !has_python() {
        return unavailable(
            group,
            "python3 is not installed (the lab's second opinions)",
        );
    }
    let mut cmd = Command::new(scripts().join("two-hosts"));
    cmd.arg(scenario);
    launch(group, cmd, &[], false)
}

/// A group's output directory.
fn group_dir(group: &str) -> PathBuf {
    lab_dir().join("runs").join(group)
}

/// A group's output directory, emptied.
fn fresh_dir(group: &str) -> PathBuf {
    let dir = group_dir(group);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `cmd SCENARIOS... DIR` for a group, one group at a time.
fn launch(group: &str, mut cmd: Command, scenarios: &[&str], host: bool) -> Option<Run> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Checking again what an earlier run left (its directory holds every
    // group's outputs), without running anything.
    if let Some(root) = std::env::var_os("SYNAPSE_LAB_REUSE") {
        return Some(Run {
            dir: PathBuf::from(root).join(group),
            machine: "an earlier run (SYNAPSE_LAB_REUSE)".to_string(),
            seconds: f64::NAN,
        });
    }
    let dir = fresh_dir(group);
    let bin = super::common::synapse().get_program().to_owned();
    let started = Instant::now();
    let status = cmd
        .args(scenarios)
        .arg(&dir)
        .env("SYNAPSE", &bin)
        .output()
        .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&status.stdout);
    let stderr = String::from_utf8_lossy(&status.stderr);
    print!("{stdout}");
    if status.status.code() == Some(77) {
        return unavailable(group, stderr.trim());
    }
    let machine = machine(&dir, host);
    println!("lab: {group} ran on {machine} in {seconds:.0} s");
    let first = scenarios
        .first()
        .map_or_else(|| dir.join("a"), |s| dir.join(s));
    if !first.join("rc").exists() {
        panic!(
            "lab: {group} ran nothing (exit {:?}):\n{stderr}",
            status.status.code()
        );
    }
    Some(Run {
        dir,
        machine,
        seconds,
    })
}

/// What the group ran on, from what boot wrote (`accel`, per guest).
fn machine(dir: &Path, host: bool) -> String {
    if host {
        return format!("this host ({})", kernel());
    }
    let accel = ["accel", "a/accel"]
        .iter()
        .find_map(|f| std::fs::read_to_string(dir.join(f)).ok())
        .unwrap_or_default();
    match accel.trim() {
        "kvm" => "a guest under KVM".to_string(),
        _ => "a guest under TCG (software emulation)".to_string(),
    }
}

/// Says why the lab cannot run here and skips, or fails in CI (see
/// `common::skip`).
fn unavailable(group: &str, reason: &str) -> Option<Run> {
    super::common::announce::skip(&format!("lab {group}"), reason);
    None
}

/// This kernel can run the scenarios itself: root, and netem loads here
/// (tried in a namespace of its own, removed at once).
fn host_has_netem() -> bool {
    match std::env::var("SYNAPSE_LAB").as_deref() {
        Ok("guest") => return false,
        Ok("host") => return true,
        _ => {}
    }
    if !super::common::is_root() {
        return false;
    }
    let ns = format!("labprobe{}", std::process::id());
    let ok = Command::new("ip")
        .args(["netns", "add", &ns])
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("tc")
            .args([
                "-n", &ns, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms",
            ])
            .output()
            .is_ok_and(|o| o.status.success());
    let _ = Command::new("ip").args(["netns", "del", &ns]).status();
    ok
}

fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string()
}
