//! What kind of run a baseline was taken with: its transport, pattern,
//! protocol, size, interval, DSCP, IP version and reflector. A run of
//! another kind is not compared with it (a TCP run against a UDP
//! baseline, a 60,000-byte one against an 8-byte one, is apples and
//! pears), and the report says why. The timestamp source, which the
//! baseline keeps beside it, is compared the same way.

use super::error::ConfigError;
use serde::Serialize;
use std::ops::Range;
use toml_edit::{Item, Table, TableLike, value};

/// The kind of a run, as a baseline keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunKind {
    /// `udp`, `tcp`, or `tcp-crr` (a connection per transaction).
    pub transport: String,
    /// `ping-pong`, `periodic` or `poisson`.
    pub pattern: String,
    /// `echo` or `stamp`.
    pub protocol: String,
    /// Bytes on the wire per request (the UDP or TCP payload).
    pub size: u64,
    /// Paced: the interval (or mean gap), ns.
    pub interval_ns: Option<u64>,
    /// The DSCP requests are marked with, when marked.
    pub dscp: Option<u8>,
    /// 4 or 6.
    pub ip: u8,
    /// `in-process` (the client's own loopback reflector) or `remote`.
    pub reflector: String,
}

/// Keys of a kept kind, in the order they are written.
const KEYS: [&str; 8] = [
    "transport",
    "pattern",
    "protocol",
    "size",
    "interval_ns",
    "dscp",
    "ip",
    "reflector",
];

impl RunKind {
    /// How `self` (the baseline's) and `now` (this run's) differ, a phrase
    /// each: `transport tcp, not udp`.
    pub fn differences(&self, now: &RunKind) -> Vec<String> {
        let opt = |v: Option<u64>| v.map_or_else(|| "none".to_string(), |v| v.to_string());
        let pairs = [
            ("transport", self.transport.clone(), now.transport.clone()),
            ("pattern", self.pattern.clone(), now.pattern.clone()),
            ("protocol", self.protocol.clone(), now.protocol.clone()),
            (
                "size",
                format!("{} bytes", self.size),
                format!("{} bytes", now.size),
            ),
            ("interval", opt(self.interval_ns), opt(now.interval_ns)),
            (
                "DSCP",
                opt(self.dscp.map(u64::from)),
                opt(now.dscp.map(u64::from)),
            ),
            ("IP version", self.ip.to_string(), now.ip.to_string()),
            ("reflector", self.reflector.clone(), now.reflector.clone()),
        ];
        pairs
            .into_iter()
            .filter(|(_, then, now)| then != now)
            .map(|(what, then, now)| {
                let what = if what == "interval" {
                    "interval (ns)"
                } else {
                    what
                };
                format!("{what} {now}, not {then}")
            })
            .collect()
    }

    /// The table written under `[profiles.NAME.baseline.kind]`.
    pub fn to_table(&self) -> Table {
        let mut t = Table::new();
        t["transport"] = value(self.transport.clone());
        t["pattern"] = value(self.pattern.clone());
        t["protocol"] = value(self.protocol.clone());
        t["size"] = value(self.size as i64);
        if let Some(i) = self.interval_ns {
            t["interval_ns"] = value(i as i64);
        }
        if let Some(d) = self.dscp {
            t["dscp"] = value(i64::from(d));
        }
        t["ip"] = value(i64::from(self.ip));
        t["reflector"] = value(self.reflector.clone());
        t
    }

    /// Reads a kept kind; `err` builds located errors.
    pub(crate) fn read(
        t: &dyn TableLike,
        prefix: &str,
        err: impl Fn(Option<Range<usize>>, &str, String) -> ConfigError,
    ) -> Result<Self, ConfigError> {
        let key = |k: &str| format!("{prefix}.{k}");
        for (k, item) in t.iter() {
            if !KEYS.contains(&k) {
                return Err(err(
                    item.span(),
                    &key(k),
                    format!("unknown key '{k}' in a run's kind"),
                ));
            }
        }
        let text = |k: &str| -> Result<String, ConfigError> {
            let item = t
                .get(k)
                .ok_or_else(|| err(None, &key(k), "missing".into()))?;
            item.as_str()
                .map(str::to_string)
                .ok_or_else(|| err(item.span(), &key(k), "expected a string".into()))
        };
        let int = |k: &str| -> Result<Option<u64>, ConfigError> {
            let Some(item) = t.get(k) else {
                return Ok(None);
            };
            item.as_integer()
                .and_then(|n| u64::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| {
                    err(
                        item.span(),
                        &key(k),
                        "expected a non-negative integer".into(),
                    )
                })
        };
        let need = |k: &str| int(k)?.ok_or_else(|| err(None, &key(k), "missing".into()));
        let small = |k: &str, n: u64| {
            u8::try_from(n).map_err(|_| {
                err(
                    t.get(k).and_then(Item::span),
                    &key(k),
                    "out of range".into(),
                )
            })
        };
        Ok(Self {
            transport: text("transport")?,
            pattern: text("pattern")?,
            protocol: text("protocol")?,
            size: need("size")?,
            interval_ns: int("interval_ns")?,
            dscp: int("dscp")?.map(|d| small("dscp", d)).transpose()?,
            ip: small("ip", need("ip")?)?,
            reflector: text("reflector")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp() -> RunKind {
        RunKind {
            transport: "udp".into(),
            pattern: "ping-pong".into(),
            protocol: "echo".into(),
            size: 8,
            interval_ns: None,
            dscp: None,
            ip: 4,
            reflector: "remote".into(),
        }
    }

    #[test]
    fn each_difference_is_named_this_run_first() {
        let then = udp();
        assert!(then.differences(&udp()).is_empty());
        let now = RunKind {
            transport: "tcp".into(),
            size: 60_000,
            interval_ns: Some(1_000_000),
            ..udp()
        };
        assert_eq!(
            then.differences(&now),
            [
                "transport tcp, not udp",
                "size 60000 bytes, not 8 bytes",
                "interval (ns) 1000000, not none"
            ]
        );
    }

    #[test]
    fn a_kind_round_trips_through_its_table() {
        let k = RunKind {
            dscp: Some(46),
            interval_ns: Some(10_000_000),
            ..udp()
        };
        let t = k.to_table();
        let back = RunKind::read(&t, "profiles.x.baseline.kind", |_, key, why| ConfigError {
            path: "x".into(),
            line: 0,
            column: 0,
            key: key.into(),
            message: why,
        });
        assert_eq!(back, Ok(k));
    }
}
