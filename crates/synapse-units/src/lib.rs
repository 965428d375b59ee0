//! Parsing and printing of times: `1ms`, `250us`, `250µs`, `1.5s`, `2min`,
//! `1h`; of rates (`100/s`, `31.1k`) and counts (`264,000`, `1 packet`),
//! with the serde helpers that put them in JSON. The leaf every other
//! Synapse crate uses: the engine and the statistics for their messages,
//! the app for its options and reports.

use std::time::Duration;

/// What a bare number (no unit) meant to an option before every duration
/// needed its unit. A bare number is refused everywhere now (one rule for
/// every duration option); this only shapes the suggestion the refusal
/// makes, and how a profile saved under the old rule is read
/// ([`with_old_unit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultUnit {
    /// Bare numbers were milliseconds (`--timeout`, `--threshold`,
    /// `--max-outage`).
    Millis,
    /// Bare numbers were seconds (`--duration`, `--hdr-interval`, …).
    Seconds,
    /// Bare numbers were never taken.
    None,
}

impl DefaultUnit {
    /// The unit a bare number had, as a duration writes it.
    fn suffix(self) -> Option<&'static str> {
        match self {
            Self::Millis => Some("ms"),
            Self::Seconds => Some("s"),
            Self::None => None,
        }
    }
}

/// The units a duration may carry, as every message lists them.
pub const TIME_UNITS: &str = "ns, us, µs, ms, s, min, h";

/// Seconds per unit, for every unit a duration may carry.
fn time_unit(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1e-9,
        "us" | "µs" | "μs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "min" => 60.0,
        "h" => 3600.0,
        _ => return None,
    })
}

/// `text` split into its number and its unit (either may be empty).
fn number_and_unit(text: &str) -> (&str, &str) {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    (num, unit.trim())
}

/// Parses a non-negative duration: a number and one of [`TIME_UNITS`]
/// (`250us`, `1.5s`, `2min`, `1h`). A bare number is refused, with the
/// unit it had before (`was`) as the suggestion: `'100' needs a unit:
/// 100ms`. Every other message names the units it takes.
pub fn parse_duration(text: &str, was: DefaultUnit) -> Result<Duration, String> {
    let (num, unit) = number_and_unit(text);
    let Ok(value) = num.parse::<f64>() else {
        return Err(format!(
            "'{text}' is not a duration: a number and one of {TIME_UNITS} (e.g. 250us, 2min)"
        ));
    };
    let scale = match unit {
        "" => {
            return Err(match was.suffix() {
                Some(old) => format!(
                    "'{text}' needs a unit: {num}{old} (a bare number was {} here before every duration needed its unit)",
                    if old == "ms" {
                        "milliseconds"
                    } else {
                        "seconds"
                    }
                ),
                None => format!("'{text}' needs a unit: {num}ms, {num}us, {num}s"),
            });
        }
        "m" => return Err(format!("'{text}' is ambiguous: write {num}min or {num}ms")),
        unit => time_unit(unit)
            .ok_or_else(|| format!("'{text}': unknown unit '{unit}' (use {TIME_UNITS})"))?,
    };
    Duration::try_from_secs_f64(value * scale).map_err(|_| format!("'{text}' is too long"))
}

/// A value saved under the old rule, made explicit: `100` becomes
/// `100ms` where bare numbers were milliseconds (`p99=5` becomes
/// `p99=5ms`: a threshold's figure is kept). `None` when `text` already
/// has its unit, or the option never took bare numbers.
pub fn with_old_unit(text: &str, was: DefaultUnit) -> Option<String> {
    let old = was.suffix()?;
    let (figure, value) = match text.rsplit_once('=') {
        Some((f, v)) => (format!("{f}="), v),
        None => (String::new(), text),
    };
    let (num, unit) = number_and_unit(value);
    (unit.is_empty() && num.parse::<f64>().is_ok()).then(|| format!("{figure}{num}{old}"))
}

/// A duration within `lo..=hi`; out of range, the message gives the range
/// in units the command line takes (`10us to 1h`).
pub fn duration_within(
    text: &str,
    default: DefaultUnit,
    lo: Duration,
    hi: Option<Duration>,
) -> Result<Duration, String> {
    let d = parse_duration(text, default)?;
    let range = match hi {
        Some(hi) => format!("{} to {}", duration_text(lo), duration_text(hi)),
        None => format!("at least {}", duration_text(lo)),
    };
    if d < lo || hi.is_some_and(|hi| d > hi) {
        return Err(format!("'{text}' is out of range: {range}"));
    }
    Ok(d)
}

