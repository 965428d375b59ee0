//! A real Prometheus server scraping targets each second ([`launch`]), and
//! one inside a network namespace the test made, queried through curl in
//! the same namespace (its loopback is not this one's).

use super::Guard;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub struct NsPrometheus {
    ns: String,
    _guard: Guard,
    addr: String,
    _dir: tempfile::TempDir,
}

/// `ip netns exec NS PROGRAM` (it execs: the child is PROGRAM).
fn in_ns(ns: &str, program: &Path) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).arg(program);
    c
}

/// Prometheus `bin` (in `ns`, when given) scraping `targets` (`HOST:PORT`)
/// every second as job `job`, with the rules `rules` (if any) evaluated
/// every second, and `extra` arguments: its guard, the address it listens
/// on, and the directory holding its configuration and data.
pub fn launch(
    bin: &Path,
    ns: Option<&str>,
    (job, targets): (&str, &[String]),
    rules: Option<&str>,
    extra: &[&str],
) -> (Guard, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let rule_files = match rules {
        Some(text) => {
            let path = dir.path().join("rules.yml");
            std::fs::write(&path, text).unwrap();
            format!("rule_files: ['{}']\n", path.display())
        }
        None => String::new(),
    };
    let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
    let cfg = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n{rule_files}scrape_configs:\n  - job_name: {job}\n    static_configs:\n      - targets: [{}]\n",
        list.join(", ")
    );
    std::fs::write(dir.path().join("prometheus.yml"), cfg).unwrap();
    let mut cmd = match ns {
        Some(ns) => in_ns(ns, bin),
        None => Command::new(bin),
    };
    let mut child = cmd
        .arg(format!(
            "--config.file={}",
            dir.path().join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg("--web.listen-address=127.0.0.1:0")
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if line.contains("Listening on")
                && let Some(a) = line.split("address=").nth(1)
            {
                let _ = tx.send(a.split_whitespace().next().unwrap_or("").to_string());
            }
        }
    });
    let guard = Guard(child);
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("Prometheus did not say where it listens");
    (guard, addr, dir)
}

impl NsPrometheus {
    /// Prometheus `bin` in `ns`, scraping `targets` every second as job
    /// `job`, with the rules `rules` (if any).
    pub fn start(
        bin: &Path,
        ns: &str,
        job: &str,
        targets: &[String],
        rules: Option<&str>,
    ) -> NsPrometheus {
        let (guard, addr, dir) = launch(bin, Some(ns), (job, targets), rules, &[]);
        NsPrometheus {
            ns: ns.to_string(),
            _guard: guard,
            addr,
            _dir: dir,
        }
    }

    /// An instant query's result: each series' labels and value.
    pub fn query(&self, q: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        let out = in_ns(&self.ns, Path::new("/usr/bin/env"))
            .args(["curl", "-s", "--max-time", "5", "-G"])
            .arg(format!("http://{}/api/v1/query", self.addr))
            .arg("--data-urlencode")
            .arg(format!("query={q}"))
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        assert_ne!(v["status"], "error", "{q}: {v}");
        let rows = v["data"]["result"].as_array().cloned().unwrap_or_default();
        rows.iter()
            .map(|r| {
                let labels = r["metric"]
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                            .collect()
                    })
                    .unwrap_or_default();
                let value = r["value"][1]
                    .as_str()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(f64::NAN);
                (labels, value)
            })
            .collect()
    }
}
