//! The configuration file's keys and how each is read and checked.
//!
//! Values go through the same parsers and ranges as the command line, so a
//! setting means the same thing wherever it is written. Every error names
//! the file, the line and column, and the key.

use super::baseline::Baseline;
use crate::cli::{MAX_COUNT, payload_size, timestamp_mode};
use crate::engine::TimestampMode;
use crate::units::{DefaultUnit, parse_duration};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml_edit::{Document, Item, Table, Value};

/// A problem with the configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line, 0 when unknown.
    pub line: usize,
    /// 1-based column, 0 when unknown.
    pub column: usize,
    /// The dotted key, e.g. `profiles.lab.warmup`.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.path.display();
        match (self.line, self.key.is_empty()) {
            (0, true) => write!(f, "{p}: {}", self.message),
            (0, false) => write!(f, "{p}: {}: {}", self.key, self.message),
            (_, true) => write!(f, "{p}:{}:{}: {}", self.line, self.column, self.message),
            (_, false) => write!(
                f,
                "{p}:{}:{}: {}: {}",
                self.line, self.column, self.key, self.message
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    pub(crate) fn io(path: &Path, e: &std::io::Error) -> Self {
        Self {
            path: path.to_path_buf(),
            line: 0,
            column: 0,
            key: String::new(),
            message: e.to_string(),
        }
    }

    pub(crate) fn at(path: &Path, loc: Loc, key: &str, message: impl Into<String>) -> Self {
        Self {
            path: path.to_path_buf(),
            line: loc.line,
            column: loc.column,
            key: key.to_string(),
            message: message.into(),
        }
    }
}

/// A place in the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loc {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

impl Loc {
    fn of(text: &str, span: Option<std::ops::Range<usize>>) -> Self {
        let Some(span) = span else {
            return Self::default();
        };
        let before = &text[..span.start.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Self { line, column }
    }
}

/// Run options that a profile or the `[defaults]` table may set. `None`
/// means "not set here".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// Local address to send from.
    pub bind: Option<String>,
    /// The reflector.
    pub server: Option<String>,
    /// Packets to measure.
    pub packets: Option<u64>,
    /// Time to measure.
    pub duration: Option<Duration>,
    /// Warm-up packets.
    pub warmup: Option<u64>,
    /// Per-reply timeout (ms).
    pub timeout_ms: Option<u64>,
    /// Animation sampling.
    pub update: Option<u64>,
    /// Payload bytes.
    pub size: Option<usize>,
    /// Measurement CPU.
    pub cpu: Option<usize>,
    /// Spin instead of block.
    pub busy_poll: Option<bool>,
    /// SCHED_FIFO.
    pub rt: Option<bool>,
    /// Verdict threshold.
    pub threshold: Option<Duration>,
    /// Live display frame rate.
    pub fps: Option<u32>,
    /// Timestamp source.
    pub timestamps: Option<TimestampMode>,
    /// STAMP instead of plain echo.
    pub stamp: Option<bool>,
    /// Where each key was written, for messages.
    pub locations: BTreeMap<&'static str, Loc>,
}

/// Every key a settings table accepts, in the order they are documented.
pub const KEYS: [&str; 15] = [
    "bind",
    "server",
    "packets",
    "duration",
    "warmup",
    "timeout_ms",
    "update",
    "size",
    "cpu",
    "busy_poll",
    "rt",
    "threshold",
    "fps",
    "timestamps",
    "stamp",
];

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

struct Reader<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Reader<'_> {
    fn err(
        &self,
        span: Option<std::ops::Range<usize>>,
        key: &str,
        msg: impl Into<String>,
    ) -> ConfigError {
        ConfigError::at(self.path, Loc::of(self.text, span), key, msg)
    }

    fn describe(item: &Item) -> &'static str {
        match item {
            Item::Value(Value::String(_)) => "a string",
            Item::Value(Value::Integer(_)) => "an integer",
            Item::Value(Value::Float(_)) => "a float",
            Item::Value(Value::Boolean(_)) => "a boolean",
            Item::Value(Value::Datetime(_)) => "a date",
            Item::Value(Value::Array(_)) => "an array",
            Item::Value(Value::InlineTable(_)) | Item::Table(_) => "a table",
            Item::ArrayOfTables(_) => "an array of tables",
            Item::None => "nothing",
        }
    }

    fn expected(&self, item: &Item, key: &str, what: &str) -> ConfigError {
        self.err(
            item.span(),
            key,
            format!("expected {what}, found {}", Self::describe(item)),
        )
    }

    fn uint(&self, item: &Item, key: &str, min: u64, max: u64) -> Result<u64, ConfigError> {
        let n = item
            .as_integer()
            .ok_or_else(|| self.expected(item, key, "an integer"))?;
        u64::try_from(n)
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| self.err(item.span(), key, format!("{n} is outside {min}..={max}")))
    }

    fn boolean(&self, item: &Item, key: &str) -> Result<bool, ConfigError> {
        item.as_bool()
            .ok_or_else(|| self.expected(item, key, "true or false"))
    }

    fn string<'i>(&self, item: &'i Item, key: &str, what: &str) -> Result<&'i str, ConfigError> {
        item.as_str().ok_or_else(|| self.expected(item, key, what))
    }

    /// A duration: a string with a unit, or a bare integer in `unit`.
    fn duration(&self, item: &Item, key: &str, unit: DefaultUnit) -> Result<Duration, ConfigError> {
        let d = match (item.as_integer(), item.as_str()) {
            (Some(n), _) => parse_duration(&n.to_string(), unit),
            (_, Some(s)) => parse_duration(s, unit),
            _ => return Err(self.expected(item, key, "a duration such as \"1ms\" or \"30s\"")),
        };
        d.map_err(|m| self.err(item.span(), key, m))
    }

    /// `HOST[:PORT]`: checked for form here, resolved when used.
    fn address(&self, item: &Item, key: &str) -> Result<String, ConfigError> {
        let s = self.string(item, key, "an address such as \"192.0.2.10:8080\"")?;
        if address_form_ok(s) {
            Ok(s.to_string())
        } else {
            Err(self.err(
                item.span(),
                key,
                format!("'{s}' is not an address (HOST, HOST:PORT or [IPv6]:PORT)"),
            ))
        }
    }

    fn settings(
        &self,
        table: &Table,
        prefix: &str,
        allow_baseline: bool,
    ) -> Result<(Settings, Option<Baseline>), ConfigError> {
        let mut s = Settings::default();
        let mut baseline = None;
        for (name, item) in table.iter() {
            let key = format!("{prefix}.{name}");
            let loc = Loc::of(
                self.text,
                table
                    .key(name)
                    .and_then(toml_edit::Key::span)
                    .or_else(|| item.span()),
            );
            match name {
                "bind" => s.bind = Some(self.address(item, &key)?),
                "server" => s.server = Some(self.address(item, &key)?),
                "packets" => s.packets = Some(self.uint(item, &key, 1, MAX_COUNT)?),
                "duration" => {
                    let d = self.duration(item, &key, DefaultUnit::Seconds)?;
                    if d.is_zero() {
                        return Err(self.err(item.span(), &key, "must be longer than zero"));
                    }
                    s.duration = Some(d);
                }
                "warmup" => s.warmup = Some(self.uint(item, &key, 0, MAX_COUNT)?),
                "timeout_ms" => s.timeout_ms = Some(self.uint(item, &key, 1, 60_000)?),
                "update" => s.update = Some(self.uint(item, &key, 1, MAX_COUNT)?),
                "size" => {
                    let n = self.uint(item, &key, 0, u64::MAX)?;
                    let n =
                        payload_size(&n.to_string()).map_err(|m| self.err(item.span(), &key, m))?;
                    s.size = Some(n);
                }
                "cpu" => s.cpu = Some(self.uint(item, &key, 0, 4095)? as usize),
                "busy_poll" => s.busy_poll = Some(self.boolean(item, &key)?),
                "rt" => s.rt = Some(self.boolean(item, &key)?),
                "threshold" => {
                    s.threshold = Some(self.duration(item, &key, DefaultUnit::Millis)?)
                }
                "fps" => s.fps = Some(self.uint(item, &key, 1, 120)? as u32),
                "timestamps" => {
                    let text = self.string(item, &key, "one of auto, user, software, hardware")?;
                    let mode = timestamp_mode(text).map_err(|m| self.err(item.span(), &key, m))?;
                    s.timestamps = Some(mode);
                }
                "stamp" => s.stamp = Some(self.boolean(item, &key)?),
                "baseline" if allow_baseline => {
                    let t = item
                        .as_table_like()
                        .ok_or_else(|| self.expected(item, &key, "a table"))?;
                    baseline = Some(Baseline::read(t, &key, |span, k, m| self.err(span, k, m))?);
                    continue;
                }
                other => {
                    let known = KEYS.join(", ");
                    let extra = if allow_baseline { ", baseline" } else { "" };
                    return Err(ConfigError::at(
                        self.path,
                        loc,
                        &key,
                        format!("unknown key '{other}' (known: {known}{extra})"),
                    ));
                }
            }
            if let Some(k) = KEYS.iter().find(|k| **k == name) {
                s.locations.insert(k, loc);
            }
        }
        if s.packets.is_some() && s.duration.is_some() {
            let loc = s.locations.get("duration").copied().unwrap_or_default();
            return Err(ConfigError::at(
                self.path,
                loc,
                &format!("{prefix}.duration"),
                "packets and duration cannot both be set",
            ));
        }
        Ok((s, baseline))
    }
}

