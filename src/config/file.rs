//! The configuration file as a whole: `[defaults]`, and `[profiles.NAME]`
//! tables with their baselines. Every table is read against the options'
//! one declaration (see `settings`).

use super::baseline::Baseline;
use super::error::{ConfigError, Loc};
use super::settings::{Settings, TableReader};
use clap::Command;
use std::collections::BTreeMap;
use std::path::PathBuf;
use toml_edit::Document;

/// A saved host pair with its options and, maybe, its baseline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    /// The options.
    pub settings: Settings,
    /// What normal looked like.
    pub baseline: Option<Baseline>,
}

/// The parsed file.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFile {
    /// Where it was read from (or would be).
    pub path: PathBuf,
    /// The `[defaults]` table.
    pub defaults: Settings,
    /// `[profiles.NAME]` tables, by name.
    pub profiles: BTreeMap<String, Profile>,
}

impl ConfigFile {
    /// No file: nothing set.
    pub fn empty(path: PathBuf) -> Self {
        Self {
            path,
            defaults: Settings::default(),
            profiles: BTreeMap::new(),
        }
    }

    /// Parses and checks the whole file against `schema`, the options a
    /// table may set.
    pub fn parse(path: PathBuf, text: &str, schema: &Command) -> Result<Self, ConfigError> {
        let doc = Document::parse(text.to_string()).map_err(|e| {
            let loc = Loc::of(text, e.span());
            ConfigError::at(
                &path,
                loc,
                "",
                format!("not valid TOML: {}", e.message().trim()),
            )
        })?;
        let r = TableReader {
            path: &path,
            text,
            schema,
        };
        let expected = |item: &toml_edit::Item, key: &str, what: &str| {
            ConfigError::at(
                &path,
                Loc::of(text, item.span()),
                key,
                format!("expected {what}"),
            )
        };
        let mut file = Self::empty(path.clone());
        for (name, item) in doc.as_table().iter() {
            match name {
                "defaults" => {
                    let t = item
                        .as_table()
                        .ok_or_else(|| expected(item, name, "a table"))?;
                    file.defaults = r.read(t, "defaults", &[])?;
                }
                "profiles" => {
                    let all = item
                        .as_table()
                        .ok_or_else(|| expected(item, name, "a table of profiles"))?;
                    for (pname, pitem) in all.iter() {
                        let key = format!("profiles.{pname}");
                        let t = pitem
                            .as_table()
                            .ok_or_else(|| expected(pitem, &key, "a table"))?;
                        let settings = r.read(t, &key, &["baseline"])?;
                        let baseline = t
                            .get("baseline")
                            .map(|b| {
                                let t = b.as_table_like().ok_or_else(|| {
                                    expected(b, &format!("{key}.baseline"), "a table")
                                })?;
                                Baseline::read(t, &format!("{key}.baseline"), |span, k, m| {
                                    ConfigError::at(&path, Loc::of(text, span), k, m)
                                })
                            })
                            .transpose()?;
                        file.profiles
                            .insert(pname.to_string(), Profile { settings, baseline });
                    }
                }
                // The agent's tables, read against its own options.
                "agent" => {}
                other => {
                    let loc = Loc::of(
                        text,
                        doc.as_table().key(name).and_then(toml_edit::Key::span),
                    );
                    return Err(ConfigError::at(
                        &path,
                        loc,
                        other,
                        format!("unknown key '{other}' (known: defaults, profiles, agent)"),
                    ));
                }
            }
        }
        Ok(file)
    }

