//! The agent's configuration: the command line over the `[agent]` table,
//! and the peers from `--peer`, `[agent.peers.NAME]` tables and a
//! `peers_file`, each peer layered over its profile and the agent's own
//! options. Every table is read against the options' declaration
//! ([`crate::cli::agent`]), so a key means what its flag means. Loaded at
//! start and again on SIGHUP: an error names file, line and key.

use super::phase::{check_rate, phase_of};
use super::{AgentConfig, Chosen, DiscoveryPlan, Labels, PeerConfig};
use crate::cli::agent::{
    DEFAULT_INTERVAL, agent_schema, peer_schema, split_name_port, split_peer, split_source_labels,
};
use crate::cli::{AgentOptions, PeerOptions, settings_schema};
use crate::config::layering::layer;
use crate::config::settings::TableReader;
use crate::config::{self, ConfigError, ConfigFile, Loc, Settings};
use crate::error::AppError;
use crate::plan::DEFAULT_PORT;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use synapse_engine::reflector_admission::{Admission, AllowList};
use synapse_engine::reflector_limits::Limits;
use synapse_engine::socket::resolve;
use synapse_engine::{Schedule, Transport, peer_address, protocol::stamp};
use synapse_stats::Pattern;
use toml_edit::{Document, Table};

/// Where the configuration comes from: what was typed, and which file.
#[derive(Debug, Clone)]
pub struct Sources {
    /// The agent options typed on the command line.
    pub typed: Settings,
    /// `--config`, if given.
    pub config: Option<PathBuf>,
}

/// One peer's settings before layering, and where they were written.
#[derive(Debug, Clone)]
pub struct PeerEntry {
    /// The `peer` label.
    pub name: String,
    settings: Settings,
    /// The file, dotted key and place of its table (`None`: the command
    /// line, or discovery).
    origin: Option<(PathBuf, String, Loc)>,
    /// Its labels: its table's `label` key, or what discovery read.
    pub labels: Labels,
    /// How it came to be probed.
    chosen: Chosen,
}

impl PeerEntry {
    /// A peer found by DNS: its name, `IP:PORT`, and its labels.
    pub fn discovered(name: &str, address: &str, labels: Labels) -> Self {
        Self {
            name: name.to_string(),
            settings: Settings::of(&[("address", address)]),
            origin: None,
            labels,
            chosen: Chosen::Fanout,
        }
    }

    /// The same entry, marked as chosen `how`.
    pub fn chosen(self, how: Chosen) -> Self {
        Self {
            chosen: how,
            ..self
        }
    }
}

/// Makes peers of entries: each layered over its profile and the agent's
/// own options, its address resolved and its phase spread. Kept by the
/// agent to make discovered peers as the named ones are made.
#[derive(Debug, Clone)]
pub struct PeerMaker {
    source: String,
    inherited: Settings,
    profiles: ConfigFile,
}

/// What the agent runs on: the configuration, and how to make more peers.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Its configuration, with the named peers only.
    pub cfg: AgentConfig,
    /// How discovered peers are made.
    pub maker: PeerMaker,
}

/// Reads everything and resolves it: what the agent runs on.
pub fn load(src: &Sources) -> Result<Loaded, AppError> {
    let file = read_file(src.config.as_ref())?;
    let schema = agent_schema();
    let layered = layer(&schema, &src.typed, None, &file.agent);
    let opts: AgentOptions = layered.parse(&schema).map_err(AppError::Usage)?;
    let mut entries = file.peers;
    entries.extend(opts.peer.iter().map(|spec| {
        let (name, addr) = split_peer(spec);
        PeerEntry {
            name: name.to_string(),
            settings: Settings::of(&[("address", addr)]),
            origin: None,
            labels: Labels::new(),
            chosen: Chosen::Named,
        }
    }));
    let name = opts.name.clone().unwrap_or_else(host_name);
    let maker = PeerMaker {
        source: name.clone(),
        inherited: inherited_settings(&layered.chosen, &peer_schema()),
        profiles: file.profiles,
    };
    let peers = resolve_peers(&maker, entries)?;
    check_rate(&peers, opts.max_pps)?;
    Ok(Loaded {
        cfg: finish(name, opts, peers)?,
        maker,
    })
}

