//! The load session's control protocol: short text lines over TCP,
//! versioned by the greeting, small enough to read in a packet capture.
//!
//! Every connection to the load port (a session's control connection, and
//! each of its bulk streams) opens with the reflector's greeting, which
//! carries a fresh nonce: only a peer that completed the TCP handshake
//! ever sees it, so nothing is sent to a forged address. Then:
//!
//! ```text
//! reflector: SYNAPSE-LOAD/1 nonce=<32 hex>
//! client:    HELLO seconds=<load planned> streams=<most at once> mac=<64 hex | ->
//! reflector: OK session=<16 hex> echo=<port|-> stamp=<port|-> seconds=<allowed>
//!               rate=<bits/s> streams=<most> cc=<its default>
//!          | REFUSED <why, one line>
//! client:    PHASE load=<download|upload|bidirectional> seconds=<cap>   → GO | REFUSED …
//! client:    INFO                                → INFO <the reflector's side, below>
//! client:    END                                 → INFO … (the phase's last)
//! client:    BYE
//! ```
//!
//! A bulk stream is another connection to the same port: after the
//! greeting, `DATA session=<16 hex> dir=<down|up> cc=<name|->`, answered
//! `GO` (then the bytes flow) or `REFUSED …`. With a key, the HELLO's
//! `mac` is HMAC-SHA-256 over the greeting's nonce and the HELLO before
//! ` mac=`; the session number it is granted is what admits its streams.

use std::fmt::Write as _;

/// The protocol's version, in the greeting.
pub const VERSION: u32 = 1;
/// The longest line either side sends or accepts.
pub const MAX_LINE: usize = 512;

pub use synapse_stats::load::{PhaseKind, Way};

/// What the reflector grants a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The number that admits the session's streams.
    pub session: u64,
    /// Its UDP echo port, when it answers echo.
    pub echo: Option<u16>,
    /// Its STAMP port, when it answers STAMP.
    pub stamp: Option<u16>,
    /// Seconds of load the session may have in all.
    pub seconds: u32,
    /// The most the session may move each way, bits per second.
    pub rate_bps: u64,
    /// Streams the session may have open at once.
    pub streams: u32,
    /// The congestion control the reflector's senders use unless told.
    pub cc: String,
}

/// The reflector's side of a phase so far: its streams' bytes and what
/// its kernel says of the connections it sends on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    /// Its streams open now.
    pub streams: u32,
    /// Bytes it sent (download streams).
    pub sent: u64,
    /// Of those, acknowledged by the client's kernel.
    pub acked: u64,
    /// Bytes it received (upload streams).
    pub received: u64,
    /// Segments its senders resent (`tcpi_total_retrans`).
    pub retrans: u64,
    /// Bytes its senders resent.
    pub bytes_retrans: u64,
    /// Each sending connection's smoothed RTT (`tcpi_rtt`), µs.
    pub rtt_us: Vec<u32>,
}

/// A line from the reflector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromReflector {
    /// The first line of every connection.
    Greeting {
        /// Fresh for this connection: what a HELLO's MAC covers.
        nonce: [u8; 16],
    },
    /// A session is granted.
    Granted(Grant),
    /// A phase may start, or a stream may flow.
    Go,
    /// Its side of the phase.
    Info(Info),
    /// No, and why.
    Refused(String),
}

/// A line from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromClient {
    /// Asks for a session.
    Hello(Hello),
    /// Announces a phase.
    Phase {
        /// What it loads.
        load: PhaseKind,
        /// Its cap, seconds.
        seconds: u32,
    },
    /// Opens a bulk stream of a session.
    Data {
        /// The session's number.
        session: u64,
        /// Which way the bytes go.
        dir: Way,
        /// The sender's congestion control, when the client chose one.
        cc: Option<String>,
    },
    /// Asks for the reflector's side of the phase.
    Info,
    /// Ends the phase.
    End,
    /// Ends the session.
    Bye,
}

/// A session's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// Seconds of load the run plans, all phases together.
    pub seconds: u32,
    /// The most streams it will open at once.
    pub streams: u32,
    /// HMAC-SHA-256 over the nonce and [`Hello::signed_text`].
    pub mac: Option<[u8; 32]>,
}

