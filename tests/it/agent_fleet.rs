//! A fleet on one machine (issue 39): 30 agents in a network namespace the
//! test makes, on loopback addresses 127.0.1.K, finding each other through
//! the SRV records of a dnsmasq they run (`ip netns exec` reads
//! `/etc/netns/NS/resolv.conf`), each probing its rack and 5 others, all
//! scraped by one real Prometheus with the shipped fleet rules. Then ECMP:
//! namespace routers with a multipath route and loss on one next hop,
//! which `--paths 8` finds.

use crate::common::prometheus_ns::NsPrometheus;
use crate::common::{Guard, announce, is_root, one_at_a_time, tool};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use synapse::agent::subset::{Choice, Host, choose};

const AGENTS: usize = 30;
const RACK: usize = 6;
const FANOUT: usize = 5;
const SRV: &str = "_synapse._udp.fleet.test";

fn bin() -> PathBuf {
    match std::env::var_os("SYNAPSE_TEST_BIN") {
        Some(b) => PathBuf::from(b),
        None => PathBuf::from(assert_cmd::cargo::cargo_bin!("synapse")),
    }
}

fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Why this test cannot run here, if it cannot.
fn missing(test: &str, tools: &[&str]) -> Option<()> {
    if !is_root() {
        announce::skip(test, "needs root for network namespaces");
        return None;
    }
    for t in tools {
        tool(t, test)?;
    }
    Some(())
}

/// A network namespace and its resolv.conf, removed on drop.
struct Netns {
    name: String,
}

impl Netns {
    fn new(prefix: &str) -> Netns {
        let name = format!("{prefix}-{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        run("ip", &["netns", "add", &name]);
        run("ip", &["-n", &name, "link", "set", "lo", "up"]);
        Netns { name }
    }

    /// `ip netns exec NS PROGRAM ARGS` (it execs: the child is PROGRAM).
    fn command(&self, program: &Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }

    fn etc(&self) -> PathBuf {
        PathBuf::from("/etc/netns").join(&self.name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.etc());
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

fn host_name(k: usize) -> String {
    format!("h{k}.r{}.fleet.test", (k - 1) / RACK + 1)
}

/// dnsmasq in the namespace on 127.0.0.53: an A and an SRV record per
/// agent in `hosts`.
fn dnsmasq(ns: &Netns, hosts: &[usize]) -> Guard {
    let mut c = ns.command(&tool("dnsmasq", "dns").unwrap());
    c.args([
        "--keep-in-foreground",
        "--no-resolv",
        "--no-hosts",
        "--conf-file=/dev/null",
        "--pid-file=",
        "--listen-address=127.0.0.53",
        "--bind-interfaces",
        "--local-ttl=1",
        "--user=root",
    ]);
    for &k in hosts {
        let name = host_name(k);
        c.arg(format!("--host-record={name},127.0.1.{k}"));
        c.arg(format!("--srv-host={SRV},{name},8080"));
    }
    let guard = Guard(
        c.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Answering: an SRV question through the namespace's resolv.conf.
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let out = ns
            .command(&bin())
            .args(["agent", "--check", "--reflect", "none", "--peers-srv", SRV])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout).contains(&format!("srv {SRV}: {}", hosts.len())) {
            return guard;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("dnsmasq did not answer");
}

/// Prometheus in the namespace, scraping every agent each second, with the
/// shipped fleet rules evaluated each second.
struct Prometheus {
    server: NsPrometheus,
}

impl Prometheus {
    fn start(ns: &Netns) -> Prometheus {
        let rules = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/prometheus/synapse.fleet.rules.yml"),
        )
        .unwrap()
        .replace("interval: 30s", "interval: 1s");
        let targets: Vec<String> = (1..=AGENTS).map(|k| format!("127.0.1.{k}:9862")).collect();
        let bin = tool("prometheus", "prometheus").unwrap();
        Prometheus {
            server: NsPrometheus::start(&bin, &ns.name, "fleet", &targets, Some(&rules)),
        }
    }

    fn query(&self, q: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        self.server.query(q)
    }

    /// Each agent's peers (from `synapse_peer_info`), by `chosen`.
    fn peers(&self, chosen: &str) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (l, _) in self.query(&format!("synapse_peer_info{{chosen=~\"{chosen}\"}}")) {
            out.entry(l["source"].clone())
                .or_default()
                .insert(l["peer"].clone());
        }
        out
    }
}

fn eventually<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        match check() {
            Ok(v) => return v,
            Err(why) if Instant::now() > deadline => panic!("{what}: {why}"),
            Err(_) => std::thread::sleep(Duration::from_millis(300)),
        }
    }
}