/// The discovery options, parsed.
fn discovery_plan(opts: &AgentOptions) -> Result<DiscoveryPlan, AppError> {
    let rules = opts
        .label_from_name
        .iter()
        .map(|r| crate::cli::agent::name_rule(r).map_err(AppError::Usage))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DiscoveryPlan {
        peers_file: opts.peers_file.clone(),
        dns: opts
            .peers_dns
            .iter()
            .map(|s| {
                let (target, labels) = split_source_labels(s);
                let (n, p) = split_name_port(target);
                let port = p.and_then(|p| p.parse().ok()).unwrap_or(DEFAULT_PORT);
                Ok((n.to_string(), port, labels_of(&labels)?))
            })
            .collect::<Result<_, String>>()
            .map_err(AppError::Usage)?,
        srv: opts
            .peers_srv
            .iter()
            .map(|s| {
                let (n, labels) = split_source_labels(s);
                Ok((n.to_string(), labels_of(&labels)?))
            })
            .collect::<Result<_, String>>()
            .map_err(AppError::Usage)?,
        every: opts.discover_every,
        fanout: opts.fanout.map(|n| n as usize),
        tier_label: opts.tier_label.clone(),
        name_rules: rules,
    })
}

/// `KEY=VALUE` texts as labels (already checked by their parser); an
/// empty value sets none.
fn labels_of<S: AsRef<str>>(texts: &[S]) -> Result<Labels, String> {
    let mut out = Labels::new();
    for t in texts {
        let (k, v) = crate::cli::agent::label_pair(t.as_ref())?;
        if !v.is_empty() {
            out.insert(k, v);
        }
    }
    Ok(out)
}

fn finish(
    name: String,
    opts: AgentOptions,
    peers: Vec<PeerConfig>,
) -> Result<AgentConfig, AppError> {
    let discovery = discovery_plan(&opts)?;
    let mut labels = super::labels::from_name(&name, &discovery.name_rules);
    labels.extend(labels_of(&opts.label).map_err(AppError::Usage)?);
    let mut series_labels = opts.series_label.clone();
    series_labels.sort();
    series_labels.dedup();
    let reflect = match opts.reflect.as_str() {
        "none" => None,
        text => Some(resolve(text, DEFAULT_PORT)?),
    };
    let metrics_listen = resolve(&opts.metrics_listen, 9862)
        .map_err(|e| AppError::Usage(format!("--metrics-listen: {e}")))?;
    let bind = opts.bind.as_deref().map(|b| resolve(b, 0)).transpose()?;
    if let (Some(b), Some(p)) = (bind, peers.first())
        && b.is_ipv4() != p.addr.is_ipv4()
    {
        return Err(AppError::Usage(format!(
            "--bind {b} and peer '{}' ({}) are of different IP families",
            p.name, p.addr
        )));
    }
    Ok(AgentConfig {
        name,
        reflect,
        stamp_port: match opts.stamp_port {
            Some(0) => None,
            Some(p) => Some(p),
            None => Some(stamp::DEFAULT_PORT),
        },
        stamp_required: opts.stamp_port.is_some_and(|p| p != 0),
        reflect_timestamps: opts.reflect_timestamps.clone(),
        tcp_port: match opts.tcp_port {
            Some(0) => None,
            Some(p) => Some(p),
            None => Some(0),
        },
        tcp_required: opts.tcp_port.is_some_and(|p| p != 0),
        admission: Admission {
            allow: AllowList::new(opts.admission.allow.clone()),
            limits: Limits::DEFAULT,
        },
        metrics_listen,
        report_every: opts.report_every,
        max_pps: opts.max_pps,
        bind,
        timeout: opts.clock.timeout_ms,
        timestamps: opts.clock.timestamps,
        thread: opts.thread,
        peers,
        labels,
        series_labels,
        paths: usize::from(opts.paths),
        trace: super::TracePolicy {
            on_loss: opts.trace.trace_on_loss,
            every: opts.trace.trace_every,
            limit: opts.trace.trace_limit,
        },
        discovery,
    })
}

/// What the main file holds for the agent.
struct FileParts {
    agent: Settings,
    peers: Vec<PeerEntry>,
    profiles: ConfigFile,
}