/// The largest count accepted anywhere: what a TOML integer can hold, so
/// every value can be saved in a profile.
pub const MAX_COUNT: u64 = i64::MAX as u64;

/// A count of packets (or anything): `0..=MAX_COUNT`.
pub fn count(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n <= MAX_COUNT => Ok(n),
        Ok(n) => Err(format!("{n} is larger than {MAX_COUNT}")),
        Err(_) => Err(format!("'{s}' is not a count")),
    }
}

/// A percentage: `10`, `12.5` or `12.5%`.
pub fn percent(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(p) if p >= 0.0 && p.is_finite() => Ok(p),
        _ => Err(format!("'{s}' is not a percentage (e.g. 10 or 12.5)")),
    }
}

/// A share of a whole: a percentage from 0 to 100 (`--max-loss`: more
/// than all of the requests cannot be lost).
pub fn percent_of_all(s: &str) -> Result<f64, String> {
    let p = percent(s)?;
    if p > 100.0 {
        return Err(format!("'{s}' is more than all: a share is 0 to 100 %"));
    }
    Ok(p)
}

/// A duration with its unit (`30s`, `2min`), for an option whose bare
/// numbers were seconds: `30` is refused with `30s` as the suggestion.
pub fn seconds(s: &str) -> Result<Duration, String> {
    parse_duration(s, DefaultUnit::Seconds)
}

/// A duration with its unit (`250us`, `1ms`), for an option whose bare
/// numbers were milliseconds: `1` is refused with `1ms` as the suggestion.
pub fn millis(s: &str) -> Result<Duration, String> {
    parse_duration(s, DefaultUnit::Millis)
}

/// A reply timeout, 1 ms to 60 s, with its unit (bare numbers were
/// milliseconds).
pub fn timeout(s: &str) -> Result<Duration, String> {
    let hi = Duration::from_secs(60);
    duration_within(s, DefaultUnit::Millis, Duration::from_millis(1), Some(hi))
}

/// Shortest paced interval: 100 000 requests a second.
pub const MIN_INTERVAL: Duration = Duration::from_micros(10);
/// Longest paced interval.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// A paced interval: a unit is required (`10ms`, `100us`, `1s`), 10 µs to
/// 1 hour.
pub fn interval(s: &str) -> Result<Duration, String> {
    duration_within(s, DefaultUnit::None, MIN_INTERVAL, Some(MAX_INTERVAL))
}

/// How often something periodic happens: every N packets (a bare count,
/// as the original tool's `--update` took it) or every DURATION (with its
/// unit). `--update` takes either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Every {
    /// Every this many packets.
    Packets(u64),
    /// Every this long.
    Time(Duration),
}

/// Shortest [`Every::Time`]: a millisecond.
pub const MIN_EVERY: Duration = Duration::from_millis(1);

impl Every {
    /// `100` (packets) or `250ms`, `1s` (a duration, 1ms to 1h).
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if let Ok(n) = t.parse::<u64>() {
            return (1..=MAX_COUNT)
                .contains(&n)
                .then_some(Self::Packets(n))
                .ok_or_else(|| {
                    format!("'{t}': every 0 packets never happens: give a count of 1 or more, or a duration with its unit (250ms, 1s)")
                });
        }
        if t.parse::<f64>().is_ok() {
            return Err(format!(
                "'{t}' is neither a count of packets (a whole number) nor a duration (give its unit: {t}ms, {t}s)"
            ));
        }
        duration_within(t, DefaultUnit::None, MIN_EVERY, Some(MAX_INTERVAL)).map(Self::Time)
    }
}

impl std::fmt::Display for Every {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Packets(n) => write!(f, "{n}"),
            Self::Time(d) => f.write_str(&duration_text(*d)),
        }
    }
}

/// JSON: a count as a number (`100`), a duration as the command line
/// writes it (`"1s"`).
impl serde::Serialize for Every {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Packets(n) => s.serialize_u64(*n),
            Self::Time(d) => s.collect_str(&duration_text(*d)),
        }
    }
}

/// Per-unit spellings of a rate, and the seconds each unit holds.
const RATE_UNITS: [(&str, u64); 3] = [("/s", 1), ("/min", 60), ("/h", 3600)];