/// What the hashing says each agent of `hosts` probes.
fn predicted(hosts: &[usize]) -> BTreeMap<String, BTreeSet<String>> {
    let names: Vec<String> = hosts.iter().map(|&k| host_name(k)).collect();
    let racks: Vec<String> = hosts
        .iter()
        .map(|&k| format!("r{}", (k - 1) / RACK + 1))
        .collect();
    let list: Vec<Host<'_>> = names
        .iter()
        .zip(&racks)
        .map(|(n, r)| Host {
            name: n,
            tier: Some(r),
        })
        .collect();
    list.iter()
        .map(|me| {
            let chosen = choose(
                *me,
                &list,
                Choice {
                    fanout: Some(FANOUT),
                },
            );
            let set = chosen
                .into_iter()
                .map(|i| list[i].name.to_string())
                .collect();
            (me.name.to_string(), set)
        })
        .collect()
}

fn start_agents(ns: &Netns) -> Vec<Guard> {
    (1..=AGENTS)
        .map(|k| {
            let mut c = ns.command(&bin());
            c.args(["agent", "--no-ui", "--json"])
                .args(["--name", &host_name(k)])
                .args(["--reflect", &format!("127.0.1.{k}:8080")])
                .args(["--stamp-port", "0", "--tcp-port", "0"])
                .args(["--bind", &format!("127.0.1.{k}")])
                .args(["--metrics-listen", &format!("127.0.1.{k}:9862")])
                .args(["--peers-srv", SRV, "--discover-every", "2s"])
                .args(["--fanout", &FANOUT.to_string()])
                .args(["--label-from-name", "rack=2", "--tier-label", "rack"])
                .args(["--series-label", "rack"])
                .args(["--interval", "500ms", "--report-every", "2s"])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            Guard(c.spawn().unwrap())
        })
        .collect()
}