impl Hello {
    /// The part of the line the MAC covers.
    pub fn signed_text(&self) -> String {
        format!("HELLO seconds={} streams={}", self.seconds, self.streams)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

fn port_text(p: Option<u16>) -> String {
    p.map_or_else(|| "-".into(), |p| p.to_string())
}

/// A congestion control name as the kernel spells them: short, no spaces.
pub fn valid_cc(name: &str) -> bool {
    !name.is_empty()
        && name.len() < 16
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl FromReflector {
    /// The line, without its newline.
    pub fn encode(&self) -> String {
        match self {
            FromReflector::Greeting { nonce } => {
                format!("SYNAPSE-LOAD/{VERSION} nonce={}", hex(nonce))
            }
            FromReflector::Granted(g) => format!(
                "OK session={:016x} echo={} stamp={} seconds={} rate={} streams={} cc={}",
                g.session,
                port_text(g.echo),
                port_text(g.stamp),
                g.seconds,
                g.rate_bps,
                g.streams,
                g.cc
            ),
            FromReflector::Go => "GO".into(),
            FromReflector::Info(i) => {
                let rtts = if i.rtt_us.is_empty() {
                    "-".into()
                } else {
                    i.rtt_us
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                };
                format!(
                    "INFO streams={} sent={} acked={} received={} retrans={} bytes_retrans={} rtt_us={rtts}",
                    i.streams, i.sent, i.acked, i.received, i.retrans, i.bytes_retrans
                )
            }
            FromReflector::Refused(why) => format!("REFUSED {}", one_line(why)),
        }
    }

    /// A line from the reflector (no newline).
    pub fn parse(line: &str) -> Result<Self, String> {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let f = Fields::of(rest);
        match word {
            w if w.starts_with("SYNAPSE-LOAD/") => {
                let v = &w["SYNAPSE-LOAD/".len()..];
                if v != VERSION.to_string() {
                    return Err(format!(
                        "the reflector speaks load protocol version {v}; this client speaks {VERSION}"
                    ));
                }
                let nonce = f.get("nonce").and_then(unhex::<16>).ok_or("no nonce")?;
                Ok(FromReflector::Greeting { nonce })
            }
            "OK" => Ok(FromReflector::Granted(Grant {
                session: f.hex_u64("session")?,
                echo: f.port("echo")?,
                stamp: f.port("stamp")?,
                seconds: f.num("seconds")?,
                rate_bps: f.num("rate")?,
                streams: f.num("streams")?,
                cc: f.get("cc").filter(|c| valid_cc(c)).ok_or("no cc")?.into(),
            })),
            "GO" => Ok(FromReflector::Go),
            "INFO" => Ok(FromReflector::Info(Info {
                streams: f.num("streams")?,
                sent: f.num("sent")?,
                acked: f.num("acked")?,
                received: f.num("received")?,
                retrans: f.num("retrans")?,
                bytes_retrans: f.num("bytes_retrans")?,
                rtt_us: match f.get("rtt_us") {
                    Some("-") | None => Vec::new(),
                    Some(list) => list
                        .split(',')
                        .map(|v| v.parse().map_err(|_| format!("bad rtt_us '{v}'")))
                        .collect::<Result<_, _>>()?,
                },
            })),
            "REFUSED" => Ok(FromReflector::Refused(rest.trim().to_string())),
            other => Err(format!(
                "unexpected line from the reflector: '{}'",
                short(other)
            )),
        }
    }
}

impl FromClient {
    /// The line, without its newline.
    pub fn encode(&self) -> String {
        match self {
            FromClient::Hello(h) => {
                let mac = h.mac.map_or_else(|| "-".into(), |m| hex(&m));
                format!("{} mac={mac}", h.signed_text())
            }
            FromClient::Phase { load, seconds } => {
                format!("PHASE load={} seconds={seconds}", load.name())
            }
            FromClient::Data { session, dir, cc } => format!(
                "DATA session={session:016x} dir={} cc={}",
                dir.name(),
                cc.as_deref().unwrap_or("-")
            ),
            FromClient::Info => "INFO".into(),
            FromClient::End => "END".into(),
            FromClient::Bye => "BYE".into(),
        }
    }

    /// A line from the client (no newline).
    pub fn parse(line: &str) -> Result<Self, String> {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let f = Fields::of(rest);
        match word {
            "HELLO" => Ok(FromClient::Hello(Hello {
                seconds: f.num("seconds")?,
                streams: f.num("streams")?,
                mac: match f.get("mac") {
                    Some("-") | None => None,
                    Some(m) => Some(unhex::<32>(m).ok_or("a mac is 64 hex digits")?),
                },
            })),
            "PHASE" => Ok(FromClient::Phase {
                load: f.get("load").ok_or("no load")?.parse()?,
                seconds: f.num("seconds")?,
            }),
            "DATA" => Ok(FromClient::Data {
                session: f.hex_u64("session")?,
                dir: match f.get("dir") {
                    Some("down") => Way::Down,
                    Some("up") => Way::Up,
                    _ => return Err("dir is down or up".into()),
                },
                cc: match f.get("cc") {
                    Some("-") | None => None,
                    Some(c) if valid_cc(c) => Some(c.to_string()),
                    Some(c) => return Err(format!("'{}' is not a congestion control", short(c))),
                },
            }),
            "INFO" => Ok(FromClient::Info),
            "END" => Ok(FromClient::End),
            "BYE" => Ok(FromClient::Bye),
            other => Err(format!(
                "unexpected line from the client: '{}'",
                short(other)
            )),
        }
    }
}

/// A message's text on one line, within the line limit.
fn one_line(s: &str) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    flat.chars().take(MAX_LINE - 16).collect()
}

/// At most 40 characters of something unexpected, for an error.
fn short(s: &str) -> String {
    s.chars().take(40).collect()
}

/// `key=value` fields of a line.
struct Fields<'a>(Vec<(&'a str, &'a str)>);

impl<'a> Fields<'a> {
    fn of(rest: &'a str) -> Self {
        Self(
            rest.split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .collect(),
        )
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn num<T: std::str::FromStr>(&self, key: &str) -> Result<T, String> {
        self.get(key)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("no number {key}"))
    }

    fn hex_u64(&self, key: &str) -> Result<u64, String> {
        self.get(key)
            .and_then(unhex::<8>)
            .map(u64::from_be_bytes)
            .ok_or_else(|| format!("no {key}"))
    }

    fn port(&self, key: &str) -> Result<Option<u16>, String> {
        match self.get(key) {
            Some("-") => Ok(None),
            Some(p) => p.parse().map(Some).map_err(|_| format!("bad port {key}")),
            None => Err(format!("no {key}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reflector_line_reads_back_as_written() {
        let lines = [
            FromReflector::Greeting { nonce: [0xab; 16] },
            FromReflector::Granted(Grant {
                session: 0x0123_4567_89ab_cdef,
                echo: Some(8080),
                stamp: None,
                seconds: 30,
                rate_bps: 1_000_000_000,
                streams: 16,
                cc: "cubic".into(),
            }),
            FromReflector::Go,
            FromReflector::Info(Info {
                streams: 2,
                sent: 10,
                acked: 9,
                received: 0,
                retrans: 3,
                bytes_retrans: 4344,
                rtt_us: vec![120, 98_000],
            }),
            FromReflector::Info(Info::default()),
            FromReflector::Refused("2 sessions already (--load-max-sessions 2)".into()),
        ];
        for l in lines {
            let text = l.encode();
            assert!(text.len() < MAX_LINE && !text.contains('\n'), "{text}");
            assert_eq!(FromReflector::parse(&text), Ok(l), "{text}");
        }
    }

    #[test]
    fn every_client_line_reads_back_as_written() {
        let lines = [
            FromClient::Hello(Hello {
                seconds: 30,
                streams: 16,
                mac: Some([7; 32]),
            }),
            FromClient::Hello(Hello {
                seconds: 1,
                streams: 1,
                mac: None,
            }),
            FromClient::Phase {
                load: PhaseKind::Bidirectional,
                seconds: 10,
            },
            FromClient::Data {
                session: 42,
                dir: Way::Up,
                cc: Some("bbr".into()),
            },
            FromClient::Data {
                session: u64::MAX,
                dir: Way::Down,
                cc: None,
            },
            FromClient::Info,
            FromClient::End,
            FromClient::Bye,
        ];
        for l in lines {
            let text = l.encode();
            assert_eq!(FromClient::parse(&text), Ok(l), "{text}");
        }
    }

    #[test]
    fn bad_lines_are_errors_that_say_what() {
        assert!(
            FromReflector::parse("SYNAPSE-LOAD/2 nonce=00")
                .unwrap_err()
                .contains("version 2")
        );
        assert!(FromReflector::parse("HTTP/1.1 400 Bad Request").is_err());
        assert!(FromClient::parse("GET / HTTP/1.1").is_err());
        assert!(FromClient::parse("HELLO seconds=x streams=1 mac=-").is_err());
        assert!(FromClient::parse("HELLO seconds=1 streams=1 mac=abc").is_err());
        assert!(FromClient::parse("DATA session=0000000000000001 dir=sideways cc=-").is_err());
        assert!(FromClient::parse("DATA session=0000000000000001 dir=up cc=a;b").is_err());
        assert!(FromClient::parse("PHASE load=sideways seconds=1").is_err());
    }

    #[test]
    fn a_refusal_stays_on_one_line() {
        let l = FromReflector::Refused("two\nlines".into()).encode();
        assert_eq!(l, "REFUSED two lines");
    }

    #[test]
    fn the_mac_covers_the_hello_before_it() {
        let h = Hello {
            seconds: 30,
            streams: 4,
            mac: Some([1; 32]),
        };
        let line = FromClient::Hello(h.clone()).encode();
        assert!(line.starts_with(&h.signed_text()));
        assert!(!h.signed_text().contains("mac"));
    }

    #[test]
    fn loads_carry_their_directions() {
        assert!(PhaseKind::Download.carries(Way::Down));
        assert!(!PhaseKind::Download.carries(Way::Up));
        assert!(PhaseKind::Bidirectional.carries(Way::Up));
        assert_eq!(PhaseKind::Upload.ways(), &[Way::Up]);
        assert_eq!("upload".parse(), Ok(PhaseKind::Upload));
        assert!(valid_cc("bbr") && valid_cc("cubic") && !valid_cc("") && !valid_cc("a b"));
    }
}