/// A rate as the command line takes it: `100000/s`, `30/min`, `1/h`.
fn rate_text(per_hour: u64) -> String {
    // Every count per hour is whole per hour, so one unit always fits.
    let (unit, secs) = RATE_UNITS
        .iter()
        .find(|(_, secs)| per_hour.is_multiple_of(3600 / secs))
        .unwrap_or(&("/h", 3600));
    format!("{}{unit}", per_hour / (3600 / secs))
}

/// A paced rate, in requests per second: `100`, `100/s`, `30/min`, `1/h`;
/// from one an hour to 100000 a second (the range of `--interval`).
pub fn rate(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, secs) = RATE_UNITS
        .iter()
        .find_map(|(unit, secs)| t.strip_suffix(unit).map(|n| (n.trim(), *secs)))
        .unwrap_or((t, 1));
    let max_per_hour = 3600 * 1_000_000_000 / MIN_INTERVAL.as_nanos() as u64;
    let min_per_hour = 3600 / MAX_INTERVAL.as_secs();
    let Ok(value) = num.parse::<f64>() else {
        return Err(format!(
            "'{s}' is not a rate: requests per second, or per unit (e.g. 100, 100/s, 30/min, 1/h)"
        ));
    };
    // Compared per hour, where both ends are whole numbers.
    let per_hour = value * (3600 / secs) as f64;
    if !(min_per_hour as f64..=max_per_hour as f64).contains(&per_hour) {
        return Err(format!(
            "'{s}' is out of range: {} to {}",
            rate_text(min_per_hour),
            rate_text(max_per_hour)
        ));
    }
    Ok(per_hour / 3600.0)
}

/// A bit rate, bits per second: `1gbit`, `100mbit`, `500kbit` (also
/// `1G`, `100M`, `500k`, with or without `/s` or `bps`); a bare number is
/// bits per second. Zero is refused (say what no cap means where one is
/// allowed).
pub fn bitrate(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .trim_end_matches("/s")
        .trim_end_matches("ps")
        .trim_end_matches("bit");
    let t = t.trim_end_matches('b');
    let (num, scale) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        Some('g') => (&t[..t.len() - 1], 1e9),
        Some('t') => (&t[..t.len() - 1], 1e12),
        _ => (t, 1.0),
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && (v * scale) < 1e15 => Ok((v * scale).round() as u64),
        _ => Err(format!(
            "'{s}' is not a bit rate above zero (e.g. 100mbit, 1gbit, 500kbit)"
        )),
    }
}

/// A bit rate with a unit that suits it: `950 kbit/s`, `9.52 Mbit/s`,
/// `1.00 Gbit/s`.
pub fn format_bps(bps: f64) -> String {
    if bps < 1e6 {
        format!("{:.0} kbit/s", bps / 1e3)
    } else if bps < 1e9 {
        format!("{:.2} Mbit/s", bps / 1e6)
    } else {
        format!("{:.2} Gbit/s", bps / 1e9)
    }
}

/// JSON: an optional duration as nanoseconds (null when absent).
pub fn serde_opt_ns<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_u64(d.as_nanos() as u64),
        None => s.serialize_none(),
    }
}

/// JSON: an optional duration as seconds (null when absent).
pub fn serde_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// JSON: a duration as milliseconds, an integer when it is a whole number.
pub fn serde_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    if d.subsec_nanos().is_multiple_of(1_000_000) {
        s.serialize_u64(d.as_millis() as u64)
    } else {
        s.serialize_f64(d.as_secs_f64() * 1e3)
    }
}

/// JSON: a duration as nanoseconds.
pub fn serde_ns<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_nanos() as u64)
}

/// JSON: a value as its display text.
pub fn serde_display<T: std::fmt::Display, S: serde::Serializer>(
    v: &T,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// JSON: an optional value as its display text (null when absent).
pub fn serde_opt_display<T: std::fmt::Display, S: serde::Serializer>(
    v: &Option<T>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.collect_str(v),
        None => s.serialize_none(),
    }
}

