//! `--tlv`: the STAMP TLVs a session-sender asks for, parsed and printed.

/// The TLVs a session-sender asks for (`--tlv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StampTlvs {
    /// Class of Service.
    pub cos: bool,
    /// Follow-Up Telemetry.
    pub follow_up: bool,
    /// Timestamp Information.
    pub timestamp_info: bool,
    /// Location.
    pub location: bool,
    /// Direct Measurement.
    pub direct: bool,
    /// Extra Padding, up to `--size`.
    pub padding: bool,
    /// The responder's name (a private-use TLV Synapse's reflector
    /// answers): asked by a multicast run, never by `--tlv`.
    pub name: bool,
}

const TLV_NAMES: [&str; 6] = [
    "cos",
    "follow-up",
    "timestamp-info",
    "location",
    "direct-measurement",
    "padding",
];

impl StampTlvs {
    /// Every TLV Synapse knows.
    pub const ALL: Self = Self {
        cos: true,
        follow_up: true,
        timestamp_info: true,
        location: true,
        direct: true,
        padding: true,
        name: false,
    };

    /// The responder's name alone (what a multicast run adds).
    pub const NAME: Self = Self {
        cos: false,
        follow_up: false,
        timestamp_info: false,
        location: false,
        direct: false,
        padding: false,
        name: true,
    };

    /// In [`TLV_NAMES`] order, the name (no option's) last.
    fn flags(&self) -> [bool; 7] {
        [
            self.cos,
            self.follow_up,
            self.timestamp_info,
            self.location,
            self.direct,
            self.padding,
            self.name,
        ]
    }

    fn flag_mut(&mut self, i: usize) -> &mut bool {
        match i {
            0 => &mut self.cos,
            1 => &mut self.follow_up,
            2 => &mut self.timestamp_info,
            3 => &mut self.location,
            4 => &mut self.direct,
            5 => &mut self.padding,
            _ => &mut self.name,
        }
    }

    /// Whether none is asked for.
    pub fn is_empty(&self) -> bool {
        !self.flags().iter().any(|&f| f)
    }

    /// The same, and one more set.
    #[must_use]
    pub fn union(mut self, other: Self) -> Self {
        for (i, f) in other.flags().iter().enumerate() {
            *self.flag_mut(i) |= f;
        }
        self
    }
}

impl std::fmt::Display for StampTlvs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = TLV_NAMES
            .iter()
            .zip(self.flags())
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect();
        f.write_str(&names.join(","))
    }
}

impl std::str::FromStr for StampTlvs {
    type Err = String;

    /// A comma-separated list of `cos`, `follow-up`, `timestamp-info`,
    /// `location`, `direct-measurement`, `padding`, or `all`.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut set = Self::default();
        for word in s.split(',').map(str::trim) {
            if word.eq_ignore_ascii_case("all") {
                set = set.union(Self::ALL);
                continue;
            }
            let i = TLV_NAMES
                .iter()
                .position(|n| {
                    n.eq_ignore_ascii_case(word)
                        || (*n == "direct-measurement" && word.eq_ignore_ascii_case("direct"))
                })
                .ok_or_else(|| {
                    format!(
                        "'{word}' is not a STAMP TLV Synapse asks for ({}, or all)",
                        TLV_NAMES.join(", ")
                    )
                })?;
            *set.flag_mut(i) = true;
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlv_lists_parse_and_print() {
        let all: StampTlvs = "all".parse().unwrap();
        assert_eq!(all, StampTlvs::ALL);
        assert_eq!(all.to_string().parse::<StampTlvs>(), Ok(all));
        let some: StampTlvs = "cos, direct".parse().unwrap();
        assert!(some.cos && some.direct && !some.follow_up);
        assert_eq!(some.to_string(), "cos,direct-measurement");
        assert!(
            "cos,bogus"
                .parse::<StampTlvs>()
                .unwrap_err()
                .contains("'bogus'")
        );
    }
}
