//! The agent without a terminal: a banner, then at each window's end one
//! summary line (text) or one JSON object per peer (`--json`), for users
//! without Prometheus.

use super::paths::{PathFigures, PathSpread, spread};
use super::window::Figures;
use super::{Agent, POLL, Signals};
use crate::error::AppError;
use crate::plan::agent::Chosen;
use crate::plan::agent::PeerConfig;
use serde::Serialize;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use synapse_stats::Segment;
use synapse_units::{count_of, format_ns, group_thousands};

/// One peer's window, as a `--json` line.
#[derive(Debug, Serialize)]
pub struct PeerLine<'a> {
    /// Unix time the window ended, seconds.
    pub time: f64,
    /// This agent.
    pub source: &'a str,
    /// The peer.
    pub peer: &'a str,
    /// Its address as configured.
    pub address: &'a str,
    /// `echo` or `stamp`.
    pub protocol: &'static str,
    /// `udp` or `tcp`.
    pub transport: &'static str,
    /// The window's length, seconds.
    pub window_s: f64,
    /// Counts, percentiles and loss over the window.
    #[serde(flatten)]
    pub figures: &'a Figures,
    /// Whether a probe had a timely reply in the window (`null`: none
    /// sent).
    pub up: Option<bool>,
    /// Why none did: the path's error, answers that are no replies, or
    /// silence (`null` when up).
    pub reason: Option<String>,
    /// Mean of each measured segment, ns.
    pub segments_mean_ns: serde_json::Map<String, serde_json::Value>,
    /// Its labels (from discovery or its table).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub labels: &'a crate::plan::agent::Labels,
    /// How it came to be probed: `named`, `tier`, `fanout`.
    pub chosen: &'static str,
    /// With `--paths`: each path's port and figures, and the worst one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths: Option<PathsLine<'a>>,
}

/// A peer's paths in a `--json` line.
#[derive(Debug, Serialize)]
pub struct PathsLine<'a> {
    /// The worst path and the spread.
    #[serde(flatten)]
    pub spread: PathSpread,
    /// Each path.
    pub each: &'a [PathFigures],
}

/// The JSON line of peer `p` over a window that ended at `time`; its
/// paths' figures when it has more than one.
pub fn json_line(
    source: &str,
    p: &PeerConfig,
    (f, paths): (&Figures, &[PathFigures]),
    window_s: f64,
    time: f64,
) -> String {
    let segments_mean_ns = Segment::ALL
        .iter()
        .zip(f.segments_mean_ns)
        .filter_map(|(s, v)| Some((s.key().to_string(), v?.into())))
        .collect();
    let line = PeerLine {
        time,
        source,
        peer: &p.name,
        address: &p.address,
        protocol: p.protocol(),
        transport: p.transport.name(),
        window_s,
        figures: f,
        up: super::health::up(f),
        reason: super::health::reason(f),
        segments_mean_ns,
        labels: &p.labels,
        chosen: p.chosen.name(),
        paths: (paths.len() > 1).then(|| PathsLine {
            spread: spread(paths),
            each: paths,
        }),
    };
    serde_json::to_string(&line).unwrap_or_default()
}

/// Peers the summary on quitting names; the rest are counted.
const SUMMARY_PEERS: usize = 40;

/// What the live table showed, peer by peer, for the terminal once the
/// table is gone: each peer's last window and, when it did not answer,
/// why.
pub fn final_summary(agent: &Agent) -> String {
    let c = &agent.cfg;
    let mut text = format!(
        "synapse agent {}: {} probed, windows of {} s\n",
        c.name,
        count_of(c.peers.len() as u64, "peer"),
        c.report_every.as_secs()
    );
    for (p, w) in c.peers.iter().zip(&agent.windows).take(SUMMARY_PEERS) {
        let f = w.live();
        let loss = f
            .loss_percent
            .map_or_else(|| "—".into(), |l| format!("{l:.2} %"));
        let rtt = |v: Option<u64>| v.map_or_else(|| "—".into(), |v| format_ns(v as f64));
        let state = match super::health::reason(&f) {
            Some(why) => format!("DOWN: {why}"),
            None if f.sent == 0 => "nothing sent yet".into(),
            None => "up".into(),
        };
        text.push_str(&format!(
            "  {} ({}): p50 {}, p99 {}, loss {loss}: {state}\n",
            p.name,
            p.address,
            rtt(f.rtt_p50_ns),
            rtt(f.rtt_p99_ns)
        ));
    }
    if c.peers.len() > SUMMARY_PEERS {
        text.push_str(&format!(
            "  and {} more (the --json lines and /metrics have every one)\n",
            group_thousands((c.peers.len() - SUMMARY_PEERS) as u64)
        ));
    }
    text
}