/// Whether text has the form of `HOST`, `HOST:PORT` or `[IPv6]:PORT`.
pub fn address_form_ok(s: &str) -> bool {
    if s.parse::<std::net::SocketAddr>().is_ok()
        || s.trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok()
    {
        return true;
    }
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
        && !host.starts_with(['-', '.']);
    host_ok && port.is_none_or(|p| p.parse::<u16>().is_ok())
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

    /// Parses and checks the whole file.
    pub fn parse(path: PathBuf, text: &str) -> Result<Self, ConfigError> {
        let doc = Document::parse(text.to_string()).map_err(|e| ConfigError {
            path: path.clone(),
            line: Loc::of(text, e.span()).line,
            column: Loc::of(text, e.span()).column,
            key: String::new(),
            message: format!("not valid TOML: {}", e.message().trim()),
        })?;
        let r = Reader { path: &path, text };
        let mut file = Self::empty(path.clone());
        for (name, item) in doc.as_table().iter() {
            let loc = Loc::of(
                text,
                doc.as_table().key(name).and_then(toml_edit::Key::span),
            );
            match name {
                "defaults" => {
                    let t = item
                        .as_table()
                        .ok_or_else(|| r.expected(item, name, "a table"))?;
                    file.defaults = r.settings(t, "defaults", false)?.0;
                }
                "profiles" => {
                    let all = item
                        .as_table()
                        .ok_or_else(|| r.expected(item, name, "a table of profiles"))?;
                    for (pname, pitem) in all.iter() {
                        let key = format!("profiles.{pname}");
                        let t = pitem
                            .as_table()
                            .ok_or_else(|| r.expected(pitem, &key, "a table"))?;
                        let (settings, baseline) = r.settings(t, &key, true)?;
                        file.profiles
                            .insert(pname.to_string(), Profile { settings, baseline });
                    }
                }
                other => {
                    return Err(ConfigError::at(
                        &path,
                        loc,
                        other,
                        format!("unknown key '{other}' (known: defaults, profiles)"),
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
                format!(
                    "known: {}",
                    self.profiles.keys().cloned().collect::<Vec<_>>().join(", ")
                )
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

    fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(PathBuf::from("/cfg/config.toml"), text)
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
bind = "10.0.0.1"
server = "10.0.0.2:9000"
duration = "30s"
timeout_ms = 200
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
        assert_eq!(f.defaults.warmup, Some(50));
        assert_eq!(f.defaults.threshold, Some(Duration::from_micros(250)));
        let p = &f.profile("lab").unwrap().settings;
        assert_eq!(p.bind.as_deref(), Some("10.0.0.1"));
        assert_eq!(p.server.as_deref(), Some("10.0.0.2:9000"));
        assert_eq!(p.duration, Some(Duration::from_secs(30)));
        assert_eq!(
            (p.timeout_ms, p.update, p.size, p.cpu),
            (Some(200), Some(10), Some(1400), Some(1))
        );
        assert_eq!(
            (p.busy_poll, p.rt, p.fps),
            (Some(true), Some(false), Some(20))
        );
        assert_eq!(p.timestamps, Some(TimestampMode::Software));
        assert_eq!(p.stamp, Some(true));
        assert_eq!(
            p.locations["size"],
            Loc {
                line: 12,
                column: 1
            }
        );
    }

    #[test]
    fn errors_name_file_line_column_and_key() {
        assert_eq!(
            error("[profiles.lab]\nserver = \"10.0.0.2\"\nwramup = 5\n"),
            "/cfg/config.toml:3:1: profiles.lab.wramup: unknown key 'wramup' (known: bind, server, packets, \
             duration, warmup, timeout_ms, update, size, cpu, busy_poll, rt, threshold, fps, timestamps, stamp, baseline)"
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
            "/cfg/config.toml:2:13: defaults.threshold: 'soon' is not a duration (try 1ms, 250us, 2s)"
        );
        assert_eq!(
            error("colour = 1\n"),
            "/cfg/config.toml:1:1: colour: unknown key 'colour' (known: defaults, profiles)"
        );
        assert!(
            error("[defaults\n").starts_with("/cfg/config.toml:1:10: not valid TOML"),
            "{}",
            error("[defaults\n")
        );
        assert_eq!(
            error("[defaults]\npackets = 5\nduration = 3\n"),
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

    #[test]
    fn address_forms() {
        for ok in [
            "10.0.0.1",
            "10.0.0.1:80",
            "[::1]:80",
            "::1",
            "host.example",
            "host-1:8080",
        ] {
            assert!(address_form_ok(ok), "{ok}");
        }
        for bad in ["", "10.0.0.1:x", "a b", "-host", "host:70000"] {
            assert!(!address_form_ok(bad), "{bad}");
        }
    }
}

#[cfg(test)]
mod example_file {
    use super::*;

    #[test]
    fn config_example_parses_and_documents_every_key() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let f = ConfigFile::parse(path, &text).unwrap();
        assert!(f.profiles.contains_key("lab"));
        for key in KEYS {
            let documented = text
                .lines()
                .any(|l| l.trim_start_matches("# ").starts_with(&format!("{key} = ")));
            assert!(documented, "config.example.toml does not document '{key}'");
        }
    }
}