/// The main configuration file: its `[agent]` table, its peers, and its
/// profiles (checked as the client checks them).
fn read_file(explicit: Option<&PathBuf>) -> Result<FileParts, AppError> {
    let Some(path) = config::config_path(explicit) else {
        return Ok(FileParts {
            agent: Settings::default(),
            peers: Vec::new(),
            profiles: ConfigFile::empty(PathBuf::from("config.toml")),
        });
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && explicit.is_none() => String::new(),
        Err(e) => return Err(ConfigError::io(&path, &e).into()),
    };
    let text = config::migrate::read(&path, text);
    let profiles = ConfigFile::parse(path.clone(), &text, &settings_schema())?;
    let doc = parse_toml(&path, &text)?;
    let (mut agent, mut peers) = (Settings::default(), Vec::new());
    if let Some(item) = doc.as_table().get("agent") {
        let t = table_at(&path, &text, item, "agent")?;
        let schema = agent_schema();
        let reader = TableReader {
            path: &path,
            text: &text,
            schema: &schema,
        };
        agent = reader.read(t, "agent", &["peers"])?;
        if let Some(all) = t.get("peers") {
            let all = table_at(&path, &text, all, "agent.peers")?;
            peers = read_peer_tables(&path, &text, all, "agent.peers")?;
        }
    }
    Ok(FileParts {
        agent,
        peers,
        profiles,
    })
}

/// A `peers_file`: `[peers.NAME]` tables and nothing else.
pub fn read_peers_file(path: &Path) -> Result<Vec<PeerEntry>, AppError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, &e))?;
    let text = config::migrate::read(path, text);
    let doc = parse_toml(path, &text)?;
    let mut peers = Vec::new();
    for (key, item) in doc.as_table().iter() {
        if key != "peers" {
            let span = doc.as_table().key(key).and_then(toml_edit::Key::span);
            let msg = format!("unknown key '{key}' (known: peers)");
            return Err(ConfigError::at(path, Loc::of(&text, span), key, msg).into());
        }
        let all = table_at(path, &text, item, "peers")?;
        peers = read_peer_tables(path, &text, all, "peers")?;
    }
    Ok(peers)
}

fn parse_toml(path: &Path, text: &str) -> Result<Document<String>, ConfigError> {
    Document::parse(text.to_string()).map_err(|e| {
        let msg = format!("not valid TOML: {}", e.message().trim());
        ConfigError::at(path, Loc::of(text, e.span()), "", msg)
    })
}

fn table_at<'t>(
    path: &Path,
    text: &str,
    item: &'t toml_edit::Item,
    key: &str,
) -> Result<&'t Table, ConfigError> {
    item.as_table()
        .ok_or_else(|| ConfigError::at(path, Loc::of(text, item.span()), key, "expected a table"))
}

fn read_peer_tables(
    path: &Path,
    text: &str,
    all: &Table,
    prefix: &str,
) -> Result<Vec<PeerEntry>, ConfigError> {
    let schema = peer_schema();
    let reader = TableReader {
        path,
        text,
        schema: &schema,
    };
    let mut out = Vec::new();
    for (name, item) in all.iter() {
        let key = format!("{prefix}.{name}");
        let t = table_at(path, text, item, &key)?;
        let span = all.key(name).and_then(toml_edit::Key::span);
        let at = Loc::of(text, span);
        crate::cli::agent::label_value(name).map_err(|m| ConfigError::at(path, at, &key, m))?;
        let settings = reader.read(t, &key, &[])?;
        let values = settings
            .get("label")
            .map(|s| s.values.clone())
            .unwrap_or_default();
        let labels = labels_of(&values).map_err(|m| {
            let loc = settings.get("label").map_or(at, |s| s.loc);
            ConfigError::at(path, loc, &format!("{key}.label"), m)
        })?;
        out.push(PeerEntry {
            name: name.to_string(),
            settings,
            origin: Some((path.to_path_buf(), key, at)),
            labels,
            chosen: Chosen::Named,
        });
    }
    Ok(out)
}