/// Silent peers a window's line names; the rest are counted.
const SILENT_NAMED: usize = 3;

/// The text line for a window: totals over all peers, the worst one, and
/// the silent ones (a few by name, then how many more: a thousand peers
/// make a line, not a page).
pub fn summary_line(peers: &[PeerConfig], figures: &[Figures]) -> String {
    let sent: u64 = figures.iter().map(|f| f.sent).sum();
    let lost: u64 = figures.iter().map(|f| f.lost).sum();
    let mut text = format!(
        "{}: {}, {} lost",
        count_of(peers.len() as u64, "peer"),
        count_of(sent, "probe"),
        group_thousands(lost)
    );
    if sent > 0 {
        text.push_str(&format!(" ({:.2} %)", lost as f64 * 100.0 / sent as f64));
    }
    let worst = peers
        .iter()
        .zip(figures)
        .filter_map(|(p, f)| Some((p, f.rtt_p99_ns?)))
        .max_by_key(|(_, v)| *v);
    if let Some((p, v)) = worst {
        text.push_str(&format!(
            ", highest p99 {} ({})",
            format_ns(v as f64),
            p.name
        ));
    }
    let silent: Vec<&str> = peers
        .iter()
        .zip(figures)
        .filter(|(_, f)| f.sent > 0 && f.rtt_p50_ns.is_none())
        .map(|(p, _)| p.name.as_str())
        .collect();
    if !silent.is_empty() {
        let named = silent[..silent.len().min(SILENT_NAMED)].join(", ");
        let rest = silent.len().saturating_sub(SILENT_NAMED);
        text.push_str(&format!(", no reply from {named}"));
        if rest > 0 {
            text.push_str(&format!(" and {} more", group_thousands(rest as u64)));
        }
    }
    text
}

