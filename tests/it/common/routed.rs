//! Three network namespaces joined through a router: client A, router R,
//! reflector B (`10.232.1.0/24` and `10.232.2.0/24`), removed on drop.
//! The router's iptables rules change what crosses it (re-marking,
//! congestion, address translation), so the network does it, not either
//! end.

use super::netns::{delete, exec_in, fresh_names, ip};
use super::{Server, success_json, wait_until_ready};
use serde_json::Value;
use std::process::{Command, Stdio};

pub const A_ADDR: &str = "10.232.1.2";
pub const B_ADDR: &str = "10.232.2.2";

/// A — R — B, removed on drop.
pub struct Routed {
    pub a: String,
    pub r: String,
    pub b: String,
}

impl Routed {
    pub fn new() -> Self {
        let [a, r, b] = fresh_names("cos", ["a", "r", "b"]);
        let t = Self { a, r, b };
        for ns in [&t.a, &t.r, &t.b] {
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        ip(&[
            "link", "add", "cosa", "netns", &t.a, "type", "veth", "peer", "name", "cosra", "netns",
            &t.r,
        ]);
        ip(&[
            "link", "add", "cosb", "netns", &t.b, "type", "veth", "peer", "name", "cosrb", "netns",
            &t.r,
        ]);
        for (ns, dev, addr) in [
            (&t.a, "cosa", "10.232.1.2/24"),
            (&t.r, "cosra", "10.232.1.1/24"),
            (&t.r, "cosrb", "10.232.2.1/24"),
            (&t.b, "cosb", "10.232.2.2/24"),
        ] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        ip(&["-n", &t.a, "route", "add", "default", "via", "10.232.1.1"]);
        ip(&["-n", &t.b, "route", "add", "default", "via", "10.232.2.1"]);
        t.run(&t.r.clone(), "sysctl", &["-qw", "net.ipv4.ip_forward=1"]);
        t
    }

    /// `TOOL ARGS` in namespace `ns`, which must succeed.
    pub fn run(&self, ns: &str, tool: &str, args: &[&str]) {
        exec_in(ns, tool, args);
    }

    /// Polls until something in namespace `ns` has UDP `port` bound (a
    /// third-party reflector starts in its own time; a fixed sleep lost
    /// the race under a loaded test run).
    pub fn wait_udp_bound(&self, ns: &str, port: u16) {
        let wanted = format!(":{port:04X} ");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            let table = Command::new("ip")
                .args(["netns", "exec", ns, "cat", "/proc/net/udp"])
                .output()
                .unwrap();
            let table = String::from_utf8_lossy(&table.stdout);
            let bound = table
                .lines()
                .skip(1)
                .filter_map(|line| line.split_whitespace().nth(1))
                .any(|local| format!("{local} ").ends_with(&wanted));
            if bound {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("nothing in {ns} bound UDP port {port} within 10 s");
    }

    /// A rule in the router's mangle FORWARD chain for packets coming in
    /// on `from` (`cosra`: requests, A → B; `cosrb`: replies, B → A).
    pub fn router_rule(&self, from: &str, rule: &[&str]) {
        let mut args = vec!["-t", "mangle", "-A", "FORWARD", "-i", from, "-p", "udp"];
        args.extend(rule);
        self.run(&self.r.clone(), "iptables", &args);
    }

    /// Re-marks the leg arriving on `from` to DSCP class `class`.
    pub fn remark(&self, from: &str, class: &str) {
        self.router_rule(from, &["-j", "DSCP", "--set-dscp-class", class]);
    }

    /// Marks CE on the leg's ECN-capable (ECT(0)) packets, as an AQM
    /// under congestion does.
    pub fn congest(&self, from: &str) {
        self.router_rule(
            from,
            &[
                "-m",
                "ecn",
                "--ecn-ip-ect",
                "2",
                "-j",
                "ECN",
                "--ecn-ip-ect",
                "3",
            ],
        );
    }

    /// The binary under test in namespace `ns`.
    pub fn synapse_in(&self, ns: &str) -> Command {
        super::netns::synapse_in(ns)
    }

    /// `synapse server` in B: echo on 7007, STAMP on 8862.
    pub fn server(&self) -> Server {
        let child = self
            .synapse_in(&self.b)
            .args(["server", "--no-ui", "--bind", &format!("{B_ADDR}:7007")])
            .args(["--stamp-port", "8862"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let (guard, stdout, _) = wait_until_ready(child);
        Server { guard, stdout }
    }

    pub fn client(&self, to: &str, args: &[&str]) -> Value {
        success_json(
            &self
                .synapse_in(&self.a)
                .args(["client", to, "--json", "--packets", "200", "--warmup", "5"])
                .args(["--threshold", "1s", "--timeout", "500ms"])
                .args(args)
                .output()
                .unwrap(),
        )
    }
}

impl Drop for Routed {
    fn drop(&mut self) {
        delete(&[&self.a, &self.r, &self.b]);
    }
}
