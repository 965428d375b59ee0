//! STAMP's eight-octet timestamps (RFC 8762 §4.2.1) in either of their
//! formats: NTP (RFC 5905: seconds since 1900 and a binary fraction) or
//! PTPv2 truncated (seconds since 1970 and nanoseconds). The Z flag of the
//! error estimate beside a timestamp says which.
//!
//! Both carry 32-bit seconds, so both wrap: NTP in February 2036, PTP in
//! 2106. A timestamp is read in the era that puts it nearest a reference
//! time the reader knows (RFC 5905 §6), such as its own send time: within
//! 68 years of the reference, it is read right on either side of a wrap.
//!
//! PTP timestamps carry `CLOCK_REALTIME` (UTC) seconds, not TAI, as
//! stamp-suite's do: a peer that sends TAI reads 37 s ahead.

use TimeFormat as Format;

/// Seconds from the NTP era (1900-01-01) to the Unix epoch.
const NTP_UNIX_OFFSET: i128 = 2_208_988_800;
/// One 32-bit era of seconds.
const ERA: i128 = 1 << 32;
/// The reference [`WireTime::to_unix_ns`] reads near: 2^31 s after the
/// Unix epoch (January 2038), so every time from 1970 to 2106 reads right.
pub const PIVOT_UNIX_NS: u64 = (1 << 31) * 1_000_000_000;

/// Which format a STAMP timestamp is in: the Z flag (RFC 8762 §4.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeFormat {
    /// NTP 64-bit (Z = 0), the default.
    #[default]
    Ntp,
    /// PTPv2 truncated (Z = 1): 32-bit seconds, 32-bit nanoseconds.
    Ptp,
}

impl TimeFormat {
    /// The format the Z flag names.
    pub fn from_z(z: bool) -> Self {
        if z { Self::Ptp } else { Self::Ntp }
    }

    /// Its Z flag.
    pub fn z(self) -> bool {
        self == Self::Ptp
    }

    /// `ntp` or `ptp`, as the options spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ntp => "ntp",
            Self::Ptp => "ptp",
        }
    }
}

impl std::fmt::Display for TimeFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for TimeFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "ntp" => Ok(Self::Ntp),
            "ptp" => Ok(Self::Ptp),
            _ => Err(format!(
                "'{s}' is not a STAMP timestamp format (ntp or ptp)"
            )),
        }
    }
}

/// A timestamp's eight octets as they are on the wire: 32-bit seconds and
/// 32 bits below them (a binary fraction for NTP, nanoseconds for PTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WireTime {
    /// Whole seconds (since 1900 for NTP, 1970 for PTP), modulo 2^32.
    pub secs: u32,
    /// NTP: fraction of a second in units of 2^-32 s; PTP: nanoseconds.
    pub frac: u32,
}

impl WireTime {
    /// `CLOCK_REALTIME` nanoseconds since the Unix epoch in `format`.
    pub fn encode(unix_ns: u64, format: TimeFormat) -> Self {
        let sub = unix_ns % 1_000_000_000;
        let secs = i128::from(unix_ns / 1_000_000_000);
        match format {
            Format::Ntp => Self {
                secs: (secs + NTP_UNIX_OFFSET) as u32,
                // Round to the nearest 2^-32 s so a round trip loses < 1 ns.
                frac: ((sub << 32).wrapping_add(500_000_000) / 1_000_000_000) as u32,
            },
            Format::Ptp => Self {
                secs: secs as u32,
                frac: sub as u32,
            },
        }
    }

    /// Nanoseconds since the Unix epoch, in the era nearest `near_unix_ns`
    /// (RFC 5905 §6). `None`: PTP nanoseconds of a second or more, or a
    /// time before 1970.
    pub fn decode(self, format: TimeFormat, near_unix_ns: u64) -> Option<u64> {
        let (secs, sub) = match format {
            Format::Ntp => (
                i128::from(self.secs) - NTP_UNIX_OFFSET,
                (u64::from(self.frac) * 1_000_000_000 + (1 << 31)) >> 32,
            ),
            Format::Ptp if self.frac < 1_000_000_000 => {
                (i128::from(self.secs), u64::from(self.frac))
            }
            Format::Ptp => return None,
        };
        let reference = i128::from(near_unix_ns / 1_000_000_000);
        // The whole-era shift that brings `secs` within half an era.
        let delta = (secs - reference + ERA / 2).rem_euclid(ERA) - ERA / 2;
        let ns = (reference + delta) * 1_000_000_000 + i128::from(sub);
        u64::try_from(ns).ok()
    }

    /// NTP format from nanoseconds since the Unix epoch.
    pub fn from_unix_ns(ns: u64) -> Self {
        Self::encode(ns, TimeFormat::Ntp)
    }

