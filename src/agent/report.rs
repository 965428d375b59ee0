//! The agent without a terminal: a banner, then at each window's end one
//! summary line (text) or one JSON object per peer (`--json`), for users
//! without Prometheus.

use super::window::Figures;
use super::{Agent, POLL, Signals};
use crate::error::AppError;
use crate::plan::agent::PeerConfig;
use serde::Serialize;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use synapse_stats::Segment;
use synapse_units::{count_of, format_ns};

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
    /// Mean of each measured segment, ns.
    pub segments_mean_ns: serde_json::Map<String, serde_json::Value>,
}

/// The JSON line of peer `p` over a window that ended at `time`.
pub fn json_line(source: &str, p: &PeerConfig, f: &Figures, window_s: f64, time: f64) -> String {
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
        segments_mean_ns,
    };
    serde_json::to_string(&line).unwrap_or_default()
}

/// The text line for a window: totals over all peers, and the worst one.
pub fn summary_line(peers: &[PeerConfig], figures: &[Figures]) -> String {
    let sent: u64 = figures.iter().map(|f| f.sent).sum();
    let lost: u64 = figures.iter().map(|f| f.lost).sum();
    let mut text = format!(
        "{}: {sent} probes, {lost} lost",
        count_of(peers.len() as u64, "peer")
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
        text.push_str(&format!(", no reply from {}", silent.join(", ")));
    }
    text
}

/// What `--check` prints: the configuration as it would run.
pub fn check_text(c: &crate::plan::agent::AgentConfig) -> String {
    let reflect = c.reflect.map_or_else(|| "none".into(), |a| a.to_string());
    let mut out = format!(
        "agent '{}': reflect {reflect}, metrics on {}, {} at {:.0} probes/s (max_pps {:.0})\n",
        c.name,
        c.metrics_listen,
        count_of(c.peers.len() as u64, "peer"),
        super::spread::total_pps(&c.peers),
        c.max_pps
    );
    for p in &c.peers {
        out.push_str(&format!(
            "  {}  {} ({}), {} every {}, first at +{}\n",
            p.name,
            p.addr,
            p.address,
            p.protocol(),
            format_ns(p.schedule.interval.as_nanos() as f64),
            format_ns(p.phase.as_nanos() as f64),
        ));
    }
    out
}

/// The first lines: who this is and what it does.
pub fn banner(agent: &Agent) -> String {
    let c = &agent.cfg;
    format!(
        "Synapse agent '{}': {}, {}, metrics on http://{}/metrics, timestamps {}",
        c.name,
        count_of(c.peers.len() as u64, "peer"),
        agent.answers,
        agent.metrics_addr,
        agent.timestamps
    )
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
                for (p, f) in c.peers.iter().zip(&figures) {
                    writeln!(out, "{}", json_line(&c.name, p, f, window_s, time))?;
                }
            } else {
                writeln!(out, "{}", summary_line(&c.peers, &figures))?;
            }
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
    use synapse_engine::Schedule;
    use synapse_stats::Pattern;

    fn peer(name: &str) -> PeerConfig {
        PeerConfig {
            name: name.into(),
            address: "10.0.0.2".into(),
            addr: "10.0.0.2:8080".parse().unwrap(),
            schedule: Schedule {
                pattern: Pattern::Periodic,
                interval: Duration::from_millis(100),
            },
            phase: Duration::ZERO,
            size: 8,
            stamp: false,
            ssid: 0,
            key: None,
            marks: None,
            tlvs: Default::default(),
            transport: synapse_engine::Transport::Udp,
        }
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
            serde_json::from_str(&json_line("a", &peer("b"), &silent, 10.0, 1.5)).unwrap();
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
            serde_json::from_str(&json_line("a", &tcp, &silent, 10.0, 1.5)).unwrap();
        assert_eq!(v["transport"], "tcp");
        let split = Figures {
            rtt_p50_ns: Some(20_000),
            segments_mean_ns: [Some(1), Some(2), None, None, None, None, Some(4), None],
            ..Figures::default()
        };
        let v: serde_json::Value =
            serde_json::from_str(&json_line("a", &peer("b"), &split, 10.0, 1.5)).unwrap();
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
}
