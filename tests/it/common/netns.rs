//! Two network namespaces joined by a veth pair, for tests that need a
//! real link between two hosts (root, as CI has). Created and removed by
//! the test itself; nothing outside them is touched.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Whether namespaces can be made here (root, with `ip` and `iptables`);
/// the reason when not, for the test to print as it skips.
pub fn unavailable() -> Option<String> {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        });
    if uid.as_deref() != Some("0") {
        return Some("needs root to create network namespaces".into());
    }
    for tool in ["ip", "iptables"] {
        let found = Command::new(tool).arg("--version").output().is_ok();
        if !found {
            return Some(format!("needs {tool} (apt-get install iproute2 iptables)"));
        }
    }
    None
}

/// Whether namespaces can be made here; when not, `test` is skipped
/// (in CI it fails: see [`super::skip`]).
pub fn usable(test: &str) -> bool {
    match unavailable() {
        Some(why) => {
            super::announce::skip(test, &why);
            false
        }
        None => true,
    }
}

/// Two network namespaces joined by a veth pair, removed on drop (also when
/// the test fails).
pub struct Namespaces {
    pub a: String,
    pub b: String,
}

pub const A_ADDR: &str = "10.231.0.1";
pub const B_ADDR: &str = "10.231.0.2";

/// `ip ARGS`, which must succeed.
pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `TOOL ARGS` in namespace `ns`, which must succeed; its stdout.
pub fn exec_in(ns: &str, tool: &str, args: &[&str]) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, tool])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{tool} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One fresh namespace name per role, `PREFIX-ROLE-PID-N`: tests running
/// at the same time, in this process or another, never share one.
pub fn fresh_names<const N: usize>(prefix: &str, roles: [&str; N]) -> [String; N] {
    static N: AtomicU32 = AtomicU32::new(0);
    let id = format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    roles.map(|role| format!("{prefix}-{role}-{id}"))
}

/// The binary under test, run in namespace `ns`.
pub fn synapse_in(ns: &str) -> Command {
    let base = super::synapse();
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).arg(base.get_program());
    for (k, v) in base.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c
}

/// Deletes namespaces (a veth goes with either end), as a drop does: also
/// on a failing test's way out, so errors are not checked.
pub fn delete(names: &[&String]) {
    for ns in names {
        let _ = Command::new("ip").args(["netns", "del", ns]).status();
    }
}

impl Namespaces {
    pub fn new() -> Self {
        let [a, b] = fresh_names("syn", ["a", "b"]);
        let ns = Self { a, b };
        ip(&["netns", "add", &ns.a]);
        ip(&["netns", "add", &ns.b]);
        ip(&[
            "link", "add", "vsyn0", "netns", &ns.a, "type", "veth", "peer", "name", "vsyn1",
            "netns", &ns.b,
        ]);
        for (name, dev, addr) in [(&ns.a, "vsyn0", A_ADDR), (&ns.b, "vsyn1", B_ADDR)] {
            ip(&["-n", name, "addr", "add", &format!("{addr}/24"), "dev", dev]);
            ip(&["-n", name, "link", "set", dev, "up"]);
            ip(&["-n", name, "link", "set", "lo", "up"]);
        }
        ns
    }

    /// The binary under test, run in namespace `ns`.
    pub fn synapse_in(&self, ns: &str) -> Command {
        synapse_in(ns)
    }

    /// `synapse server` in namespace B, echo on 7007 and STAMP on 8862.
    pub fn server_in_b(&self) -> super::Guard {
        let child = self
            .synapse_in(&self.b)
            .args(["server", "--no-ui", "--bind", &format!("{B_ADDR}:7007")])
            .args(["--stamp-port", "8862"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (guard, out, _) = super::wait_until_ready(child);
        // Keep reading its output so it never blocks on a full pipe.
        std::thread::spawn(move || {
            use std::io::BufRead;
            for _ in out.lines() {}
        });
        guard
    }

    /// A second source address in namespace A, 10.231.0.3, and an echo-only
    /// `synapse server` in B on 7007 started with `extra`; its output kept
    /// for the test to read.
    pub fn two_sources_and_a_server(&self, extra: &[&str]) -> super::Server {
        ip(&[
            "-n",
            &self.a,
            "addr",
            "add",
            "10.231.0.3/24",
            "dev",
            "vsyn0",
        ]);
        let child = self
            .synapse_in(&self.b)
            .args(["server", "--no-ui", "--stamp-port", "0"])
            .args(["--bind", &format!("{B_ADDR}:7007")])
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (guard, stdout, _) = super::wait_until_ready(child);
        super::Server { guard, stdout }
    }

    /// The kernel's UDP counter `name` (`/proc/net/snmp`, `Udp:` lines:
    /// `RcvbufErrors`, `NoPorts` …) in namespace `ns`. A namespace has
    /// counters of its own, starting at 0 when it is made.
    pub fn udp_counter(&self, ns: &str, name: &str) -> u64 {
        let out = Command::new("ip")
            .args(["netns", "exec", ns, "cat", "/proc/net/snmp"])
            .output()
            .unwrap();
        let snmp = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut udp = snmp.lines().filter(|l| l.starts_with("Udp: "));
        let (names, values) = (udp.next().unwrap(), udp.next().unwrap());
        let at = names.split(' ').position(|n| n == name).unwrap();
        values.split(' ').nth(at).unwrap().parse().unwrap()
    }

    /// `iptables ARGS` in namespace `ns`.
    pub fn iptables(&self, ns: &str, args: &[&str]) {
        exec_in(ns, "iptables", args);
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        delete(&[&self.a, &self.b]);
    }
}
