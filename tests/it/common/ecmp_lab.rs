//! The trace lab: C — R — {A, B} — S in five network namespaces, IPv4 and
//! IPv6. R splits traffic to S over A and B by an L4 hash (a multipath
//! route, `fib_multipath_hash_policy=1`, both families), B drops 30 % of
//! the UDP it forwards to S (iptables `statistic`), S answers by A only
//! (so the loss is one way, forward). R and S rate-limit their ICMP errors
//! as Linux does by default; A and B do not (`icmp_ratelimit=0`). Removed
//! on drop, also when the test fails.

use super::netns::{delete, fresh_names, ip};
use std::process::Command;

/// The destination's service address (S's loopback), IPv4 and IPv6.
pub const S_V4: &str = "10.244.3.2";
pub const S_V6: &str = "fd44:3::2";
/// The routers' addresses that answer a trace from C (each the side
/// facing back to C), IPv4 and IPv6.
pub const R_V4: &str = "10.244.1.1";
pub const A_V4: &str = "10.244.11.2";
pub const B_V4: &str = "10.244.12.2";
pub const R_V6: &str = "fd44:1::1";
pub const A_V6: &str = "fd44:11::2";
pub const B_V6: &str = "fd44:12::2";
/// What B drops of what it forwards to S.
pub const B_DROP: f64 = 0.3;

/// The five namespaces.
pub struct EcmpLab {
    pub c: String,
    pub r: String,
    pub a: String,
    pub b: String,
    pub s: String,
}

impl EcmpLab {
    pub fn new() -> Self {
        let [c, r, a, b, s] = fresh_names("trc", ["c", "r", "a", "b", "s"]);
        let lab = Self { c, r, a, b, s };
        for ns in lab.all() {
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            // No duplicate address detection: a link-local address still
            // tentative leaves neighbour discovery failing for a second or
            // two, and the first probes with it.
            lab.exec(
                ns,
                "sysctl",
                &[
                    "-qw",
                    "net.ipv6.conf.default.accept_dad=0",
                    "net.ipv6.conf.all.accept_dad=0",
                ],
            );
        }
        // (namespace, device, IPv4 /24, IPv6 /64) at each end of each link.
        let links = [
            (
                (&lab.c, "c0", "10.244.1.2", "fd44:1::2"),
                (&lab.r, "r0", R_V4, R_V6),
            ),
            (
                (&lab.r, "ra", "10.244.11.1", "fd44:11::1"),
                (&lab.a, "a0", A_V4, A_V6),
            ),
            (
                (&lab.r, "rb", "10.244.12.1", "fd44:12::1"),
                (&lab.b, "b0", B_V4, B_V6),
            ),
            (
                (&lab.a, "a1", "10.244.21.1", "fd44:21::1"),
                (&lab.s, "sa", "10.244.21.2", "fd44:21::2"),
            ),
            (
                (&lab.b, "b1", "10.244.22.1", "fd44:22::1"),
                (&lab.s, "sb", "10.244.22.2", "fd44:22::2"),
            ),
        ];
        for ((xn, xd, x4, x6), (yn, yd, y4, y6)) in links {
            ip(&[
                "link", "add", xd, "netns", xn, "type", "veth", "peer", "name", yd, "netns", yn,
            ]);
            for (ns, dev, v4, v6) in [(xn, xd, x4, x6), (yn, yd, y4, y6)] {
                ip(&["-n", ns, "addr", "add", &format!("{v4}/24"), "dev", dev]);
                ip(&[
                    "-n",
                    ns,
                    "addr",
                    "add",
                    &format!("{v6}/64"),
                    "dev",
                    dev,
                    "nodad",
                ]);
                ip(&["-n", ns, "link", "set", dev, "up"]);
            }
            // Each end knows the other's MAC from the start: neighbour
            // discovery on links just made lost the first probes for a
            // second or two (IPv6 most), which no trace should have to see.
            for ((ns, dev), (peer, peer_dev, v4, v6)) in
                [((xn, xd), (yn, yd, y4, y6)), ((yn, yd), (xn, xd, x4, x6))]
            {
                let mac = lab.mac(peer, peer_dev);
                for (family, addr) in [("-4", v4), ("-6", v6)] {
                    ip(&[
                        family,
                        "-n",
                        ns,
                        "neigh",
                        "replace",
                        addr,
                        "lladdr",
                        &mac,
                        "dev",
                        dev,
                        "nud",
                        "permanent",
                    ]);
                }
            }
        }
        ip(&[
            "-n",
            &lab.s,
            "addr",
            "add",
            &format!("{S_V4}/32"),
            "dev",
            "lo",
        ]);
        ip(&[
            "-n",
            &lab.s,
            "addr",
            "add",
            &format!("{S_V6}/128"),
            "dev",
            "lo",
            "nodad",
        ]);
        lab.routes();
        lab.sysctls();
        for (tool, to) in [("iptables", S_V4), ("ip6tables", S_V6)] {
            let p = B_DROP.to_string();
            lab.exec(
                &lab.b,
                tool,
                &["-A", "FORWARD", "-o", "b1", "-d", to, "-p", "udp"],
            );
            lab.exec(
                &lab.b,
                tool,
                &[
                    "-R",
                    "FORWARD",
                    "1",
                    "-o",
                    "b1",
                    "-d",
                    to,
                    "-p",
                    "udp",
                    "-m",
                    "statistic",
                    "--mode",
                    "random",
                    "--probability",
                    &p,
                    "-j",
                    "DROP",
                ],
            );
        }
        lab
    }