/// What `--check` prints: the configuration as it would run.
pub fn check_text(c: &crate::plan::agent::AgentConfig) -> String {
    let reflect = c.reflect.map_or_else(|| "none".into(), |a| a.to_string());
    // `+ 0.0`: a sum of no rates is -0.0, which prints as "-0".
    let pps = crate::plan::agent::phase::total_pps(&c.peers) + 0.0;
    let mut out = format!(
        "agent '{}': reflect {reflect}, metrics on {}, {} at {} probes/s (max_pps {})\n",
        c.name,
        c.metrics_listen,
        count_of(c.peers.len() as u64, "peer"),
        group_thousands(pps.round() as u64),
        group_thousands(c.max_pps.round() as u64)
    );
    if c.paths > 1 {
        out.push_str(&format!(
            "  each UDP peer from {} source ports in turn\n",
            c.paths
        ));
    }
    // One row a peer, its columns aligned (names and addresses differ in
    // length): name, address, as given, then what it does.
    let rows: Vec<[String; 4]> = c
        .peers
        .iter()
        .map(|p| {
            [
                p.name.clone(),
                p.addr.to_string(),
                format!("({})", p.address),
                format!(
                    "{} every {}, first at +{}{}{}",
                    p.protocol(),
                    format_ns(p.schedule.interval.as_nanos() as f64),
                    format_ns(p.phase.as_nanos() as f64),
                    match p.chosen {
                        Chosen::Named => String::new(),
                        how => format!(", {}", how.name()),
                    },
                    labels_text(&p.labels),
                ),
            ]
        })
        .collect();
    let width = |k: usize| rows.iter().map(|r| r[k].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    for [name, addr, given, what] in rows {
        out.push_str(&format!(
            "  {name:<w0$}  {addr:<w1$}  {given:<w2$}  {what}\n"
        ));
    }
    out
}

/// ` [rack=r1 zone=z1]`, or nothing.
fn labels_text(l: &crate::plan::agent::Labels) -> String {
    if l.is_empty() {
        return String::new();
    }
    let pairs: Vec<String> = l.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(" [{}]", pairs.join(" "))
}

/// What `--check` adds with discovery: each source and what it gave.
pub fn discovery_text(r: &super::discovery::Round) -> String {
    let mut out = format!(
        "discovered {}, probing {} of them\n",
        count_of(r.hosts as u64, "host"),
        group_thousands(r.peers.len() as u64)
    );
    for s in &r.sources {
        out.push_str(&format!(
            "  {}: {}\n",
            s.key,
            if s.last_ok_s.is_some() {
                count_of(s.hosts as u64, "host")
            } else {
                "no answer".into()
            }
        ));
    }
    for e in &r.errors {
        out.push_str(&format!("  {e}\n"));
    }
    out
}

/// The first lines: who this is and what it does.
pub fn banner(agent: &Agent) -> String {
    let c = &agent.cfg;
    let mut text = format!(
        "Synapse agent '{}': {}, {}, metrics on http://{}/metrics, timestamps {}",
        c.name,
        count_of(c.peers.len() as u64, "peer"),
        agent.answers,
        agent.metrics_addr,
        agent.timestamps
    );
    if c.discovery.any() {
        text.push_str(&format!(
            "\ndiscovery: {} found by {}, every {}",
            count_of(agent.discovered_hosts as u64, "host"),
            c.discovery_sources(),
            synapse_units::duration_text(c.discovery.every)
        ));
    }
    if agent.path_ports.len() > 1 {
        let ports: Vec<String> = agent.path_ports.iter().map(u16::to_string).collect();
        text.push_str(&format!("\npaths: source ports {}", ports.join(", ")));
    }
    text
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Runs headless until stopped.
pub fn run_headless(agent: &mut Agent, signals: &Signals, json: bool) -> Result<(), AppError> {
    let mut out = std::io::stdout().lock();
    if !json {
        writeln!(out, "{}", banner(agent))?;
    }
    while !signals.stop.is_raised() {
        if signals.reload.swap(false, Ordering::Relaxed) {
            agent.reload();
        }
        if let Some(why) = agent.step() {
            return Err(AppError::Runtime(anyhow::anyhow!(why)));
        }
        if let Some(figures) = agent.turn_if_due(Instant::now()) {
            let c = &agent.cfg;
            if json {
                let (window_s, time) = (c.report_every.as_secs_f64(), unix_now());
                for ((p, f), paths) in c.peers.iter().zip(&figures).zip(&agent.paths) {
                    let line = json_line(&c.name, p, (f, &paths.last), window_s, time);
                    writeln!(out, "{line}")?;
                }
            } else {
                writeln!(out, "{}", summary_line(&c.peers, &figures))?;
            }
            out.flush()?;
        }
        for t in agent.tracing.take_finished() {
            let line = if json {
                t.json_line(&agent.cfg.name)
            } else {
                t.text_line()
            };
            writeln!(out, "{line}")?;
            out.flush()?;
        }
        std::thread::sleep(POLL);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn peer(name: &str) -> PeerConfig {
        PeerConfig::for_test(name, "10.0.0.2:8080".parse().unwrap())
    }

    #[test]
    fn a_json_line_has_no_rtt_without_replies_and_names_its_segments() {
        let silent = Figures {
            sent: 100,
            lost: 100,
            loss_percent: Some(100.0),
            ..Figures::default()
        };
        let v: serde_json::Value =
            serde_json::from_str(&json_line("a", &peer("b"), (&silent, &[]), 10.0, 1.5)).unwrap();
        assert_eq!(v["rtt_p50_ns"], serde_json::Value::Null);
        assert_eq!(v["loss_percent"], 100.0);
        assert_eq!(
            (v["source"].as_str(), v["peer"].as_str()),
            (Some("a"), Some("b"))
        );
        assert_eq!(v["transport"], "udp");
        let tcp = PeerConfig {
            transport: synapse_engine::Transport::Tcp,
            ..peer("b")
        };
        let v: serde_json::Value =
            serde_json::from_str(&json_line("a", &tcp, (&silent, &[]), 10.0, 1.5)).unwrap();
        assert_eq!(v["transport"], "tcp");
        let split = Figures {
            rtt_p50_ns: Some(20_000),
            segments_mean_ns: [Some(1), Some(2), None, None, None, None, Some(4), None],
            ..Figures::default()
        };
        let v: serde_json::Value =
            serde_json::from_str(&json_line("a", &peer("b"), (&split, &[]), 10.0, 1.5)).unwrap();
        assert_eq!(
            v["segments_mean_ns"],
            serde_json::json!({"send_path": 1, "network": 2, "receive_path": 4})
        );
    }

    #[test]
    fn the_summary_names_the_worst_and_the_silent() {
        let ok = Figures {
            sent: 100,
            rtt_p50_ns: Some(20_000),
            rtt_p99_ns: Some(45_000),
            ..Figures::default()
        };
        let dead = Figures {
            sent: 100,
            lost: 100,
            ..Figures::default()
        };
        assert_eq!(
            summary_line(&[peer("b"), peer("c")], &[ok, dead]),
            "2 peers: 200 probes, 100 lost (50.00 %), highest p99 45.0 µs (b), no reply from c"
        );
        assert_eq!(summary_line(&[], &[]), "0 peers: 0 probes, 0 lost");
    }

    /// A thousand peers, most of them silent: one short line, numbers
    /// grouped alike, three silent peers named and the rest counted.
    #[test]
    fn a_thousand_peers_make_one_bounded_line() {
        let peers: Vec<PeerConfig> = (0..1_000).map(|i| peer(&format!("h{i}"))).collect();
        let mut figures = vec![
            Figures {
                sent: 100,
                lost: 100,
                ..Figures::default()
            };
            1_000
        ];
        figures[0].sent = 100;
        figures[0].lost = 0;
        figures[0].rtt_p50_ns = Some(20_000);
        figures[0].rtt_p99_ns = Some(30_000);
        let line = summary_line(&peers, &figures);
        assert_eq!(
            line,
            "1,000 peers: 100,000 probes, 99,900 lost (99.90 %), highest p99 30.0 µs (h0), \
             no reply from h1, h2, h3 and 996 more"
        );
        assert!(line.len() < 160, "{}", line.len());
        let one = summary_line(&peers[..1], &figures[1..2]);
        assert_eq!(
            one,
            "1 peer: 100 probes, 100 lost (100.00 %), no reply from h0"
        );
    }

    #[test]
    fn check_text_says_no_minus_zero_and_groups_its_numbers() {
        let cfg = crate::plan::agent::AgentConfig {
            name: "a".into(),
            reflect: None,
            stamp_port: None,
            stamp_required: false,
            reflect_timestamps: Default::default(),
            tcp_port: None,
            tcp_required: false,
            admission: Default::default(),
            metrics_listen: "127.0.0.1:9862".parse().unwrap(),
            report_every: Duration::from_secs(10),
            max_pps: 10_000.0,
            bind: None,
            timeout: Duration::from_millis(100),
            timestamps: Default::default(),
            thread: crate::cli::ThreadArgs {
                cpu: None,
                busy_poll: false,
                rt: false,
                keep_awake: false,
            },
            peers: Vec::new(),
            labels: Default::default(),
            series_labels: Vec::new(),
            paths: 1,
            trace: crate::plan::agent::TracePolicy {
                on_loss: None,
                every: Duration::from_secs(300),
                limit: 4,
            },
            discovery: Default::default(),
        };
        let text = check_text(&cfg);
        assert!(
            text.starts_with("agent 'a': reflect none, metrics on 127.0.0.1:9862, 0 peers at 0 probes/s (max_pps 10,000)"),
            "{text}"
        );
    }
}
