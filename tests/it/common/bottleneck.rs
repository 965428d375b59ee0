//! A client C, a router R and a server S in network namespaces
//! (`10.234.1.0/24` and `10.234.2.0/24`), offloads off on every veth so a
//! queue holds wire-sized packets, and a token bucket where a test puts
//! one: on R's egress toward C (the download's bottleneck) or on C's own
//! (the upload's, in this host's queue discipline). Removed on drop.

use super::netns::{delete, exec_in, fresh_names, ip};
use std::process::{Command, Stdio};

pub const C_ADDR: &str = "10.234.1.2";
pub const S_ADDR: &str = "10.234.2.2";
/// The reflector's ports in S: echo, STAMP, load.
pub const ECHO: u16 = 7007;
pub const STAMP: u16 = 8862;
pub const LOAD: u16 = 8863;

/// Where a token bucket goes.
#[derive(Debug, Clone, Copy)]
pub enum Egress {
    /// R's interface toward C: downloads queue there.
    RouterToClient,
    /// C's own interface: uploads queue in C's qdisc.
    Client,
}

/// C — R — S, removed on drop.
pub struct Bottleneck {
    pub c: String,
    pub r: String,
    pub s: String,
}

impl Bottleneck {
    pub fn new() -> Self {
        let [c, r, s] = fresh_names("ld", ["c", "r", "s"]);
        let t = Self { c, r, s };
        for ns in [&t.c, &t.r, &t.s] {
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        ip(&[
            "link", "add", "ldc", "netns", &t.c, "type", "veth", "peer", "name", "ldrc", "netns",
            &t.r,
        ]);
        ip(&[
            "link", "add", "lds", "netns", &t.s, "type", "veth", "peer", "name", "ldrs", "netns",
            &t.r,
        ]);
        for (ns, dev, addr) in [
            (&t.c, "ldc", "10.234.1.2/24"),
            (&t.r, "ldrc", "10.234.1.1/24"),
            (&t.r, "ldrs", "10.234.2.1/24"),
            (&t.s, "lds", "10.234.2.2/24"),
        ] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            exec_in(
                ns,
                "ethtool",
                &["-K", dev, "tso", "off", "gso", "off", "gro", "off"],
            );
        }
        ip(&["-n", &t.c, "route", "add", "default", "via", "10.234.1.1"]);
        ip(&["-n", &t.s, "route", "add", "default", "via", "10.234.2.1"]);
        exec_in(&t.r, "sysctl", &["-qw", "net.ipv4.ip_forward=1"]);
        t
    }

    /// A 10 Mbit/s token bucket of `limit` (`750kb`, `20kb`) at `at`,
    /// replacing any before it there.
    pub fn bucket(&self, at: Egress, limit: &str) {
        let (ns, dev) = self.egress(at);
        exec_in(
            ns,
            "tc",
            &[
                "qdisc", "replace", "dev", dev, "root", "tbf", "rate", "10mbit", "burst", "16kb",
                "limit", limit,
            ],
        );
    }

    /// Takes the bucket at `at` away.
    pub fn clear(&self, at: Egress) {
        let (ns, dev) = self.egress(at);
        exec_in(ns, "tc", &["qdisc", "del", "dev", dev, "root"]);
    }

    fn egress(&self, at: Egress) -> (&str, &str) {
        match at {
            Egress::RouterToClient => (&self.r, "ldrc"),
            Egress::Client => (&self.c, "ldc"),
        }
    }

    /// The binary under test in namespace `ns`.
    pub fn synapse_in(&self, ns: &str) -> Command {
        super::netns::synapse_in(ns)
    }

    /// `synapse server` in S: echo, STAMP and load, for C's network only;
    /// its output lines are kept for the test.
    pub fn server(&self, extra: &[&str]) -> super::Server {
        self.server_with(extra, &[])
    }

    /// [`Bottleneck::server`] with `env` set (a test build's clock).
    pub fn server_with(&self, extra: &[&str], env: &[(&str, &str)]) -> super::Server {
        let child = self
            .synapse_in(&self.s)
            .envs(env.iter().copied())
            .args(["server", "--no-ui", "--bind", &format!("{S_ADDR}:{ECHO}")])
            .args(["--stamp-port", &STAMP.to_string()])
            .args(["--load-port", &LOAD.to_string(), "--allow", "10.234.1.0/24"])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let (guard, stdout, _) = super::wait_until_ready(child);
        super::Server { guard, stdout }
    }

    /// A `synapse client` in C measuring S under load.
    pub fn client(&self, args: &[&str]) -> Command {
        let mut c = self.synapse_in(&self.c);
        c.args(["client", &format!("{S_ADDR}:{ECHO}"), "--json"]);
        c.args(args);
        c
    }
}

impl Drop for Bottleneck {
    fn drop(&mut self) {
        delete(&[&self.c, &self.r, &self.s]);
    }
}