    /// A profile by name, or an error listing the ones that exist.
    pub fn profile(&self, name: &str) -> Result<&Profile, ConfigError> {
        self.profiles.get(name).ok_or_else(|| {
            let known = if self.profiles.is_empty() {
                "there are none".to_string()
            } else {
                let names: Vec<&str> = self.profiles.keys().map(String::as_str).collect();
                format!("known: {}", names.join(", "))
            };
            ConfigError::at(
                &self.path,
                Loc::default(),
                &format!("profiles.{name}"),
                format!("no such profile ({known})"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{RunArgs, TargetArgs, settings_schema};
    use crate::config::layering::layer;
    use std::time::Duration;
    use synapse_engine::TimestampMode;

    fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(PathBuf::from("/cfg/config.toml"), text, &settings_schema())
    }

    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn every_key_is_read_with_its_type() {
        let f = parse(
            r#"
[defaults]
warmup = 50
threshold = "250us"

[profiles.lab]
threshold = ["mean=250us", "p99=1ms"]
max_loss = 0.5
bind = "10.0.0.1"
server = "10.0.0.2:9000"
duration = "30s"
timeout_ms = "200ms"
update = 10
size = 1400
cpu = 1
busy_poll = true
rt = false
fps = 20
timestamps = "software"
stamp = true
"#,
        )
        .unwrap();
        let schema = settings_schema();
        let p = &f.profile("lab").unwrap().settings;
        let l = layer(&schema, &Settings::default(), Some(("lab", p)), &f.defaults);
        let run: RunArgs = l.parse(&schema).unwrap();
        let target: TargetArgs = l.parse(&schema).unwrap();
        assert_eq!(run.warmup, Some(50));
        let thresholds: Vec<String> = run.threshold.iter().map(ToString::to_string).collect();
        assert_eq!(
            thresholds,
            ["mean=250us", "p99=1ms"],
            "the profile's list wins"
        );
        assert_eq!(run.max_loss, 0.5);
        assert_eq!(target.bind.as_deref(), Some("10.0.0.1"));
        assert_eq!(target.server.as_deref(), Some("10.0.0.2:9000"));
        assert_eq!(run.duration, Some(Duration::from_secs(30)));
        assert_eq!(
            (
                run.clock.timeout_ms,
                run.update,
                run.packet.size,
                run.thread.cpu
            ),
            (
                Duration::from_millis(200),
                Some(synapse_units::Every::Packets(10)),
                1400,
                Some(1)
            )
        );
        assert_eq!(
            (run.thread.busy_poll, run.thread.rt, run.fps),
            (true, false, 20)
        );
        assert_eq!(run.clock.timestamps, TimestampMode::Software);
        assert!(run.packet.stamp);
        assert_eq!(
            p.get("size").unwrap().loc,
            Loc {
                line: 14,
                column: 1
            }
        );
    }

    #[test]
    fn errors_name_file_line_column_and_key() {
        assert_eq!(
            error("[profiles.lab]\nserver = \"10.0.0.2\"\nwramup = 5\n"),
            "/cfg/config.toml:3:1: profiles.lab.wramup: unknown key 'wramup' (known: bind, server, packets, \
             duration, warmup, interval, rate, poisson, transport, connect_each, timeout_ms, timestamps, mc_ttl, mc_if, mc_loop, mc_join, responders, tx_stamp_every, update, size, stamp, ssid, dscp, ecn, tlv, hmac_key_file, stamp_format, cpu, busy_poll, rt, keep_awake, threshold, max_loss, load, load_phase, load_streams, load_cc, load_port, max_inflation, min_rpm, max_outage, give_up_after, fps, baseline)"
        );
        assert_eq!(
            error("[defaults]\nwarmup = \"many\"\n"),
            "/cfg/config.toml:2:10: defaults.warmup: expected an integer, found a string"
        );
        assert_eq!(
            error("[profiles.x]\nserver = \"10.0.0.2:notaport\"\n"),
            "/cfg/config.toml:2:10: profiles.x.server: '10.0.0.2:notaport' is not an address (HOST, HOST:PORT or [IPv6]:PORT)"
        );
        assert_eq!(
            error("[defaults]\ntimestamps = \"nic\"\n"),
            "/cfg/config.toml:2:14: defaults.timestamps: 'nic' is not a timestamp source (expected one of: auto, user, software, hardware)"
        );
        assert_eq!(
            error("[defaults]\nstamp = \"yes\"\n"),
            "/cfg/config.toml:2:9: defaults.stamp: expected true or false, found a string"
        );
        assert_eq!(
            error("[defaults]\nsize = 7\n"),
            "/cfg/config.toml:2:8: defaults.size: 7 is outside 8..=65507"
        );
        assert_eq!(
            error("[defaults]\nthreshold = \"soon\"\n"),
            "/cfg/config.toml:2:13: defaults.threshold: 'soon' is not a duration: a number and one of ns, us, µs, ms, s, min, h (e.g. 250us, 2min)"
        );
        assert_eq!(
            error("colour = 1\n"),
            "/cfg/config.toml:1:1: colour: unknown key 'colour' (known: defaults, profiles, agent)"
        );
        assert!(
            error("[defaults\n").starts_with("/cfg/config.toml:1:10: not valid TOML"),
            "{}",
            error("[defaults\n")
        );
        assert_eq!(
            error("[defaults]\npackets = 5\nduration = \"3s\"\n"),
            "/cfg/config.toml:3:1: defaults.duration: packets and duration cannot both be set"
        );
    }

    #[test]
    fn unknown_profiles_list_the_known_ones() {
        let f = parse("[profiles.a]\n[profiles.b]\n").unwrap();
        assert_eq!(
            f.profile("c").unwrap_err().to_string(),
            "/cfg/config.toml: profiles.c: no such profile (known: a, b)"
        );
    }

    /// Every option a table may set has a documented line in the example
    /// file, and the example file itself parses.
    #[test]
    fn config_example_parses_and_documents_every_option() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let schema = settings_schema();
        let f = ConfigFile::parse(path, &text, &schema).unwrap();
        assert!(f.profiles.contains_key("lab"));
        for arg in crate::config::settings::options(&schema) {
            let key = arg.get_id().as_str();
            let documented = text
                .lines()
                .any(|l| l.trim_start_matches("# ").starts_with(&format!("{key} = ")));
            assert!(documented, "config.example.toml does not document '{key}'");
        }
    }
}