/// Makes every named peer; refuses duplicates and a mix of IP families
/// (all probes leave from one socket).
fn resolve_peers(maker: &PeerMaker, entries: Vec<PeerEntry>) -> Result<Vec<PeerConfig>, AppError> {
    let mut names = BTreeSet::new();
    let mut peers: Vec<PeerConfig> = Vec::new();
    for e in entries {
        if !names.insert(e.name.clone()) {
            return Err(located(&e, "", format!("peer '{}' is named twice", e.name)));
        }
        let fail = |key: &str, msg: String| -> AppError { located(&e, key, msg) };
        let p = maker.make(e.clone())?;
        if p.is_group() && p.transport == Transport::Tcp {
            let msg = format!("{} is a multicast group: TCP has none", p.addr);
            return Err(fail("address", msg));
        }
        if let Some(other) = peers
            .iter()
            .find(|o| o.addr == p.addr && o.transport == p.transport)
        {
            let shown = match p.transport {
                Transport::Tcp => format!("tcp://{}", p.addr),
                Transport::Udp => p.addr.to_string(),
            };
            let msg = format!("{shown} is peer '{}' already", other.name);
            return Err(fail("address", msg));
        }
        if let Some(first) = peers
            .first()
            .filter(|f| f.addr.is_ipv4() != p.addr.is_ipv4())
        {
            let msg = format!(
                "{}: all peers must be of one IP family, as '{}' ({})",
                p.addr, first.name, first.addr
            );
            return Err(fail("address", msg));
        }
        peers.push(p);
    }
    Ok(peers)
}

impl PeerMaker {
    /// One peer: layered over its profile and the agent's options, its
    /// address resolved, its phase spread by the host pair.
    pub fn make(&self, e: PeerEntry) -> Result<PeerConfig, AppError> {
        let schema = peer_schema();
        let fail = |key: &str, msg: String| -> AppError { located(&e, key, msg) };
        let profile = match e.settings.text("profile") {
            Some(p) => Some(profile_settings(&self.profiles, p).map_err(|m| fail("profile", m))?),
            None => None,
        };
        let named = profile.as_ref().map(|s| (e.name.as_str(), s));
        let l = layer(&schema, &e.settings, named, &self.inherited);
        let p: PeerOptions = l.parse(&schema).map_err(|m| fail("", m))?;
        let text = p.address.clone().ok_or_else(|| {
            fail(
                "",
                "no address (set address, or a profile with a server)".into(),
            )
        })?;
        let parsed = peer_address::parse(&text).map_err(|m| fail("address", m))?;
        let transport = parsed.transport;
        if transport == Transport::Tcp {
            tcp_refusal(&p).map_err(|m| fail("", m))?;
        }
        let port = if p.packet.stamp {
            stamp::DEFAULT_PORT
        } else {
            DEFAULT_PORT
        };
        let addr = resolve(parsed.host, port).map_err(|err| fail("address", err.to_string()))?;
        let key = match crate::plan::stamp_key_of(&p.packet.key, p.packet.stamp, "a peer") {
            Ok(key) => key,
            Err(e) => return Err(fail("hmac_key_file", e.to_string())),
        };
        let format = p.packet.stamp_format.stamp_format;
        if format != stamp::TimeFormat::Ntp && !p.packet.stamp {
            return Err(fail(
                "stamp_format",
                format!("'{format}' is STAMP's: set stamp = true"),
            ));
        }
        let schedule = p.pace.schedule().unwrap_or(Schedule {
            pattern: Pattern::Periodic,
            interval: DEFAULT_INTERVAL,
        });
        Ok(PeerConfig {
            phase: phase_of(&self.source, &e.name, schedule.interval),
            name: e.name,
            address: text,
            addr,
            schedule,
            size: p.packet.size,
            stamp: p.packet.stamp,
            ssid: p.packet.ssid.unwrap_or(0),
            key,
            marks: p.packet.marks(),
            tlvs: p.packet.tlvs(),
            stamp_format: p.packet.stamp_format.stamp_format,
            transport,
            labels: e.labels,
            chosen: e.chosen,
        })
    }
}

