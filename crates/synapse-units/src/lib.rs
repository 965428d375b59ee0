//! Parsing and printing of times: `1ms`, `250us`, `250µs`, `1.5s`, `800ns`;
//! and of rates and counts (`31.1k`, `264,000`, `1 packet`), with the
//! serde helpers that put them in JSON. The leaf every other Synapse crate
//! uses: the engine and the statistics for their messages, the app for
//! its options and reports.

use std::time::Duration;

/// Unit assumed for a bare number.
#[derive(Debug, Clone, Copy)]
pub enum DefaultUnit {
    /// Bare numbers are milliseconds.
    Millis,
    /// Bare numbers are seconds.
    Seconds,
}

/// Parses a non-negative duration with an optional unit suffix.
pub fn parse_duration(text: &str, default: DefaultUnit) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (try 1ms, 250us, 2s)"))?;
    let scale = match unit.trim() {
        "" => match default {
            DefaultUnit::Millis => 1e-3,
            DefaultUnit::Seconds => 1.0,
        },
        "ns" => 1e-9,
        "us" | "µs" | "μs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        other => {
            return Err(format!(
                "unknown time unit '{other}' in '{text}' (use ns, us, ms, s)"
            ));
        }
    };
    Duration::try_from_secs_f64(value * scale).map_err(|_| format!("'{text}' is out of range"))
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

/// A duration whose bare numbers are seconds (`30`, `30s`, `2min`).
pub fn seconds(s: &str) -> Result<Duration, String> {
    parse_duration(s, DefaultUnit::Seconds)
}

/// A duration whose bare numbers are milliseconds (`1`, `250us`, `1ms`).
pub fn millis(s: &str) -> Result<Duration, String> {
    parse_duration(s, DefaultUnit::Millis)
}

/// A reply timeout: milliseconds when bare, 1 ms to 60 s.
pub fn timeout(s: &str) -> Result<Duration, String> {
    let d = millis(s)?;
    if (Duration::from_millis(1)..=Duration::from_secs(60)).contains(&d) {
        Ok(d)
    } else {
        Err(format!("'{s}' is outside 1ms..=60s"))
    }
}

/// Shortest paced interval: 100 000 requests a second.
pub const MIN_INTERVAL: Duration = Duration::from_micros(10);
/// Longest paced interval.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// A paced interval: a unit is required (`10ms`, `100us`, `1s`), 10 µs to
/// 1 hour.
pub fn interval(s: &str) -> Result<Duration, String> {
    if s.trim().chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!("'{s}' needs a unit: 10ms, 100us, 1s"));
    }
    let d = millis(s)?;
    if (MIN_INTERVAL..=MAX_INTERVAL).contains(&d) {
        Ok(d)
    } else {
        Err(format!("'{s}' is outside 10us..=1h"))
    }
}

/// A paced rate in requests per second: 1 every hour up to 100 000 a
/// second (the same range as `--interval`).
pub fn rate(s: &str) -> Result<f64, String> {
    let max = 1.0 / MIN_INTERVAL.as_secs_f64();
    let min = 1.0 / MAX_INTERVAL.as_secs_f64();
    match s.trim().parse::<f64>() {
        Ok(r) if (min..=max).contains(&r) => Ok(r),
        Ok(_) => Err(format!(
            "'{s}' is outside {min:.6}..={max} packets per second"
        )),
        Err(_) => Err(format!(
            "'{s}' is not a rate in packets per second (e.g. 100, 0.5)"
        )),
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
/// keeps it whole: `1s`, `250ms`, `500us`, `800ns`.
pub fn duration_text(d: Duration) -> String {
    match d.as_nanos() {
        n if n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
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
    fn parses_units_and_bare_numbers() {
        let (ms, secs) = (DefaultUnit::Millis, DefaultUnit::Seconds);
        for (text, unit, want) in [
            ("1ms", ms, Duration::from_millis(1)),
            ("250us", ms, Duration::from_micros(250)),
            ("250µs", ms, Duration::from_micros(250)),
            ("1.5", ms, Duration::from_micros(1500)),
            ("800ns", ms, Duration::from_nanos(800)),
            ("2", secs, Duration::from_secs(2)),
            ("1 min", secs, Duration::from_secs(60)),
            ("1 s", ms, Duration::from_secs(1)),
        ] {
            assert_eq!(parse_duration(text, unit), Ok(want), "{text}");
        }
    }

    #[test]
    fn rejects_garbage_with_a_reason() {
        assert!(
            parse_duration("fast", DefaultUnit::Millis)
                .unwrap_err()
                .contains("not a duration")
        );
        assert!(
            parse_duration("3 fortnights", DefaultUnit::Millis)
                .unwrap_err()
                .contains("unknown time unit")
        );
        assert!(parse_duration("-1ms", DefaultUnit::Millis).is_err());
    }

    #[test]
    fn formats_with_fitting_units() {
        let cases: [(String, &str); 18] = [
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
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }
}