    /// An NTP timestamp as nanoseconds since the Unix epoch, read in the
    /// era that puts it between 1970 and 2106 (0 if it cannot be).
    pub fn to_unix_ns(self) -> u64 {
        self.decode(TimeFormat::Ntp, PIVOT_UNIX_NS).unwrap_or(0)
    }

    pub(super) fn write(self, b: &mut [u8]) {
        b[..4].copy_from_slice(&self.secs.to_be_bytes());
        b[4..8].copy_from_slice(&self.frac.to_be_bytes());
    }

    pub(super) fn read(b: &[u8]) -> Self {
        Self {
            secs: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            frac: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2036-02-07 06:28:16 UTC: NTP's seconds wrap from 2^32 − 1 to 0.
    const NTP_WRAP_UNIX_S: u64 = (1 << 32) - 2_208_988_800;

    #[test]
    fn ntp_time_round_trips_unix_nanoseconds() {
        assert_eq!(
            WireTime::from_unix_ns(0),
            WireTime {
                secs: 2_208_988_800,
                frac: 0
            }
        );
        for ns in [0u64, 1, 999_999_999, 1_795_171_815_123_456_789] {
            let back = WireTime::from_unix_ns(ns).to_unix_ns();
            assert!(back.abs_diff(ns) <= 1, "{ns} → {back}");
        }
        let half = WireTime {
            secs: 2_208_988_800,
            frac: 0x8000_0000,
        };
        assert_eq!(half.to_unix_ns(), 500_000_000);
    }

    #[test]
    fn ptp_timestamps_are_seconds_and_nanoseconds_since_1970() {
        let t = WireTime::encode(1_700_000_000_123_456_789, TimeFormat::Ptp);
        assert_eq!((t.secs, t.frac), (1_700_000_000, 123_456_789));
        let now = 1_700_000_000_000_000_000;
        assert_eq!(
            t.decode(TimeFormat::Ptp, now),
            Some(1_700_000_000_123_456_789)
        );
        // Read as NTP it is 1953 (a 1900-based 1.7e9 s): 70 years off.
        let wrong = t.decode(TimeFormat::Ntp, now).unwrap_or(0);
        assert!(wrong.abs_diff(now) > 60 * 365 * 86_400 * 1_000_000_000);
        let bad = WireTime {
            secs: 1,
            frac: 1_000_000_000,
        };
        assert_eq!(bad.decode(TimeFormat::Ptp, now), None, "not a nanosecond");
    }

    #[test]
    fn ntp_timestamps_read_right_across_the_2036_wrap() {
        for format in [TimeFormat::Ntp, TimeFormat::Ptp] {
            for offset_s in [-3i64, -1, 0, 1, 5, 86_400] {
                let s = (NTP_WRAP_UNIX_S as i64 + offset_s) as u64;
                let ns = s * 1_000_000_000 + 250_000_000;
                let wire = WireTime::encode(ns, format);
                for near_s in [s - 2, s, s + 2, NTP_WRAP_UNIX_S - 10, NTP_WRAP_UNIX_S + 10] {
                    let got = wire.decode(format, near_s * 1_000_000_000).unwrap();
                    assert!(
                        got.abs_diff(ns) <= 1,
                        "{format:?} {offset_s}s near {near_s}"
                    );
                }
                if format == TimeFormat::Ntp {
                    assert_eq!(
                        wire.secs,
                        ((s as i64 + 2_208_988_800) as u64 & 0xffff_ffff) as u32
                    );
                    assert!(wire.to_unix_ns().abs_diff(ns) <= 1, "pivot reads era 1");
                }
            }
        }
        // A request sent just before the wrap and answered just after: the
        // delay between them is what it was, not −136 years.
        let t1 = NTP_WRAP_UNIX_S * 1_000_000_000 - 30_000;
        let t2 = WireTime::from_unix_ns(t1 + 50_000);
        assert_eq!(t2.secs, 0, "the seconds wrapped");
        assert_eq!(t2.decode(TimeFormat::Ntp, t1).unwrap() - t1, 50_000);
    }

    #[test]
    fn formats_parse_and_name_their_flag() {
        assert_eq!("PTP".parse::<TimeFormat>(), Ok(TimeFormat::Ptp));
        assert_eq!("ntp".parse::<TimeFormat>(), Ok(TimeFormat::Ntp));
        assert!(
            "tai"
                .parse::<TimeFormat>()
                .unwrap_err()
                .contains("ntp or ptp")
        );
        assert!(TimeFormat::Ptp.z() && !TimeFormat::Ntp.z());
        assert_eq!(TimeFormat::from_z(true), TimeFormat::Ptp);
    }
}