    fn routes(&self) {
        let route = |ns: &str, args: &[&str]| {
            let mut a = vec!["-n", ns, "route", "add"];
            a.extend_from_slice(args);
            ip(&a);
        };
        let route6 = |ns: &str, args: &[&str]| {
            let mut a = vec!["-6", "-n", ns, "route", "add"];
            a.extend_from_slice(args);
            ip(&a);
        };
        route(&self.c, &["default", "via", R_V4]);
        route6(&self.c, &["default", "via", R_V6]);
        route(
            &self.r,
            &[S_V4, "nexthop", "via", A_V4, "nexthop", "via", B_V4],
        );
        route6(
            &self.r,
            &[
                S_V6, "nexthop", "via", A_V6, "dev", "ra", "nexthop", "via", B_V6, "dev", "rb",
            ],
        );
        for (ns, next, back, next6, back6) in [
            (
                &self.a,
                "10.244.21.2",
                "10.244.11.1",
                "fd44:21::2",
                "fd44:11::1",
            ),
            (
                &self.b,
                "10.244.22.2",
                "10.244.12.1",
                "fd44:22::2",
                "fd44:12::1",
            ),
        ] {
            route(ns, &[S_V4, "via", next]);
            route(ns, &["default", "via", back]);
            route6(ns, &[S_V6, "via", next6]);
            route6(ns, &["default", "via", back6]);
        }
        // S answers by A alone: B's loss is on the way there only.
        route(&self.s, &["default", "via", "10.244.21.1"]);
        route6(&self.s, &["default", "via", "fd44:21::1"]);
    }

    fn sysctls(&self) {
        for ns in self.all() {
            // Replies and probes take different ways: no reverse-path filter.
            self.exec(
                ns,
                "sh",
                &[
                    "-c",
                    "for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > $f; done",
                ],
            );
        }
        for ns in [&self.r, &self.a, &self.b] {
            self.exec(
                ns,
                "sysctl",
                &[
                    "-qw",
                    "net.ipv4.ip_forward=1",
                    "net.ipv6.conf.all.forwarding=1",
                ],
            );
        }
        self.exec(
            &self.r,
            "sysctl",
            &[
                "-qw",
                "net.ipv4.fib_multipath_hash_policy=1",
                "net.ipv6.fib_multipath_hash_policy=1",
            ],
        );
        for ns in [&self.a, &self.b] {
            self.exec(
                ns,
                "sysctl",
                &[
                    "-qw",
                    "net.ipv4.icmp_ratelimit=0",
                    "net.ipv6.icmp.ratelimit=0",
                    "net.ipv4.icmp_msgs_per_sec=100000",
                    "net.ipv4.icmp_msgs_burst=100000",
                ],
            );
        }
    }