/// The mesh: subsets as hashed, in-degrees, a DNS record removed, the
/// rack → rack roll-up.
#[test]
fn thirty_agents_discover_each_other_and_probe_their_rack_and_five_more() {
    let test = "thirty_agents_discover_each_other_and_probe_their_rack_and_five_more";
    if missing(test, &["dnsmasq", "prometheus", "curl"]).is_none() {
        return;
    }
    // Thirty agents load both CPUs.
    let _alone = one_at_a_time();
    let started = Instant::now();
    let ns = Netns::new("synfleet");
    std::fs::create_dir_all(ns.etc()).unwrap();
    std::fs::write(
        ns.etc().join("resolv.conf"),
        "nameserver 127.0.0.53\noptions timeout:1 attempts:2\n",
    )
    .unwrap();
    let all: Vec<usize> = (1..=AGENTS).collect();
    let mut dns = dnsmasq(&ns, &all);
    let _agents = start_agents(&ns);
    let prom = Prometheus::start(&ns);

    // Every agent probes exactly its rack (5 others) and 5 more, the ones
    // the hashing names.
    let want = predicted(&all);
    let got = eventually(Duration::from_secs(40), "every agent's peers", || {
        let got = prom.peers(".*");
        if got.len() == AGENTS && got.values().all(|s| s.len() == RACK - 1 + FANOUT) {
            Ok(got)
        } else {
            Err(format!("{} agents: {got:?}", got.len()))
        }
    });
    assert_eq!(got, want, "every subset as the hashing predicts");
    let tier = prom.peers("tier");
    assert!(tier.values().all(|s| s.len() == RACK - 1), "{tier:?}");

    // Every agent is probed by 5 ± 3 beyond its rack (the fanout's
    // in-degree), and its reflector sees rack + in-degree sources.
    let fanout = prom.peers("fanout");
    let mut in_degree: HashMap<String, usize> = all.iter().map(|&k| (host_name(k), 0)).collect();
    for peers in fanout.values() {
        for p in peers {
            *in_degree.get_mut(p).unwrap() += 1;
        }
    }
    let degrees: Vec<usize> = all.iter().map(|&k| in_degree[&host_name(k)]).collect();
    println!("in-degree beyond the rack: {degrees:?}");
    assert!(
        degrees.iter().all(|d| d.abs_diff(FANOUT) <= 3),
        "{degrees:?}"
    );
    eventually(Duration::from_secs(20), "the reflectors' sources", || {
        let seen: HashMap<String, f64> = prom
            .query("synapse_probed_by_sources")
            .into_iter()
            .map(|(l, v)| (l["source"].clone(), v))
            .collect();
        let wrong: Vec<String> = in_degree
            .iter()
            .filter(|(h, d)| seen.get(*h).copied() != Some((RACK - 1 + **d) as f64))
            .map(|(h, d)| format!("{h}: {:?} != {}", seen.get(h), RACK - 1 + d))
            .collect();
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(wrong.join(", "))
        }
    });

    // The rack -> rack roll-up: one row per rack pair that is probed.
    let pairs_want: BTreeSet<(String, String)> = want
        .iter()
        .flat_map(|(s, peers)| {
            let rack = |n: &str| n.split('.').nth(1).unwrap().to_string();
            peers.iter().map(move |p| (rack(s), rack(p)))
        })
        .collect();
    let rows = eventually(Duration::from_secs(30), "the rack -> rack rows", || {
        let rows: BTreeSet<(String, String)> = prom
            .query("rack_pair:synapse_rtt_seconds:p50_5m")
            .into_iter()
            .filter(|(_, v)| v.is_finite() && *v > 0.0)
            .map(|(l, _)| (l["source_rack"].clone(), l["peer_rack"].clone()))
            .collect();
        if rows == pairs_want {
            Ok(rows)
        } else {
            Err(format!("{rows:?}"))
        }
    });
    println!(
        "rack pairs rolled up: {} (of {} racks squared)",
        rows.len(),
        (AGENTS / RACK).pow(2)
    );
    assert_eq!(
        rows.len(),
        (AGENTS / RACK).pow(2),
        "every rack pair is probed at fanout 5"
    );

    // One agent's DNS records removed: only the agents that probed it
    // change, each by that one peer (and a replacement for a fanout edge).
    let gone = 7;
    let gone_name = host_name(gone);
    let rest: Vec<usize> = all.iter().copied().filter(|&k| k != gone).collect();
    drop(dns);
    dns = dnsmasq(&ns, &rest);
    let after_want = predicted(&rest);
    let after = eventually(Duration::from_secs(20), "the subsets without h7", || {
        let mut now = prom.peers(".*");
        now.remove(&gone_name);
        if now == after_want {
            Ok(now)
        } else {
            Err(format!("{now:?}"))
        }
    });
    let moved: Vec<(&String, usize)> = after
        .iter()
        .map(|(h, s)| (h, s.symmetric_difference(&want[h]).count()))
        .filter(|(_, d)| *d > 0)
        .collect();
    let probed_it = want.values().filter(|s| s.contains(&gone_name)).count();
    println!(
        "h7 removed: {} agents changed (it was probed by {probed_it}): {moved:?}",
        moved.len()
    );
    assert_eq!(moved.len(), probed_it, "only those that probed it");
    assert!(
        moved.iter().all(|(_, d)| *d <= 2),
        "one peer out, at most one in"
    );
    assert!(moved.iter().all(|(h, _)| want[*h].contains(&gone_name)));
    // Its series at the others went stale: gone from Prometheus.
    eventually(Duration::from_secs(10), "h7's series stale", || {
        let left = prom.query(&format!(
            "synapse_peer_info{{peer=\"{gone_name}\"}} or synapse_probes_sent_total{{peer=\"{gone_name}\",source!=\"{gone_name}\"}}"
        ));
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{left:?}"))
        }
    });
    drop(dns);
    println!(
        "the mesh test took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Namespaces for ECMP: A — R ⇉ (P1 | P2) — B, R spreading flows to B's
/// address over P1 and P2 by their L4 hash; removed on drop.
struct Ecmp {
    names: Vec<String>,
}

const B_ADDR: &str = "10.241.9.1";

impl Ecmp {
    fn new() -> Ecmp {
        let id = std::process::id();
        let names: Vec<String> = ["a", "r", "p1", "p2", "b"]
            .iter()
            .map(|n| format!("synecmp-{n}-{id}"))
            .collect();
        for n in &names {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
            run("ip", &["netns", "add", n]);
            run("ip", &["-n", n, "link", "set", "lo", "up"]);
        }
        let e = Ecmp { names };
        // (namespace, its end's address) for each link, /24 each.
        let links = [
            ((0, "10.241.1.2"), (1, "10.241.1.1")),
            ((1, "10.241.11.1"), (2, "10.241.11.2")),
            ((1, "10.241.12.1"), (3, "10.241.12.2")),
            ((2, "10.241.21.1"), (4, "10.241.21.2")),
            ((3, "10.241.22.1"), (4, "10.241.22.2")),
        ];
        for (i, ((x, xa), (y, ya))) in links.iter().enumerate() {
            let (vx, vy) = (format!("ecx{i}-{id}"), format!("ecy{i}-{id}"));
            let (vx, vy) = (&vx[..vx.len().min(15)], &vy[..vy.len().min(15)]);
            run(
                "ip",
                &[
                    "link",
                    "add",
                    vx,
                    "netns",
                    &e.names[*x],
                    "type",
                    "veth",
                    "peer",
                    "name",
                    vy,
                    "netns",
                    &e.names[*y],
                ],
            );
            for (ns, dev, addr) in [(*x, vx, xa), (*y, vy, ya)] {
                run(
                    "ip",
                    &[
                        "-n",
                        &e.names[ns],
                        "addr",
                        "add",
                        &format!("{addr}/24"),
                        "dev",
                        dev,
                    ],
                );
                run("ip", &["-n", &e.names[ns], "link", "set", dev, "up"]);
            }
        }
        for ns in 0..e.names.len() {
            // Replies come back over P1 whichever way their request went:
            // no reverse-path filter may drop them.
            e.exec(
                ns,
                "sh",
                &[
                    "-c",
                    "for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > $f; done",
                ],
            );
        }
        for ns in 1..=3 {
            e.exec(ns, "sysctl", &["-qw", "net.ipv4.ip_forward=1"]);
        }
        e.exec(
            1,
            "sysctl",
            &["-qw", "net.ipv4.fib_multipath_hash_policy=1"],
        );
        run(
            "ip",
            &[
                "-n",
                &e.names[4],
                "addr",
                "add",
                &format!("{B_ADDR}/32"),
                "dev",
                "lo",
            ],
        );
        let route = |ns: usize, args: &[&str]| {
            let mut a = vec!["-n", &e.names[ns], "route", "add"];
            a.extend_from_slice(args);
            run("ip", &a);
        };
        route(0, &["default", "via", "10.241.1.1"]);
        route(
            1,
            &[
                B_ADDR,
                "nexthop",
                "via",
                "10.241.11.2",
                "nexthop",
                "via",
                "10.241.12.2",
            ],
        );
        route(2, &[B_ADDR, "via", "10.241.21.2"]);
        route(3, &[B_ADDR, "via", "10.241.22.2"]);
        route(2, &["10.241.1.0/24", "via", "10.241.11.1"]);
        // B answers through P1 only: the loss on P2 is one way, forward.
        route(4, &["default", "via", "10.241.21.1"]);
        e
    }

    fn exec(&self, ns: usize, program: &str, args: &[&str]) -> String {
        let mut a = vec!["netns", "exec", &self.names[ns], program];
        a.extend_from_slice(args);
        run("ip", &a)
    }

    /// Packets P1 or P2 forwarded from each of `ports` (counted before any
    /// drop), since `count` was called.
    fn count(&self, ports: &[u16]) {
        for ns in [2, 3] {
            self.exec(ns, "iptables", &["-N", "synecmp"]);
            self.exec(ns, "iptables", &["-I", "FORWARD", "1", "-j", "synecmp"]);
            for p in ports {
                self.exec(
                    ns,
                    "iptables",
                    &["-A", "synecmp", "-p", "udp", "--sport", &p.to_string()],
                );
            }
        }
    }

    fn counted(&self, ns: usize) -> BTreeMap<u16, u64> {
        let out = self.exec(ns, "iptables", &["-nvxL", "synecmp"]);
        out.lines()
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let packets: u64 = w.first()?.parse().ok()?;
                let port = l
                    .split("spt:")
                    .nth(1)?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()?;
                Some((port, packets))
            })
            .collect()
    }
}

