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
        &[
            "check",
            "rules",
            "synapse.rules.yml",
            "synapse.alerts.yml",
            "synapse.fleet.rules.yml",
            "synapse.trace.rules.yml",
        ],
        test,
    );
    promtool(&["test", "rules", "synapse.rules.test.yml"], test);
    promtool(&["test", "rules", "synapse.fleet.rules.test.yml"], test);
    promtool(&["test", "rules", "synapse.trace.rules.test.yml"], test);
}

/// The topology heatmap: a rack × rack matrix of the rolled-up rules,
/// each cell coloured by its value.
#[test]
fn the_dashboard_has_a_rack_by_rack_heatmap() {
    let text = std::fs::read_to_string(assets().join("grafana/synapse-dashboard.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let panels = v["panels"].as_array().unwrap();
    let topo: Vec<&serde_json::Value> = panels
        .iter()
        .filter(|p| {
            p["title"]
                .as_str()
                .is_some_and(|t| t.starts_with("Topology"))
        })
        .collect();
    assert_eq!(topo.len(), 2, "RTT and loss");
    for p in topo {
        let matrix = &p["transformations"][0];
        assert_eq!(matrix["id"], "groupingToMatrix");
        assert_eq!(matrix["options"]["rowField"], "source_rack");
        assert_eq!(matrix["options"]["columnField"], "peer_rack");
        assert_eq!(
            p["fieldConfig"]["defaults"]["custom"]["cellOptions"]["type"],
            "color-background"
        );
        assert!(
            p["targets"][0]["expr"]
                .as_str()
                .unwrap()
                .starts_with("rack_pair:")
        );
    }
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
        "rack_pair:synapse_rtt_seconds:p50_5m",
        "synapse_path_loss_worst_ratio",
        "synapse_probed_by_sources",
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

/// The Kubernetes manifests (every resource the kustomization lists) pass
/// the Kubernetes schemas, strictly (no unknown field); the DaemonSet
/// discovers through the headless Service's SRV name and takes its labels
/// from the downward API.
#[test]
fn the_kubernetes_manifests_pass_the_schemas() {
    let test = "the_kubernetes_manifests_pass_the_schemas";
    let Some(bin) = tool("kubernetes-validate", test) else {
        return;
    };
    let dir = assets().join("kubernetes");
    let kustomization = std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap();
    let resources: Vec<&str> = kustomization
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter(|l| l.ends_with(".yaml"))
        .collect();
    assert_eq!(
        resources,
        ["namespace.yaml", "service.yaml", "daemonset.yaml"]
    );
    for r in &resources {
        let out = Command::new(&bin)
            .args(["--strict"])
            .arg(dir.join(r))
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && said.contains("passed"),
            "{r}: {said}"
        );
    }
    let service = std::fs::read_to_string(dir.join("service.yaml")).unwrap();
    let ds = std::fs::read_to_string(dir.join("daemonset.yaml")).unwrap();
    assert!(service.contains("clusterIP: None"), "headless");
    assert!(service.contains("name: synapse\n      protocol: UDP"));
    for want in [
        "--peers-srv=_synapse._udp.synapse-agent.$(POD_NAMESPACE).svc.cluster.local",
        "--name=$(POD_NAME).synapse-agent.$(POD_NAMESPACE).svc.cluster.local",
        "subdomain: synapse-agent",
        "fieldPath: spec.nodeName",
        "--fanout=20",
        "--paths=8",
    ] {
        assert!(ds.contains(want), "the DaemonSet: {want}");
    }
}

/// The fleet drop-in, over the agent's unit, passes `systemd-analyze
/// verify` and replaces its command line with discovery's.
#[test]
fn the_fleet_drop_in_passes_systemd_analyze_verify() {
    let Some(bin) = tool(
        "systemd-analyze",
        "the_fleet_drop_in_passes_systemd_analyze_verify",
    ) else {
        return;
    };
    let synapse_bin = assert_cmd::cargo::cargo_bin!("synapse");
    let dir = tempfile::tempdir().unwrap();
    let here = |text: String| text.replace("/usr/local/bin/synapse", synapse_bin.to_str().unwrap());
    let unit = std::fs::read_to_string(assets().join("systemd/synapse-agent.service")).unwrap();
    std::fs::write(dir.path().join("synapse-agent.service"), here(unit)).unwrap();
    let drop_in =
        std::fs::read_to_string(assets().join("systemd/synapse-agent.service.d/fleet.conf"))
            .unwrap();
    for want in [
        "ExecStart=\n",
        "--peers-srv ${SYNAPSE_SRV}",
        "--fanout 20",
        "--paths 8",
    ] {
        assert!(drop_in.contains(want), "{want}");
    }
    let d = dir.path().join("synapse-agent.service.d");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("fleet.conf"), here(drop_in)).unwrap();
    let out = Command::new(&bin)
        // By name, from the unit path: a unit given by its path is read
        // without its drop-ins.
        .args(["verify", "--man=no", "synapse-agent.service"])
        .env("SYSTEMD_UNIT_PATH", format!("{}:", dir.path().display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("fleet.conf"), "the drop-in warned: {err}");
}