/// Why a TCP peer cannot have its options: it speaks plain echo, with
/// the system's marks.
fn tcp_refusal(p: &PeerOptions) -> Result<(), String> {
    let k = &p.packet;
    let asked = [
        ("stamp", k.stamp),
        ("ssid", k.ssid.is_some()),
        ("hmac_key_file", k.key.hmac_key_file.is_some()),
        ("dscp", k.dscp.is_some()),
        ("ecn", k.ecn.is_some()),
        ("tlv", k.tlv.is_some()),
    ];
    match asked.iter().find(|(_, on)| *on) {
        Some((key, _)) => Err(format!(
            "a tcp:// peer speaks plain echo: {key} is for UDP peers"
        )),
        None => Ok(()),
    }
}

/// The agent's own settings a peer inherits: those a peer's table can set.
fn inherited_settings(agent_chosen: &Settings, peer: &clap::Command) -> Settings {
    let mut out = Settings::default();
    for arg in config::settings::options(peer) {
        let id = arg.get_id().as_str();
        // The agent's `label` is its own, not its peers'.
        if id == "label" {
            continue;
        }
        if let Some(s) = agent_chosen.get(id) {
            out.set(id, s.values.clone());
        }
    }
    out
}

/// A profile's settings as a peer's: its server is the address.
fn profile_settings(file: &ConfigFile, name: &str) -> Result<Settings, String> {
    let p = file
        .profile(name)
        .map_err(|e| format!("'{name}': {}", e.message))?;
    let peer = peer_schema();
    let mut out = Settings::default();
    let tcp = p.settings.text("transport") == Some("tcp");
    for (id, s) in p.settings.iter() {
        if id == "server" && tcp {
            let values = s.values.iter().map(|v| format!("tcp://{v}")).collect();
            out.set("address", values);
            continue;
        }
        let id = if id == "server" { "address" } else { id };
        if config::settings::options(&peer).any(|a| a.get_id() == id) && id != "profile" {
            out.set(id, s.values.clone());
        }
    }
    Ok(out)
}

/// An error about a peer: at its table's key in the file, or on the
/// command line.
fn located(e: &PeerEntry, key: &str, msg: String) -> AppError {
    match &e.origin {
        Some((path, table, at)) => {
            let loc = e.settings.get(key).map_or(*at, |s| s.loc);
            let dotted = if key.is_empty() {
                table.clone()
            } else {
                format!("{table}.{key}")
            };
            ConfigError::at(path, loc, &dotted, msg).into()
        }
        None => AppError::Usage(format!("--peer {}: {msg}", e.name)),
    }
}

/// This host's name, for the `source` label.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loads `main` (and `peers`, as `peers.toml` beside it) with `cli`
    /// typed on the command line.
    fn load_with(
        main: &str,
        peers: Option<&str>,
        cli: &[(&str, &str)],
    ) -> Result<AgentConfig, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let peers_path = dir.path().join("peers.toml");
        let main = main.replace("PEERS", &peers_path.display().to_string());
        std::fs::write(&path, main).unwrap();
        if let Some(p) = peers {
            std::fs::write(&peers_path, p).unwrap();
        }
        let src = Sources {
            typed: Settings::of(cli),
            config: Some(path),
        };
        load(&src)
            .and_then(crate::agent::with_first_round)
            .map(|(cfg, _)| cfg)
            .map_err(|e| {
                e.to_string()
                    .replace(&dir.path().display().to_string(), "DIR")
            })
    }

    const MAIN: &str = r#"
[profiles.lab]
server = "127.0.0.3:9000"
interval = "5ms"
size = 64

[agent]
name = "alpha"
interval = "20ms"
reflect = "none"
peers_file = "PEERS"

[agent.peers.beta]
address = "127.0.0.2"
stamp = true