impl Drop for Ecmp {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// The agent's `--json` lines, one window at a time.
fn windows(child: &mut std::process::Child) -> mpsc::Receiver<serde_json::Value> {
    let out = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line)
                && tx.send(v).is_err()
            {
                return;
            }
        }
    });
    rx
}

/// ECMP: 20 % loss on one of two next hops; `--paths 8` shows it on the
/// ports that hash there (≈ 20 %) and none on the others (0).
#[test]
fn eight_paths_find_the_lossy_ecmp_next_hop() {
    let test = "eight_paths_find_the_lossy_ecmp_next_hop";
    if missing(test, &["iptables"]).is_none() {
        return;
    }
    let _alone = one_at_a_time();
    let started = Instant::now();
    let e = Ecmp::new();
    e.exec(
        3,
        "iptables",
        &[
            "-A",
            "FORWARD",
            "-p",
            "udp",
            "-d",
            B_ADDR,
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            "0.2",
            "-j",
            "DROP",
        ],
    );
    let b = Guard(
        Command::new("ip")
            .args(["netns", "exec", &e.names[4]])
            .arg(bin())
            .args(["agent", "--no-ui", "--reflect", &format!("{B_ADDR}:8080")])
            .args([
                "--stamp-port",
                "0",
                "--tcp-port",
                "0",
                "--metrics-listen",
                "127.0.0.1:0",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // A run whose 8 ports all hash onto one next hop (1 in 128) is run
    // again: new ports, a new draw.
    for attempt in 1..=3 {
        let mut a = Command::new("ip")
            .args(["netns", "exec", &e.names[0]])
            .arg(bin())
            .args([
                "agent",
                "--no-ui",
                "--json",
                "--reflect",
                "none",
                "--name",
                "a",
            ])
            .args([
                "--metrics-listen",
                "127.0.0.1:0",
                "--peer",
                &format!("b={B_ADDR}:8080"),
            ])
            .args(["--paths", "8", "--interval", "4ms", "--report-every", "4s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let rx = windows(&mut a);
        let _a = Guard(a);
        let next = || rx.recv_timeout(Duration::from_secs(15)).expect("a window");
        let first = next();
        let ports: Vec<u16> = first["paths"]["each"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["port"].as_u64().unwrap() as u16)
            .collect();
        assert_eq!(ports.len(), 8, "{first}");
        e.count(&ports);
        // The first whole window after the counters were set.
        let _ = next();
        let w = next();
        let (via1, via2) = (e.counted(2), e.counted(3));
        let through_p2: BTreeSet<u16> = via2
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(p, _)| *p)
            .collect();
        println!("attempt {attempt}: P1 {via1:?}, P2 {via2:?}");
        for ns in [2, 3] {
            e.exec(ns, "iptables", &["-D", "FORWARD", "-j", "synecmp"]);
            e.exec(ns, "iptables", &["-F", "synecmp"]);
            e.exec(ns, "iptables", &["-X", "synecmp"]);
        }
        if through_p2.is_empty() || through_p2.len() == ports.len() {
            continue;
        }
        let each = w["paths"]["each"].as_array().unwrap();
        for p in each {
            let port = p["port"].as_u64().unwrap() as u16;
            let (sent, lost) = (p["sent"].as_u64().unwrap(), p["lost"].as_u64().unwrap());
            let loss = lost as f64 / sent as f64;
            println!(
                "  port {port}: {lost} of {sent} lost ({:.1} %), via {}",
                loss * 100.0,
                if through_p2.contains(&port) {
                    "P2"
                } else {
                    "P1"
                }
            );
            assert!(sent >= 80, "{p}");
            if through_p2.contains(&port) {
                // 20 % of ~125: within 4 standard deviations.
                assert!((0.08..=0.34).contains(&loss), "port {port} via P2: {loss}");
            } else {
                assert_eq!(lost, 0, "port {port} via P1 lost {lost}");
            }
        }
        let worst = w["paths"]["worst_port"].as_u64().unwrap() as u16;
        assert!(
            through_p2.contains(&worst),
            "the worst path is one through P2: {w}"
        );
        assert_eq!(
            w["paths"]["lossy"].as_u64(),
            Some(through_p2.len() as u64),
            "{w}"
        );
        drop(b);
        println!(
            "the ECMP test took {:.1} s",
            started.elapsed().as_secs_f64()
        );
        return;
    }
    panic!("three runs of 8 ports each all hashed onto one next hop");
}
