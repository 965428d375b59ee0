//! The files shipped in `assets/` are valid: the Prometheus config and
//! rules pass `promtool` (and the rules' own unit tests), the Grafana
//! dashboard is JSON whose queries name the agent's metrics, and the
//! example agent config loads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{synapse, tool};
use std::path::{Path, PathBuf};
use std::process::Command;

fn assets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets")
}

fn promtool(args: &[&str], test: &str) {
    let Some(bin) = tool("promtool", test) else {
        return;
    };
    let out = Command::new(bin)
        .args(args)
        .current_dir(assets().join("prometheus"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_prometheus_config_passes_promtool() {
    promtool(
        &["check", "config", "prometheus.yml"],
        "the_prometheus_config_passes_promtool",
    );
}

#[test]
fn the_rules_pass_promtool_and_their_unit_tests() {
    let test = "the_rules_pass_promtool_and_their_unit_tests";
    promtool(
        &["check", "rules", "synapse.rules.yml", "synapse.alerts.yml"],
        test,
    );
    promtool(&["test", "rules", "synapse.rules.test.yml"], test);
}

#[test]
fn the_dashboard_is_json_about_the_agents_metrics() {
    let text = std::fs::read_to_string(assets().join("grafana/synapse-dashboard.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(
        v["panels"].as_array().is_some_and(|p| p.len() >= 5),
        "panels"
    );
    for metric in [
        "synapse_rtt_seconds",
        "synapse_rtt_segment_seconds",
        "synapse_probes_lost_total",
    ] {
        assert!(
            text.contains(metric),
            "the dashboard never queries {metric}"
        );
    }
}

/// Checked with `--check`, which sends nothing (its peers are examples).
#[test]
fn the_example_agent_configs_load() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for cfg in [
        assets().join("config.agent.example.toml"),
        root.join("config.example.toml"),
    ] {
        let out = synapse()
            .args(["agent", "--check", "--config"])
            .arg(&cfg)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            cfg.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.starts_with("agent '"), "{said}");
        assert!(said.lines().count() >= 2, "at least one peer: {said}");
    }
}

/// Both units pass `systemd-analyze verify` (their binary pointed at this
/// build's, man pages not looked for), with no warning about their own
/// lines: an unknown or misspelt key only warns, so warnings fail too.
#[test]
fn the_systemd_units_pass_systemd_analyze_verify() {
    let Some(bin) = tool(
        "systemd-analyze",
        "the_systemd_units_pass_systemd_analyze_verify",
    ) else {
        return;
    };
    let synapse_bin = assert_cmd::cargo::cargo_bin!("synapse");
    let dir = tempfile::tempdir().unwrap();
    for unit in ["synapse-server.service", "synapse-agent.service"] {
        let text = std::fs::read_to_string(assets().join("systemd").join(unit)).unwrap();
        assert!(text.contains("ExecStart=/usr/local/bin/synapse "), "{unit}");
        let path = dir.path().join(unit);
        let here = text.replace("/usr/local/bin/synapse", synapse_bin.to_str().unwrap());
        std::fs::write(&path, here).unwrap();
        let out = Command::new(&bin)
            .args(["verify", "--man=no"])
            .arg(&path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{unit}: {err}");
        assert!(!err.contains(unit), "{unit} warned: {err}");
    }
}

/// The server unit runs the reflector without root: no User=root, a
/// dynamic user, and only the capabilities it needs.
#[test]
fn the_server_unit_runs_unprivileged() {
    let text =
        std::fs::read_to_string(assets().join("systemd").join("synapse-server.service")).unwrap();
    for line in [
        "DynamicUser=yes",
        "AmbientCapabilities=CAP_NET_BIND_SERVICE CAP_SYS_NICE",
        "CapabilityBoundingSet=CAP_NET_BIND_SERVICE CAP_SYS_NICE",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}");
    }
    assert!(!text.contains("User=root"));
}