[agent.peers.lab]
profile = "lab"
"#;

    #[test]
    fn peers_come_from_tables_profiles_the_peers_file_and_the_command_line() {
        let cfg = load_with(
            MAIN,
            Some("[peers.gamma]\naddress = \"127.0.0.4:7\"\nrate = 2\n"),
            &[("peer", "delta=127.0.0.5")],
        )
        .unwrap();
        assert_eq!(cfg.name, "alpha");
        assert_eq!(cfg.reflect, None);
        let got: Vec<(&str, String, u64, usize, bool)> = cfg
            .peers
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.addr.to_string(),
                    p.schedule.interval_ns(),
                    p.size,
                    p.stamp,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                // The agent's interval; STAMP's port when none is given.
                ("beta", "127.0.0.2:862".into(), 20_000_000, 8, true),
                // The profile's server, interval and size.
                ("lab", "127.0.0.3:9000".into(), 5_000_000, 64, false),
                ("delta", "127.0.0.5:8080".into(), 20_000_000, 8, false),
                // The peers file's: discovered, after the named ones.
                ("gamma", "127.0.0.4:7".into(), 500_000_000, 8, false),
            ]
        );
        assert!(cfg.peers.iter().all(|p| p.phase < p.schedule.interval));
    }

    #[test]
    fn the_command_line_wins_over_the_agent_table() {
        let cfg = load_with(MAIN, Some(""), &[("interval", "50ms"), ("name", "cli")]).unwrap();
        assert_eq!(cfg.name, "cli");
        assert_eq!(cfg.peers[0].schedule.interval_ns(), 50_000_000);
        // A peer's own table and its profile still win over the agent's.
        assert_eq!(cfg.peers[1].schedule.interval_ns(), 5_000_000);
    }

    #[test]
    fn the_reflector_allow_list_comes_from_the_agent_table() {
        let cfg = load_with("[agent]\nallow = [\"192.0.2.0/24\", \"::1\"]\n", None, &[]).unwrap();
        assert_eq!(cfg.admission.allow.to_string(), "192.0.2.0/24, ::1/128");
        assert!(load_with("", None, &[]).unwrap().admission.allow.is_open());
        let e = load_with("[agent]\nallow = [\"10.0.0.0/40\"]\n", None, &[]).unwrap_err();
        assert!(
            e.starts_with("DIR/config.toml:2:")
                && e.contains("agent.allow")
                && e.contains("0..=32"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_file_line_and_key() {
        let e = load_with("[agent.peers.b]\nadress = \"127.0.0.2\"\n", None, &[]).unwrap_err();
        assert!(
            e.starts_with("DIR/config.toml:2:1: agent.peers.b.adress: unknown key 'adress' (known: address, profile,"),
            "{e}"
        );
        let e = load_with("[agent]\ninterval = 5\n", None, &[]).unwrap_err();
        assert_eq!(
            e,
            "DIR/config.toml:2:12: agent.interval: '5' needs a unit: 5ms, 5us, 5s"
        );
        let e = load_with("[agent.peers.b]\nsize = 1\naddress = \"h\"\n", None, &[]).unwrap_err();
        assert!(
            e.starts_with("DIR/config.toml:2:8: agent.peers.b.size: "),
            "{e}"
        );
        let e = load_with("[agent.peers.b]\nprofile = \"nope\"\n", None, &[]).unwrap_err();
        assert_eq!(
            e,
            "DIR/config.toml:2:1: agent.peers.b.profile: 'nope': no such profile (there are none)"
        );
        let e = load_with("[agent.peers.b]\ninterval = \"1s\"\n", None, &[]).unwrap_err();
        assert_eq!(
            e,
            "DIR/config.toml:1:14: agent.peers.b: no address (set address, or a profile with a server)"
        );
        let e = load_with(
            "[agent]\npeers_file = \"PEERS\"\n",
            Some("[peers.c]\naddress = \"127.0.0.1\"\nstamp = 1\n"),
            &[],
        )
        .unwrap_err();
        assert_eq!(
            e,
            "DIR/peers.toml:3:9: peers.c.stamp: expected true or false, found an integer"
        );
    }

    #[test]
    fn tcp_peers_come_from_a_scheme_or_a_tcp_profile_and_speak_plain_echo() {
        let main = "[profiles.db]\nserver = \"127.0.0.3:5432\"\ntransport = \"tcp\"\n\n[agent]\nreflect = \"none\"\n[agent.peers.lab]\nprofile = \"db\"\n[agent.peers.web]\naddress = \"tcp://127.0.0.2:80\"\n";
        let cfg = load_with(main, None, &[("peer", "web_udp=127.0.0.2:80")]);
        let cfg = cfg.unwrap();
        let got: Vec<(&str, &str, String)> = cfg
            .peers
            .iter()
            .map(|p| (p.name.as_str(), p.transport.name(), p.addr.to_string()))
            .collect();
        assert_eq!(
            got,
            [
                ("lab", "tcp", "127.0.0.3:5432".into()),
                // One address over both transports: two peers, not a duplicate.
                ("web", "tcp", "127.0.0.2:80".into()),
                ("web_udp", "udp", "127.0.0.2:80".into()),
            ]
        );
        let e = load_with(
            "[agent.peers.b]\naddress = \"tcp://127.0.0.2:7\"\ndscp = 46\n",
            None,
            &[],
        )
        .unwrap_err();
        assert_eq!(
            e,
            "DIR/config.toml:1:14: agent.peers.b: a tcp:// peer speaks plain echo: dscp is for UDP peers"
        );
        let e = load_with("[agent.peers.b]\naddress = \"tcp://h\"\n", None, &[]).unwrap_err();
        assert!(
            e.contains("agent.peers.b.address: 'tcp://h': a TCP peer needs its port"),
            "{e}"
        );
    }

    #[test]
    fn duplicates_mixed_families_and_an_excess_rate_are_refused() {
        let two = "[agent.peers.b]\naddress = \"127.0.0.2\"\n[agent.peers.c]\naddress = \"127.0.0.2:8080\"\n";
        let e = load_with(two, None, &[]).unwrap_err();
        assert_eq!(
            e,
            "DIR/config.toml:4:1: agent.peers.c.address: 127.0.0.2:8080 is peer 'b' already"
        );
        let e = load_with(
            "[agent.peers.b]\naddress = \"127.0.0.2\"\n",
            None,
            &[("peer", "b=127.0.0.3")],
        )
        .unwrap_err();
        assert_eq!(e, "--peer b: peer 'b' is named twice");
        let mixed =
            "[agent.peers.b]\naddress = \"127.0.0.2\"\n[agent.peers.c]\naddress = \"[::1]:9\"\n";
        let e = load_with(mixed, None, &[]).unwrap_err();
        assert!(e.contains("all peers must be of one IP family"), "{e}");
        let group = "[agent.peers.g]\naddress = \"tcp://239.1.2.3:7000\"\n";
        let e = load_with(group, None, &[]).unwrap_err();
        assert_eq!(
            e,
            "DIR/config.toml:2:1: agent.peers.g.address: 239.1.2.3:7000 is a multicast group: TCP has none"
        );
        let udp_group = "[agent.peers.g]\naddress = \"239.1.2.3:7000\"\n";
        let cfg = load_with(udp_group, None, &[]).unwrap();
        assert!(
            cfg.peers[0].is_group(),
            "a group is a UDP peer of its own kind"
        );
        let fast = "[agent]\nmax_pps = 150\ninterval = \"10ms\"\n[agent.peers.b]\naddress = \"127.0.0.2\"\n[agent.peers.c]\naddress = \"127.0.0.3\"\n";
        let e = load_with(fast, None, &[]).unwrap_err();
        assert!(
            e.starts_with("2 peers would send 200 probes/s, over max_pps 150"),
            "{e}"
        );
    }
}

#[cfg(test)]
mod example {
    use super::*;

    /// `config.example.toml` loads as an agent's configuration, and its
    /// `[agent]` section documents every agent option, its peer table every
    /// peer option.
    #[test]
    fn the_example_documents_every_agent_and_peer_option() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let cfg = load(&Sources {
            typed: Settings::default(),
            config: Some(path),
        })
        .unwrap()
        .cfg;
        assert_eq!(cfg.peers.len(), 1);
        assert!(cfg.peers[0].stamp);
        let agent = &text[text.find("\n[agent]").unwrap()..text.find("\n[agent.peers.").unwrap()];
        let peers = &text[text.find("\n[agent.peers.").unwrap()..];
        for (section, schema) in [(agent, agent_schema()), (peers, peer_schema())] {
            for arg in config::settings::options(&schema) {
                let key = arg.get_id().as_str();
                let documented = section
                    .lines()
                    .any(|l| l.trim_start_matches("# ").starts_with(&format!("{key} = ")));
                assert!(
                    documented,
                    "config.example.toml's agent part does not document '{key}'"
                );
            }
        }
    }
}
