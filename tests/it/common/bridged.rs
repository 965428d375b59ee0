//! Hosts on one switch, for multicast: a bridge in a namespace of its own
//! and one namespace per member, each plugged into the bridge by a veth
//! pair, with an IPv4 and an IPv6 address and the route a member needs
//! to send to a group (224.0.0.0/4; IPv6 has its own per interface). The
//! bridge snoops IGMPv3 and MLDv2, so its database (`bridge mdb`) shows
//! the reports the members sent. Everything is removed on drop, also when
//! the test fails.

use super::netns::{delete, exec_in, fresh_names, ip};
use std::process::Command;

/// The members' IPv4 subnet (`.1` is the first member).
pub const NET: &str = "10.232.0";
/// Their IPv6 prefix (`::1` is the first member).
pub const NET6: &str = "fd32::";

/// One host on the switch.
pub struct Member {
    /// Its namespace.
    pub ns: String,
    /// Its IPv4 address.
    pub addr: String,
    /// Its IPv6 address.
    pub addr6: String,
    /// Its bridge port's name, in the bridge's namespace.
    pub port: String,
}

/// The switch and its members, removed on drop.
pub struct Bridged {
    /// The bridge's namespace.
    pub bridge: String,
    /// The members, in the order of `roles`.
    pub members: Vec<Member>,
}

/// The member's interface, the same name in every member's namespace.
pub const DEV: &str = "m0";

impl Bridged {
    /// A switch with one member per role (`c`, `r1` …: short, they name
    /// the namespaces).
    pub fn new<const N: usize>(roles: [&str; N]) -> Self {
        let names = fresh_names("mc", roles);
        let [bridge] = fresh_names("mc", ["br"]);
        let mut lab = Self {
            bridge,
            members: Vec::new(),
        };
        ip(&["netns", "add", &lab.bridge]);
        let br = ["-n", lab.bridge.as_str()];
        ip(&[&br[..], &["link", "add", "br0", "type", "bridge"]].concat());
        ip(&[
            &br[..],
            &[
                "link",
                "set",
                "br0",
                "type",
                "bridge",
                "mcast_snooping",
                "1",
            ],
            &["mcast_igmp_version", "3", "mcast_mld_version", "2"],
        ]
        .concat());
        ip(&[&br[..], &["link", "set", "br0", "up"]].concat());
        for (i, ns) in names.into_iter().enumerate() {
            let member = Member {
                addr: format!("{NET}.{}", i + 1),
                addr6: format!("{NET6}{}", i + 1),
                port: format!("p{i}"),
                ns,
            };
            lab.plug(&member);
            lab.members.push(member);
        }
        lab
    }

    fn plug(&self, m: &Member) {
        ip(&["netns", "add", &m.ns]);
        ip(&[
            "link",
            "add",
            DEV,
            "netns",
            &m.ns,
            "type",
            "veth",
            "peer",
            "name",
            &m.port,
            "netns",
            &self.bridge,
        ]);
        ip(&[
            "-n",
            &self.bridge,
            "link",
            "set",
            &m.port,
            "master",
            "br0",
            "up",
        ]);
        let n = ["-n", m.ns.as_str()];
        ip(&[
            &n[..],
            &["addr", "add", &format!("{}/24", m.addr), "dev", DEV],
        ]
        .concat());
        ip(&[
            &n[..],
            &[
                "addr",
                "add",
                &format!("{}/64", m.addr6),
                "dev",
                DEV,
                "nodad",
            ],
        ]
        .concat());
        ip(&[&n[..], &["link", "set", DEV, "up"]].concat());
        ip(&[&n[..], &["link", "set", "lo", "up"]].concat());
        ip(&[&n[..], &["route", "add", "224.0.0.0/4", "dev", DEV]].concat());
    }

    /// The member in role `i` (the order given to `new`).
    pub fn member(&self, i: usize) -> &Member {
        &self.members[i]
    }

    /// What the bridge learned from its members' IGMP and MLD reports:
    /// `bridge -d mdb show`, one line per entry.
    pub fn mdb(&self) -> String {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.bridge, "bridge", "-d", "mdb", "show"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits (at most 10 s: IGMP repeats an unsolicited report within 1 s)
    /// until the bridge's database `holds` what the test expects; whether
    /// it did, and the database as it was last read.
    pub fn mdb_until(&self, holds: impl Fn(&str) -> bool) -> (bool, String) {
        let mut mdb = self.mdb();
        for _ in 0..100 {
            if holds(&mdb) {
                return (true, mdb);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            mdb = self.mdb();
        }
        (holds(&mdb), mdb)
    }

    /// `iptables ARGS` in member `i`'s namespace.
    pub fn iptables(&self, i: usize, args: &[&str]) {
        exec_in(&self.members[i].ns, "iptables", args);
    }
}

impl Drop for Bridged {
    fn drop(&mut self) {
        let mut all: Vec<&String> = self.members.iter().map(|m| &m.ns).collect();
        all.push(&self.bridge);
        delete(&all);
    }
}
