//! A client C, a router R and a server S: the three namespaces of
//! [`Routed`] (its A, R and B), with offloads off on every veth so a queue
//! holds wire-sized packets, and a token bucket where a test puts one: on
//! R's egress toward C (the download's bottleneck) or on C's own (the
//! upload's, in this host's queue discipline). Removed on drop.

use super::netns::exec_in;
use super::routed::{A_ADDR, B_ADDR, Routed};
use std::process::{Command, Stdio};

pub const C_ADDR: &str = A_ADDR;
pub const S_ADDR: &str = B_ADDR;
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

/// C — R — S, removed on drop (with the [`Routed`] it is).
pub struct Bottleneck {
    pub c: String,
    pub r: String,
    pub s: String,
    _lab: Routed,
}

impl Bottleneck {
    pub fn new() -> Self {
        let lab = Routed::new();
        for (ns, dev) in [
            (&lab.a, "cosa"),
            (&lab.r, "cosra"),
            (&lab.r, "cosrb"),
            (&lab.b, "cosb"),
        ] {
            exec_in(
                ns,
                "ethtool",
                &["-K", dev, "tso", "off", "gso", "off", "gro", "off"],
            );
        }
        Self {
            c: lab.a.clone(),
            r: lab.r.clone(),
            s: lab.b.clone(),
            _lab: lab,
        }
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
            Egress::RouterToClient => (&self.r, "cosra"),
            Egress::Client => (&self.c, "cosa"),
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
            .args(["--load-port", &LOAD.to_string(), "--allow", "10.232.1.0/24"])
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