/// A duration as the command line takes it, in the largest unit that
/// keeps it whole: `1h`, `2min`, `1s`, `250ms`, `500us`, `800ns`.
pub fn duration_text(d: Duration) -> String {
    const UNITS: [(u128, &str); 6] = [
        (3_600_000_000_000, "h"),
        (60_000_000_000, "min"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    let n = d.as_nanos();
    let (size, unit) = UNITS
        .iter()
        .find(|(size, _)| n > 0 && n.is_multiple_of(*size))
        .unwrap_or(&(1, "ns"));
    format!("{}{unit}", n / size)
}

/// JSON: a list of values as their display texts.
pub fn serde_display_all<T: std::fmt::Display, S: serde::Serializer>(
    v: &[T],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(ToString::to_string))
}

/// A nanosecond figure with a unit that suits its size: `850 ns`,
/// `22.8 µs`, `1.25 ms`, `2.00 s`.
pub fn format_ns(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1_000_000_000.0 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// One unit for every round-trip figure of a report, chosen once from
/// its typical figure (its median): a report in µs says `77.1 µs` in its
/// verdict too, not `0.077ms`, and its slowest reply `3,090 µs`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    ns_per_unit: f64,
    unit: &'static str,
}

impl Scale {
    /// The unit that suits `typical_ns`: ns, µs, ms or s.
    pub fn for_figure(typical_ns: f64) -> Self {
        let (ns_per_unit, unit) = match typical_ns {
            v if v < 1e3 => (1.0, "ns"),
            v if v < 1e6 => (1e3, "µs"),
            v if v < 1e9 => (1e6, "ms"),
            _ => (1e9, "s"),
        };
        Self { ns_per_unit, unit }
    }

    /// `ns` in this unit: one decimal from 10 (`59.8 µs`, `272.9 µs`), two
    /// below (`7.21 µs`), whole and grouped from 1,000 (`3,091 µs`).
    pub fn format(&self, ns: f64) -> String {
        let v = ns / self.ns_per_unit;
        let text = match v.abs() {
            a if a >= 1_000.0 => group_thousands(v.round() as u64),
            a if a >= 10.0 => format!("{v:.1}"),
            _ => format!("{v:.2}"),
        };
        format!("{text} {}", self.unit)
    }
}

/// A figure of either sign with `decimals` places: `+1.50`, `−7.07` (the
/// minus sign of the times beside it, `−3.2 µs`), and no sign at all when
/// it rounds to zero: `0.00`, never `-0.00` or `+0.00`.
pub fn signed(v: f64, decimals: usize) -> String {
    let text = format!("{:.decimals$}", v.abs());
    if text.chars().all(|c| c == '0' || c == '.') {
        text
    } else if v < 0.0 {
        format!("−{text}")
    } else {
        format!("+{text}")
    }
}

/// A time of either sign: `+1.2 µs`, `−3.2 µs`, and `0 ns` with no sign.
pub fn signed_ns(ns: f64) -> String {
    let text = format_ns(ns.abs());
    if text.starts_with("0 ") {
        text
    } else if ns < 0.0 {
        format!("−{text}")
    } else {
        format!("+{text}")
    }
}

/// A duration the user chose, as plainly as it can be written: `1 ms`,
/// `250 µs`, `1.5 s` (no padding zeros).
pub fn format_ns_plain(ns: u64) -> String {
    let (scale, unit) = match ns {
        0..1_000 => (1.0, "ns"),
        1_000..1_000_000 => (1e3, "µs"),
        1_000_000..1_000_000_000 => (1e6, "ms"),
        _ => (1e9, "s"),
    };
    let v = ns as f64 / scale;
    let text = format!("{v:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {unit}")
}

/// A rate in packets per second, abbreviated: `950`, `31.1k`, `1.20M`.
pub fn format_rate(pps: f64) -> String {
    if pps < 1_000.0 {
        format!("{pps:.0}")
    } else if pps < 1_000_000.0 {
        format!("{:.1}k", pps / 1e3)
    } else {
        format!("{:.2}M", pps / 1e6)
    }
}

/// An integer with thousands separators: `264,000`.
pub fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count that fits a narrow column: grouped up to 99,999, then `227.0k`,
/// `123.46M`, `9.88G`.
pub fn compact_count(n: u64) -> String {
    match n {
        0..100_000 => group_thousands(n),
        100_000..100_000_000 => format!("{:.1}k", n as f64 / 1e3),
        100_000_000..1_000_000_000 => format!("{:.2}M", n as f64 / 1e6),
        _ => format!("{:.2}G", n as f64 / 1e9),
    }
}

/// A count and its noun, grouped and pluralised: `1 packet`, `1,020 packets`.
pub fn count_of(n: u64, noun: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{} {noun}{s}", group_thousands(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_rates_take_their_units_and_print_back() {
        assert_eq!(bitrate("1gbit"), Ok(1_000_000_000));
        assert_eq!(bitrate("100Mbit/s"), Ok(100_000_000));
        assert_eq!(bitrate("10M"), Ok(10_000_000));
        assert_eq!(bitrate("500kbps"), Ok(500_000));
        assert_eq!(bitrate("2.5g"), Ok(2_500_000_000));
        assert_eq!(bitrate("64000"), Ok(64_000));
        assert!(bitrate("0").is_err() && bitrate("fast").is_err() && bitrate("-1m").is_err());
        assert_eq!(format_bps(9_523_000.0), "9.52 Mbit/s");
        assert_eq!(format_bps(950_000.0), "950 kbit/s");
        assert_eq!(format_bps(1e9), "1.00 Gbit/s");
    }

    #[test]
    fn parses_units_and_refuses_bare_numbers_with_a_suggestion() {
        let (ms, secs) = (DefaultUnit::Millis, DefaultUnit::Seconds);
        for (text, unit, want) in [
            ("1ms", ms, Duration::from_millis(1)),
            ("250us", ms, Duration::from_micros(250)),
            ("250µs", ms, Duration::from_micros(250)),
            ("1.5ms", ms, Duration::from_micros(1500)),
            ("800ns", ms, Duration::from_nanos(800)),
            ("2s", secs, Duration::from_secs(2)),
            ("1 min", secs, Duration::from_secs(60)),
            ("1 s", ms, Duration::from_secs(1)),
            ("1h", secs, Duration::from_secs(3600)),
        ] {
            assert_eq!(parse_duration(text, unit), Ok(want), "{text}");
        }
        // Issue 51: one rule for every duration option, whatever a bare
        // number meant to it before; the suggestion keeps that meaning.
        for (text, was, want) in [
            (
                "1",
                ms,
                "'1' needs a unit: 1ms (a bare number was milliseconds here before",
            ),
            (
                "30",
                secs,
                "'30' needs a unit: 30s (a bare number was seconds here before",
            ),
            ("5", DefaultUnit::None, "'5' needs a unit: 5ms, 5us, 5s"),
            ("1.5", ms, "'1.5' needs a unit: 1.5ms"),
        ] {
            let e = parse_duration(text, was).unwrap_err();
            assert!(e.starts_with(want), "{text}: {e}");
        }
    }

    #[test]
    fn values_saved_under_the_old_rule_get_their_old_unit() {
        assert_eq!(
            with_old_unit("100", DefaultUnit::Millis),
            Some("100ms".into())
        );
        assert_eq!(
            with_old_unit("30", DefaultUnit::Seconds),
            Some("30s".into())
        );
        assert_eq!(
            with_old_unit("p99=5", DefaultUnit::Millis),
            Some("p99=5ms".into())
        );
        assert_eq!(
            with_old_unit("2.5", DefaultUnit::Millis),
            Some("2.5ms".into())
        );
        assert_eq!(
            with_old_unit("100ms", DefaultUnit::Millis),
            None,
            "already explicit"
        );
        assert_eq!(with_old_unit("p99=5us", DefaultUnit::Millis), None);
        assert_eq!(
            with_old_unit("soon", DefaultUnit::Millis),
            None,
            "not a number: the parser says why"
        );
        assert_eq!(
            with_old_unit("5", DefaultUnit::None),
            None,
            "never taken bare"
        );
    }

    #[test]
    fn a_report_keeps_one_unit() {
        let us = Scale::for_figure(61_000.0);
        assert_eq!(us.format(77_100.0), "77.1 µs");
        assert_eq!(us.format(3_090_500.0), "3,091 µs");
        assert_eq!(us.format(7_210.0), "7.21 µs");
        assert_eq!(us.format(272_900.0), "272.9 µs");
        assert_eq!(Scale::for_figure(2.1e6).format(61_000.0), "0.06 ms");
    }

    #[test]
    fn a_share_is_at_most_all() {
        assert_eq!(percent_of_all("100"), Ok(100.0));
        assert_eq!(percent_of_all("0.5%"), Ok(0.5));
        assert_eq!(
            percent_of_all("150").unwrap_err(),
            "'150' is more than all: a share is 0 to 100 %"
        );
        assert!(percent_of_all("-1").is_err());
    }

    #[test]
    fn every_takes_a_count_of_packets_or_a_duration() {
        assert_eq!(Every::parse("100"), Ok(Every::Packets(100)));
        assert_eq!(
            Every::parse("250ms"),
            Ok(Every::Time(Duration::from_millis(250)))
        );
        assert_eq!(Every::parse("1s").map(|e| e.to_string()), Ok("1s".into()));
        let zero = Every::parse("0").unwrap_err();
        assert!(zero.contains("every 0 packets never happens"), "{zero}");
        assert!(
            zero.contains("a duration with its unit (250ms, 1s)"),
            "{zero}"
        );
        assert!(!zero.contains("9223372036854775807"), "{zero}");
        let frac = Every::parse("0.5").unwrap_err();
        assert!(frac.contains("give its unit: 0.5ms, 0.5s"), "{frac}");
        assert_eq!(
            Every::parse("0ms").unwrap_err(),
            "'0ms' is out of range: 1ms to 1h"
        );
        assert!(Every::parse("soon").unwrap_err().contains("not a duration"));
    }

    /// Issue 36: every unit a message lists is taken (`1h` was listed by
    /// the range and refused by the parser; `min` taken and not listed).
    #[test]
    fn every_listed_unit_is_taken_and_ranges_print_as_written() {
        for unit in TIME_UNITS
            .split([',', '(', ')', ' '])
            .filter(|u| !u.is_empty() && *u != "or")
        {
            assert!(
                parse_duration(&format!("1{unit}"), DefaultUnit::None).is_ok(),
                "{unit}"
            );
        }
        assert_eq!(interval("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(
            interval("61min").unwrap_err(),
            "'61min' is out of range: 10us to 1h"
        );
        assert_eq!(
            interval("5us").unwrap_err(),
            "'5us' is out of range: 10us to 1h"
        );
        assert_eq!(
            timeout("0ms").unwrap_err(),
            "'0ms' is out of range: 1ms to 1min"
        );
        assert_eq!(timeout("60s"), Ok(Duration::from_secs(60)));
        for (d, text) in [(3600, "1h"), (120, "2min"), (90, "90s")] {
            assert_eq!(duration_text(Duration::from_secs(d)), text);
        }
        assert_eq!(duration_text(Duration::from_micros(10)), "10us");
        assert_eq!(duration_text(Duration::ZERO), "0ns");
    }

    #[test]
    fn rates_take_a_unit_and_keep_their_whole_range() {
        assert_eq!(rate("100000"), Ok(100_000.0), "the top of the range");
        assert_eq!(rate("100000/s"), Ok(100_000.0));
        assert_eq!(rate("30/min"), Ok(0.5));
        assert_eq!(rate("1/h"), Ok(1.0 / 3600.0));
        for bad in ["100001", "0", "0.5/h"] {
            assert_eq!(
                rate(bad).unwrap_err(),
                format!("'{bad}' is out of range: 1/h to 100000/s")
            );
        }
        assert!(
            rate("fast")
                .unwrap_err()
                .contains("e.g. 100, 100/s, 30/min, 1/h")
        );
    }

    #[test]
    fn formats_with_fitting_units() {
        let cases: [(String, &str); 25] = [
            (format_ns(850.0), "850 ns"),
            (format_ns(22_800.0), "22.8 µs"),
            (format_ns(1_250_000.0), "1.25 ms"),
            (format_ns(2e9), "2.00 s"),
            (format_rate(31_100.0), "31.1k"),
            (format_ns_plain(1_000_000), "1 ms"),
            (format_ns_plain(250_000), "250 µs"),
            (format_ns_plain(1_500_000_000), "1.5 s"),
            (format_ns_plain(800), "800 ns"),
            (group_thousands(264_000), "264,000"),
            (group_thousands(7), "7"),
            (group_thousands(1_000_000), "1,000,000"),
            (count_of(1, "packet"), "1 packet"),
            (count_of(1_020, "packet"), "1,020 packets"),
            (count_of(0, "byte"), "0 bytes"),
            (compact_count(99_999), "99,999"),
            (compact_count(227_000), "227.0k"),
            (compact_count(123_456_789), "123.46M"),
            (signed(-7.071, 2), "−7.07"),
            (signed(-0.001, 2), "0.00"),
            (signed(0.0, 0), "0"),
            (signed(1.5, 1), "+1.5"),
            (signed_ns(-3_200.0), "−3.2 µs"),
            (signed_ns(-0.3), "0 ns"),
            (signed_ns(101.0), "+101 ns"),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }
}