    /// The MAC address of `dev` in `ns`.
    fn mac(&self, ns: &str, dev: &str) -> String {
        let out = Command::new("ip")
            .args(["-n", ns, "-o", "link", "show", "dev", dev])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        text.split("link/ether ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("no MAC for {dev}: {text}"))
            .to_string()
    }

    /// Names for the lab's addresses, as C's resolver finds them: a hosts
    /// file of C's own (`ip netns exec` puts `/etc/netns/NS/hosts` over
    /// `/etc/hosts`), and a resolver that asks only C's loopback, so no
    /// other name leaves for anywhere. Removed with the lab.
    pub fn name_hosts(&self, names: &[(&str, &str)]) {
        let dir = self.etc_of_c();
        std::fs::create_dir_all(&dir).unwrap();
        let hosts: String = names.iter().map(|(a, n)| format!("{a} {n}\n")).collect();
        std::fs::write(dir.join("hosts"), hosts).unwrap();
        std::fs::write(
            dir.join("resolv.conf"),
            "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
        )
        .unwrap();
    }

    fn etc_of_c(&self) -> std::path::PathBuf {
        std::path::Path::new("/etc/netns").join(&self.c)
    }

    fn all(&self) -> [&String; 5] {
        [&self.c, &self.r, &self.a, &self.b, &self.s]
    }

    /// `TOOL ARGS` in namespace `ns`, which must succeed; its stdout.
    pub fn exec(&self, ns: &str, tool: &str, args: &[&str]) -> String {
        super::netns::exec_in(ns, tool, args)
    }

    /// Synapse reflectors on S, plain echo on port 8080 of its service
    /// addresses. Each bound to its address, not the wildcard: a reflector
    /// on `[::]` answers from the interface a request came in by, and S
    /// answers by A whichever way the request came.
    pub fn reflectors(&self) -> [super::Guard; 2] {
        [format!("{S_V4}:8080"), format!("[{S_V6}]:8080")].map(|bind| {
            let child = super::netns::synapse_in(&self.s)
                .args(["server", "--no-ui", "--bind", &bind])
                .args(["--stamp-port", "0", "--tcp-port", "0"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let (guard, out, _) = super::wait_until_ready(child);
            std::thread::spawn(move || {
                use std::io::BufRead;
                for _ in out.lines() {}
            });
            guard
        })
    }

    /// The kernel's count of UDP datagrams namespace `ns` sent
    /// (`/proc/net/snmp`, `Udp: OutDatagrams`; IPv6's in `snmp6`).
    pub fn udp_sent(&self, ns: &str, ipv6: bool) -> u64 {
        let (file, name) = if ipv6 {
            ("/proc/net/snmp6", "Udp6OutDatagrams")
        } else {
            ("/proc/net/snmp", "OutDatagrams")
        };
        let text = self.exec(ns, "cat", &[file]);
        if ipv6 {
            return text
                .lines()
                .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
                .unwrap();
        }
        let mut udp = text.lines().filter(|l| l.starts_with("Udp: "));
        let (names, values) = (udp.next().unwrap(), udp.next().unwrap());
        let at = names.split(' ').position(|n| n == name).unwrap();
        values.split(' ').nth(at).unwrap().parse().unwrap()
    }
}

impl Drop for EcmpLab {
    fn drop(&mut self) {
        delete(&self.all());
        let _ = std::fs::remove_dir_all(self.etc_of_c());
    }
}
