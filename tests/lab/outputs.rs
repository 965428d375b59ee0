//! Reading what a scenario left in its directory: what it told netem
//! (`told`), what the kernel counted (`qdisc-*.json`, `snmp*-*.txt`,
//! `link-*.json`), and what Synapse reported (`*.json`, `*.txt`, and the
//! per-packet logs of client and reflector).

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One scenario's output directory.
pub struct Scenario {
    pub name: String,
    pub dir: PathBuf,
}

impl Scenario {
    pub fn new(root: &Path, name: &str) -> Self {
        Self {
            name: name.to_string(),
            dir: root.join(name),
        }
    }

    fn read(&self, file: &str) -> String {
        let path = self.dir.join(file);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", path.display(), self.log_tail()))
    }

    /// The end of the scenario's own log, for failure messages.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// The scenario script's exit status (None: it never finished).
    pub fn rc(&self) -> Option<i32> {
        std::fs::read_to_string(self.dir.join("rc"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
    }

    /// How long the scenario took, seconds.
    pub fn seconds(&self) -> f64 {
        std::fs::read_to_string(self.dir.join("seconds"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(f64::NAN)
    }

    /// `told KEY VALUE` lines, the last one of each key.
    pub fn told(&self) -> HashMap<String, String> {
        self.read("told")
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    pub fn told_f64(&self, key: &str) -> f64 {
        let told = self.told();
        let v = told
            .get(key)
            .unwrap_or_else(|| panic!("{}: told has no {key}", self.name));
        v.parse()
            .unwrap_or_else(|_| panic!("{}: told {key}={v}", self.name))
    }

    /// A client run's exit status.
    pub fn run_rc(&self, run: &str) -> i32 {
        self.read(&format!("{run}.rc")).trim().parse().unwrap()
    }

    /// A client run's stderr.
    pub fn run_err(&self, run: &str) -> String {
        self.read(&format!("{run}.err"))
    }

    /// A client run's JSON report.
    pub fn json(&self, run: &str) -> Value {
        let text = self.read(&format!("{run}.json"));
        serde_json::from_str(text.trim()).unwrap_or_else(|e| {
            panic!(
                "{}/{run}.json: {e}: {text}\n{}",
                self.name,
                self.run_err(run)
            )
        })
    }

    /// A client run's text report.
    pub fn text(&self, run: &str) -> String {
        self.read(&format!("{run}.txt"))
    }

    /// A client run's per-packet log.
    pub fn client_log(&self, run: &str) -> Vec<ClientRow> {
        csv_rows(&self.read(&format!("{run}.csv")))
            .into_iter()
            .map(ClientRow::from)
            .collect()
    }

    /// A reflector's per-answer log.
    pub fn server_log(&self, name: &str) -> Vec<ServerRow> {
        csv_rows(&self.read(&format!("{name}.csv")))
            .into_iter()
            .map(ServerRow::from)
            .collect()
    }

    /// `tc -s -j qdisc show` of one host at one snapshot.
    pub fn qdiscs(&self, snap: &str, host: char) -> Vec<Value> {
        let text = self.read(&format!("qdisc-{snap}-{host}.json"));
        serde_json::from_str::<Value>(&text)
            .unwrap()
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The counters of the qdisc with `handle` (e.g. "1:", "20:").
    pub fn qdisc(&self, snap: &str, host: char, handle: &str) -> Qdisc {
        let q = self.qdiscs(snap, host);
        let q = q
            .iter()
            .find(|q| q["handle"] == handle)
            .unwrap_or_else(|| panic!("{}: no qdisc {handle} in {snap}-{host}", self.name));
        Qdisc {
            packets: q["packets"].as_u64().unwrap(),
            drops: q["drops"].as_u64().unwrap(),
            qlen: q["qlen"].as_u64().unwrap(),
        }
    }

    /// The packets the actions of one device's filters passed, from
    /// `tc -s -j filter show` (`filter-SNAP-HOST.json`). An action counts a
    /// GSO packet's segments, each a datagram; netem counts it as one.
    pub fn filter_passed(&self, snap: &str, host: char) -> u64 {
        let text = self.read(&format!("filter-{snap}-{host}.json"));
        let filters: Value = serde_json::from_str(&text).unwrap();
        filters
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["options"]["actions"].as_array())
            .flatten()
            .map(|a| a["stats"]["packets"].as_u64().unwrap())
            .sum()
    }

    /// /proc/net/snmp and /proc/net/snmp6 of one host, as `Udp.InErrors`,
    /// `Icmp6OutPktTooBigs`, …
    pub fn snmp(&self, snap: &str, host: char) -> HashMap<String, i64> {
        let mut m = HashMap::new();
        let text = self.read(&format!("snmp-{snap}-{host}.txt"));
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.chunks(2) {
            let (names, values) = (pair[0].split_whitespace(), pair[1].split_whitespace());
            let mut both = names.zip(values);
            let Some((proto, _)) = both.next() else {
                continue;
            };
            let proto = proto.trim_end_matches(':');
            for (k, v) in both {
                m.insert(format!("{proto}.{k}"), v.parse().unwrap());
            }
        }
        let six = std::fs::read_to_string(self.dir.join(format!("snmp6-{snap}-{host}.txt")));
        for line in six.unwrap_or_default().lines() {
            if let Some((k, v)) = line.split_once(char::is_whitespace) {
                m.insert(k.to_string(), v.trim().parse().unwrap_or(0));
            }
        }
        m
    }

    /// How much a kernel counter grew between two snapshots.
    pub fn snmp_delta(&self, from: &str, to: &str, host: char, key: &str) -> i64 {
        let get = |snap| self.snmp(snap, host).get(key).copied().unwrap_or(0);
        get(to) - get(from)
    }

    /// An interface's counters (`rx.packets`, `tx.dropped`, …) at a
    /// snapshot, from `ip -s -j link`.
    pub fn link(&self, snap: &str, host: char, dev: &str, key: &str) -> i64 {
        let text = self.read(&format!("link-{snap}-{host}.json"));
        let links: Value = serde_json::from_str(&text).unwrap();
        let link = links
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["ifname"] == dev)
            .unwrap_or_else(|| panic!("{}: no {dev} in {snap}-{host}", self.name));
        let (dir, field) = key.split_once('.').unwrap();
        link["stats64"][dir][field].as_i64().unwrap()
    }
}

/// A qdisc's counters.
#[derive(Debug, Clone, Copy)]
pub struct Qdisc {
    /// Packets sent on (a GSO packet's segments each count).
    pub packets: u64,
    /// Packets dropped (a GSO packet counts once).
    pub drops: u64,
    /// Packets queued at the snapshot.
    pub qlen: u64,
}

fn csv_rows(text: &str) -> Vec<HashMap<String, String>> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// `seconds.nanoseconds` as nanoseconds; None when empty.
pub fn ns(field: Option<&String>) -> Option<i64> {
    let (s, frac) = field?.split_once('.')?;
    Some(s.parse::<i64>().ok()? * 1_000_000_000 + frac.parse::<i64>().ok()?)
}

/// One row of a client's `--log`.
#[derive(Debug, Clone)]
pub struct ClientRow {
    pub seq: u64,
    pub status: String,
    pub t1: Option<i64>,
    pub t2: Option<i64>,
    pub t3: Option<i64>,
    pub t4: Option<i64>,
    /// The client kernel's receive stamp of the reply.
    pub t4_kernel: Option<i64>,
    /// The client's driver TX stamp, and the NIC's TX and RX stamps (the
    /// NIC's own clock).
    pub t1_driver: Option<i64>,
    pub t1_hw: Option<i64>,
    pub t4_hw: Option<i64>,
    pub rtt: Option<i64>,
    /// T1 hw on the system clock, through Synapse's reading of the NIC's
    /// clock against it.
    pub t1_wire: Option<i64>,
    /// The reflector's T3 from its Follow-Ups, when its NIC stamped.
    pub t3_hw: Option<i64>,
    /// The slot it was due in.
    pub sched: Option<i64>,
}

impl From<HashMap<String, String>> for ClientRow {
    fn from(r: HashMap<String, String>) -> Self {
        Self {
            seq: r["SEQ"].parse().unwrap(),
            status: r["STATUS"].clone(),
            t1: ns(r.get("T1_SW")),
            t2: ns(r.get("T2_SW")),
            t3: ns(r.get("T3_SW")),
            t4: ns(r.get("T4_SW")),
            t4_kernel: ns(r.get("T4_DRV")),
            t1_driver: ns(r.get("T1_DRV")),
            t1_hw: ns(r.get("T1_HW")),
            t4_hw: ns(r.get("T4_HW")),
            rtt: r.get("RTT").and_then(|v| v.parse().ok()),
            t1_wire: ns(r.get("T1_WIRE")),
            t3_hw: ns(r.get("T3_HW")),
            sched: ns(r.get("SCHED")),
        }
    }
}

impl ClientRow {
    /// T2 − T1: the request's one-way delay (one clock: same kernel).
    pub fn forward(&self) -> Option<i64> {
        Some(self.t2? - self.t1?)
    }

    /// T4 at the client's kernel − T3: the reply's, as the kernel saw it
    /// arrive.
    pub fn backward_kernel(&self) -> Option<i64> {
        Some(self.t4_kernel? - self.t3?)
    }
}

/// One row of a reflector's `--log`: one answered datagram.
#[derive(Debug, Clone)]
pub struct ServerRow {
    pub proto: String,
    pub peer: String,
    /// STAMP: the sender's number on the wire (a Synapse client's request
    /// k carries k + 1); echo: the client's own k.
    pub seq: u64,
    /// The kernel's receive stamp.
    pub t2: Option<i64>,
    /// The NIC's receive stamp (its clock).
    pub t2_hw: Option<i64>,
    /// The answer's TX stamps: the kernel's (driver) and the NIC's.
    pub t3_driver: Option<i64>,
    pub t3_hw: Option<i64>,
}

impl From<HashMap<String, String>> for ServerRow {
    fn from(r: HashMap<String, String>) -> Self {
        Self {
            proto: r["PROTO"].clone(),
            peer: r["PEER"].clone(),
            seq: r["SEQ"].parse().unwrap_or(u64::MAX),
            t2: ns(r.get("T2_DRV")),
            t2_hw: ns(r.get("T2_HW")),
            t3_driver: ns(r.get("T3_DRV")),
            t3_hw: ns(r.get("T3_HW")),
        }
    }
}

impl ServerRow {
    /// The client's request number k this row answered.
    pub fn request(&self) -> u64 {
        if self.proto == "stamp" {
            self.seq.wrapping_sub(1)
        } else {
            self.seq
        }
    }

    /// The client's port.
    pub fn port(&self) -> u16 {
        self.peer.rsplit(':').next().unwrap().parse().unwrap()
    }
}
