//! The error estimate every STAMP timestamp travels with (RFC 8762
//! §4.2.1, encoded as RFC 4656 §4.1.2 says): the S bit (the clock is
//! synchronised to an external source), the Z bit (the timestamps' format)
//! and the error, `multiplier × 2^(scale − 32)` seconds.
//!
//! What Synapse sends comes from its clock's state as the kernel keeps it
//! (`protocol/clock_state.rs`); a clock that is not synchronised sends S = 0 and the
//! field's largest error, since nothing bounds its distance from UTC.
//! Read from a peer, S = 0 means the same whatever the multiplier says
//! (some senders put a tiny error beside S = 0).

use super::wire_time::TimeFormat;

/// The 16-bit error estimate, unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorEstimate {
    /// The clock is synchronised to UTC.
    pub synchronized: bool,
    /// Timestamps are in PTP rather than NTP format (the Z bit).
    pub ptp: bool,
    /// Power of two, 0..=63.
    pub scale: u8,
    /// Must not be zero.
    pub multiplier: u8,
}

impl ErrorEstimate {
    /// A clock that is not synchronised: S = 0 and the largest error the
    /// field holds (255 × 2^31 s), NTP format.
    pub const UNSYNCHRONIZED: Self = Self {
        synchronized: false,
        ptp: false,
        scale: 63,
        multiplier: 255,
    };

    /// S set, with the smallest scale whose multiplier holds `error_ns`
    /// (rounded up, so the estimate is never below the error), NTP format.
    pub fn synchronized_within_ns(error_ns: u64) -> Self {
        let seconds = (error_ns.max(1) as f64) / 1e9;
        for scale in 0u8..=63 {
            let multiplier = (seconds * 2f64.powi(32 - i32::from(scale))).ceil();
            if multiplier <= 255.0 {
                return Self {
                    synchronized: true,
                    ptp: false,
                    scale,
                    multiplier: multiplier.max(1.0) as u8,
                };
            }
        }
        Self {
            synchronized: true,
            ..Self::UNSYNCHRONIZED
        }
    }

    /// The same estimate, its Z bit naming `format`.
    #[must_use]
    pub fn with_format(self, format: TimeFormat) -> Self {
        Self {
            ptp: format.z(),
            ..self
        }
    }

    /// The timestamps' format, as the Z bit says.
    pub fn format(self) -> TimeFormat {
        TimeFormat::from_z(self.ptp)
    }

    /// Packs into the 16-bit wire form.
    pub fn to_bits(self) -> u16 {
        (u16::from(self.synchronized) << 15)
            | (u16::from(self.ptp) << 14)
            | (u16::from(self.scale & 0x3f) << 8)
            | u16::from(self.multiplier)
    }

    /// Unpacks the 16-bit wire form.
    pub fn from_bits(bits: u16) -> Self {
        Self {
            synchronized: bits & 0x8000 != 0,
            ptp: bits & 0x4000 != 0,
            scale: ((bits >> 8) & 0x3f) as u8,
            multiplier: (bits & 0xff) as u8,
        }
    }

    /// The field's value in nanoseconds, whatever S says.
    pub fn nanos(self) -> f64 {
        f64::from(self.multiplier) * 2f64.powi(i32::from(self.scale) - 32) * 1e9
    }

    /// How far the clock may be from UTC, ns: the field's value when S is
    /// set, `None` (no bound) when it is not.
    pub fn bound_ns(self) -> Option<f64> {
        self.synchronized.then(|| self.nanos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synchronised_estimates_hold_the_error_they_are_given() {
        for ns in [1u64, 16_000, 1_000_000, 16_000_000_000] {
            let e = ErrorEstimate::synchronized_within_ns(ns);
            assert!(e.synchronized && e.multiplier > 0);
            let got = e.nanos();
            assert!(
                got >= ns as f64 && got < ns as f64 * 1.01 + 1.0,
                "{ns} → {got}"
            );
            assert_eq!(ErrorEstimate::from_bits(e.to_bits()), e);
            assert_eq!(e.bound_ns(), Some(got));
        }
    }

    #[test]
    fn an_unsynchronised_clock_claims_no_bound_and_sends_the_largest_error() {
        let u = ErrorEstimate::UNSYNCHRONIZED;
        assert_eq!(u.to_bits(), 0x3fff);
        assert!(u.nanos() > 5e20, "255 × 2^31 s: {}", u.nanos());
        assert_eq!(u.bound_ns(), None);
        // stamp-suite's unsynchronised reflector sends S=0, scale 0,
        // multiplier 1 (0.23 ns): still no bound.
        assert_eq!(ErrorEstimate::from_bits(0x0001).bound_ns(), None);
    }

    #[test]
    fn the_z_bit_names_the_format() {
        let e = ErrorEstimate::synchronized_within_ns(1_000).with_format(TimeFormat::Ptp);
        assert_eq!(e.to_bits() & 0x4000, 0x4000);
        assert_eq!(
            ErrorEstimate::from_bits(e.to_bits()).format(),
            TimeFormat::Ptp
        );
        assert_eq!(e.with_format(TimeFormat::Ntp).format(), TimeFormat::Ntp);
        for bits in [0x0001u16, 0x8102, 0x4C01, 0xFFFF] {
            assert_eq!(ErrorEstimate::from_bits(bits).to_bits(), bits);
        }
    }
}
