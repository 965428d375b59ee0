//! Class of service per leg: the DSCP and ECN each packet was sent with,
//! and what it carried on arrival, so a re-marked DSCP or a CE mark is
//! put on the leg where it happened.
//!
//! - **Forward** (request, client → reflector): sent with the client's
//!   `--dscp`/`--ecn`; what arrived is what the reflector reports in the
//!   STAMP Class of Service TLV (RFC 8972 §4.4: DSCP2 and ECN).
//! - **Backward** (reply, reflector → client): sent as the reflector says
//!   it marked it (DSCP1, or the received DSCP when its policy refused,
//!   and the ECN of draft-ietf-ippm-stamp-cos-ecn's EC1/RPE); what arrived
//!   is what this host's kernel read off the reply (`IP_RECVTOS`).
//!
//! A leg's figure that no packet reported is absent, never 0.

use serde::Serialize;

/// A DSCP codepoint (6 bits), named as RFC 4594/8622 name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dscp(pub u8);

/// The named codepoints, for parsing and display.
const DSCP_NAMES: &[(&str, u8)] = &[
    ("CS0", 0),
    ("LE", 1),
    ("CS1", 8),
    ("AF11", 10),
    ("AF12", 12),
    ("AF13", 14),
    ("CS2", 16),
    ("AF21", 18),
    ("AF22", 20),
    ("AF23", 22),
    ("CS3", 24),
    ("AF31", 26),
    ("AF32", 28),
    ("AF33", 30),
    ("CS4", 32),
    ("AF41", 34),
    ("AF42", 36),
    ("AF43", 38),
    ("CS5", 40),
    ("VA", 44),
    ("EF", 46),
    ("CS6", 48),
    ("CS7", 56),
];

impl Dscp {
    /// Its name (`EF`, `AF11`), when it has one.
    pub fn name(self) -> Option<&'static str> {
        DSCP_NAMES
            .iter()
            .find(|(_, v)| *v == self.0)
            .map(|(n, _)| *n)
    }
}

impl std::fmt::Display for Dscp {
    /// `EF`, or the number when the codepoint has no name.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "{}", self.0),
        }
    }
}

impl std::str::FromStr for Dscp {
    type Err = String;

    /// A name (`EF`, `af41`, `DF`/`BE` for 0) or a number 0..=63.
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if let Ok(n) = t.parse::<u8>() {
            return if n < 64 {
                Ok(Self(n))
            } else {
                Err(format!("DSCP {n} is outside 0..=63"))
            };
        }
        let upper = t.to_ascii_uppercase();
        if upper == "DF" || upper == "BE" {
            return Ok(Self(0));
        }
        DSCP_NAMES
            .iter()
            .find(|(n, _)| *n == upper)
            .map(|(_, v)| Self(*v))
            .ok_or_else(|| {
                format!("'{s}' is not a DSCP: a number 0..=63 or a name (EF, AF11..AF43, CS0..CS7, VA, LE, DF)")
            })
    }
}

/// An ECN codepoint (RFC 3168), as the two low bits of the TOS byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ecn {
    /// 00: not ECN-capable (`off`).
    #[default]
    NotEct,
    /// 01: ECN-capable, ECT(1).
    Ect1,
    /// 10: ECN-capable, ECT(0).
    Ect0,
    /// 11: congestion experienced.
    Ce,
}

impl Ecn {
    /// From the two low bits of a TOS byte.
    pub fn from_bits(bits: u8) -> Self {
        match bits & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The two bits.
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0,
            Ecn::Ect1 => 1,
            Ecn::Ect0 => 2,
            Ecn::Ce => 3,
        }
    }

    /// The name reports and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            Ecn::NotEct => "not-ect",
            Ecn::Ect1 => "ect1",
            Ecn::Ect0 => "ect0",
            Ecn::Ce => "ce",
        }
    }
}

impl std::fmt::Display for Ecn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `off` is how the option spells it, so a saved profile reads back.
        f.write_str(match self {
            Ecn::NotEct => "off",
            other => other.name(),
        })
    }
}

impl std::str::FromStr for Ecn {
    type Err = String;

    /// `ect0`, `ect1`, `ce` or `off` (`not-ect`).
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ect0" | "ect(0)" => Ok(Ecn::Ect0),
            "ect1" | "ect(1)" => Ok(Ecn::Ect1),
            "ce" => Ok(Ecn::Ce),
            "off" | "not-ect" | "none" => Ok(Ecn::NotEct),
            _ => Err(format!(
                "'{s}' is not an ECN setting: ect0, ect1, ce or off"
            )),
        }
    }
}

/// A TOS (IPv4) or Traffic Class (IPv6) byte: DSCP in the high six bits,
/// ECN in the low two.
pub fn tos(dscp: Dscp, ecn: Ecn) -> u8 {
    (dscp.0 << 2) | ecn.bits()
}

/// A TOS byte's DSCP.
pub fn dscp_of(tos: u8) -> Dscp {
    Dscp(tos >> 2)
}

/// What one round trip's packets carried, as far as it was reported:
/// TOS bytes, each with a bit in `known`. Small and `Copy`: it rides in
/// every [`Record`](super::Record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Marks {
    fwd_received: u8,
    rev_sent: u8,
    rev_received: u8,
    known: u8,
}

const FWD_RECEIVED: u8 = 1;
const REV_SENT_DSCP: u8 = 2;
const REV_SENT_ECN: u8 = 4;
const REV_RECEIVED: u8 = 8;

impl Marks {
    /// Nothing reported.
    pub const NONE: Self = Self {
        fwd_received: 0,
        rev_sent: 0,
        rev_received: 0,
        known: 0,
    };

    /// The request's TOS as the reflector received it (CoS TLV).
    #[must_use]
    pub fn with_fwd_received(mut self, tos: u8) -> Self {
        self.fwd_received = tos;
        self.known |= FWD_RECEIVED;
        self
    }

    /// The reply's DSCP and ECN as the reflector says it sent them (each
    /// `None` when it did not say).
    #[must_use]
    pub fn with_rev_sent(mut self, dscp: Option<Dscp>, ecn: Option<Ecn>) -> Self {
        if let Some(d) = dscp {
            self.rev_sent = (self.rev_sent & 3) | (d.0 << 2);
            self.known |= REV_SENT_DSCP;
        }
        if let Some(e) = ecn {
            self.rev_sent = (self.rev_sent & !3) | e.bits();
            self.known |= REV_SENT_ECN;
        }
        self
    }

    /// The reply's TOS as this host received it.
    #[must_use]
    pub fn with_rev_received(mut self, tos: u8) -> Self {
        self.rev_received = tos;
        self.known |= REV_RECEIVED;
        self
    }

    /// The request's TOS on arrival at the reflector, if reported.
    pub fn fwd_received(&self) -> Option<u8> {
        (self.known & FWD_RECEIVED != 0).then_some(self.fwd_received)
    }

    /// The reply's DSCP as sent, if the reflector said.
    pub fn rev_sent_dscp(&self) -> Option<Dscp> {
        (self.known & REV_SENT_DSCP != 0).then_some(dscp_of(self.rev_sent))
    }

    /// The reply's ECN as sent, if the reflector said.
    pub fn rev_sent_ecn(&self) -> Option<Ecn> {
        (self.known & REV_SENT_ECN != 0).then_some(Ecn::from_bits(self.rev_sent))
    }

    /// The reply's TOS on arrival here, if read.
    pub fn rev_received(&self) -> Option<u8> {
        (self.known & REV_RECEIVED != 0).then_some(self.rev_received)
    }

    /// Whether anything is known.
    pub fn is_empty(&self) -> bool {
        self.known == 0
    }
}

/// One leg's counts. Allocation-free.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Leg {
    /// Replies whose arrival marks on this leg were reported.
    reported: u64,
    /// Replies without them.
    not_reported: u64,
    /// Arrivals by DSCP and by ECN.
    dscp: [u64; 64],
    ecn: [u64; 4],
    /// Sent marks by DSCP and ECN (backward: as the reflector said).
    sent_dscp: [u64; 64],
    sent_ecn: [u64; 4],
    /// Arrivals whose DSCP differs from the one sent (both known).
    remarked: u64,
    /// Arrivals whose ECN differs from the one sent (both known), and of
    /// those, set to CE on the way (sent ECN-capable, arrived CE).
    ecn_changed: u64,
    ce_on_path: u64,
}

impl Default for Leg {
    fn default() -> Self {
        Self {
            reported: 0,
            not_reported: 0,
            dscp: [0; 64],
            ecn: [0; 4],
            sent_dscp: [0; 64],
            sent_ecn: [0; 4],
            remarked: 0,
            ecn_changed: 0,
            ce_on_path: 0,
        }
    }
}

impl Leg {
    fn record(&mut self, sent: (Option<Dscp>, Option<Ecn>), received: Option<u8>) {
        if let Some(d) = sent.0 {
            self.sent_dscp[usize::from(d.0 & 63)] += 1;
        }
        if let Some(e) = sent.1 {
            self.sent_ecn[usize::from(e.bits())] += 1;
        }
        let Some(tos) = received else {
            self.not_reported += 1;
            return;
        };
        self.reported += 1;
        let (dscp, ecn) = (dscp_of(tos), Ecn::from_bits(tos));
        self.dscp[usize::from(dscp.0)] += 1;
        self.ecn[usize::from(ecn.bits())] += 1;
        if sent.0.is_some_and(|d| d != dscp) {
            self.remarked += 1;
        }
        if let Some(e) = sent.1.filter(|&e| e != ecn) {
            self.ecn_changed += 1;
            if ecn == Ecn::Ce && matches!(e, Ecn::Ect0 | Ecn::Ect1) {
                self.ce_on_path += 1;
            }
        }
    }

    fn merge(&mut self, o: &Leg) {
        self.reported += o.reported;
        self.not_reported += o.not_reported;
        for (a, b) in self.dscp.iter_mut().zip(o.dscp) {
            *a += b;
        }
        for (a, b) in self.ecn.iter_mut().zip(o.ecn) {
            *a += b;
        }
        for (a, b) in self.sent_dscp.iter_mut().zip(o.sent_dscp) {
            *a += b;
        }
        for (a, b) in self.sent_ecn.iter_mut().zip(o.sent_ecn) {
            *a += b;
        }
        self.remarked += o.remarked;
        self.ecn_changed += o.ecn_changed;
        self.ce_on_path += o.ce_on_path;
    }

    fn figures(&self) -> LegFigures {
        let counts = |a: &[u64; 64]| -> Vec<DscpCount> {
            a.iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(d, n)| DscpCount::new(Dscp(d as u8), *n))
                .collect()
        };
        let ecn = |a: &[u64; 4]| EcnCounts {
            not_ect: a[0],
            ect1: a[1],
            ect0: a[2],
            ce: a[3],
        };
        let any = |a: &[u64; 4]| a.iter().any(|n| *n > 0);
        LegFigures {
            dscp_sent: counts(&self.sent_dscp),
            ecn_sent: any(&self.sent_ecn).then(|| ecn(&self.sent_ecn)),
            reported: self.reported,
            not_reported: self.not_reported,
            dscp_received: counts(&self.dscp),
            remarked: (self.reported > 0 && self.sent_dscp.iter().any(|n| *n > 0))
                .then_some(self.remarked),
            ecn_received: (self.reported > 0).then(|| ecn(&self.ecn)),
            ce: (self.reported > 0).then_some(self.ecn[3]),
            ce_on_path: (self.reported > 0 && any(&self.sent_ecn)).then_some(self.ce_on_path),
            ecn_changed: (self.reported > 0 && any(&self.sent_ecn)).then_some(self.ecn_changed),
        }
    }
}

/// Class of service per leg, over a run's replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosStats {
    /// What the client marks its requests with (TOS byte).
    sent: u8,
    forward: Box<Leg>,
    backward: Box<Leg>,
}

impl CosStats {
    /// For a run whose requests leave with TOS byte `sent`.
    pub fn new(sent: u8) -> Self {
        Self {
            sent,
            forward: Box::default(),
            backward: Box::default(),
        }
    }

    /// The requests' TOS byte.
    pub fn sent(&self) -> u8 {
        self.sent
    }

    /// One reply's marks.
    #[inline]
    pub fn record(&mut self, m: &Marks) {
        let sent = (Some(dscp_of(self.sent)), Some(Ecn::from_bits(self.sent)));
        self.forward.record(sent, m.fwd_received());
        let back = (m.rev_sent_dscp(), m.rev_sent_ecn());
        self.backward.record(back, m.rev_received());
    }

    /// Adds another run's counts.
    pub fn merge(&mut self, o: &CosStats) {
        self.forward.merge(&o.forward);
        self.backward.merge(&o.backward);
    }

    /// The same setup, no counts.
    pub fn emptied(&self) -> Self {
        Self::new(self.sent)
    }

    /// The figures a report shows.
    pub fn figures(&self) -> CosFigures {
        CosFigures {
            forward: self.forward.figures(),
            backward: self.backward.figures(),
        }
    }
}

/// One DSCP and how many packets carried it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DscpCount {
    /// The codepoint, 0..=63.
    pub dscp: u8,
    /// Its name (`EF`), or `null`.
    pub name: Option<&'static str>,
    /// Packets.
    pub count: u64,
}

impl DscpCount {
    fn new(d: Dscp, count: u64) -> Self {
        Self {
            dscp: d.0,
            name: d.name(),
            count,
        }
    }
}

/// Packets by ECN codepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EcnCounts {
    /// Not ECN-capable.
    pub not_ect: u64,
    /// ECT(1).
    pub ect1: u64,
    /// ECT(0).
    pub ect0: u64,
    /// Congestion experienced.
    pub ce: u64,
}

/// One leg's figures (JSON `class_of_service.forward`, `.backward`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LegFigures {
    /// DSCPs the packets were sent with (backward: as the reflector said;
    /// empty when nobody said).
    pub dscp_sent: Vec<DscpCount>,
    /// ECN codepoints sent (`null`: not reported).
    pub ecn_sent: Option<EcnCounts>,
    /// Replies whose arrival marks on this leg were reported.
    pub reported: u64,
    /// Replies without them (no CoS TLV back, or no TOS read).
    pub not_reported: u64,
    /// DSCPs on arrival.
    pub dscp_received: Vec<DscpCount>,
    /// Arrivals with another DSCP than sent (`null`: cannot be told).
    pub remarked: Option<u64>,
    /// ECN codepoints on arrival (`null`: none reported).
    pub ecn_received: Option<EcnCounts>,
    /// Arrivals marked CE (`null`: none reported).
    pub ce: Option<u64>,
    /// Of those, sent ECN-capable: CE set on this leg's path.
    pub ce_on_path: Option<u64>,
    /// Arrivals with another ECN codepoint than sent (CE set, or the
    /// field bleached).
    pub ecn_changed: Option<u64>,
}

/// Class of service per leg (JSON `class_of_service`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CosFigures {
    /// The request, client → reflector.
    pub forward: LegFigures,
    /// The reply, reflector → client.
    pub backward: LegFigures,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dscp_names_and_numbers_parse_and_print() {
        assert_eq!("EF".parse::<Dscp>(), Ok(Dscp(46)));
        assert_eq!("af41".parse::<Dscp>(), Ok(Dscp(34)));
        assert_eq!("cs1".parse::<Dscp>(), Ok(Dscp(8)));
        assert_eq!("df".parse::<Dscp>(), Ok(Dscp(0)));
        assert_eq!("5".parse::<Dscp>(), Ok(Dscp(5)));
        assert!("64".parse::<Dscp>().unwrap_err().contains("0..=63"));
        assert!("XF".parse::<Dscp>().unwrap_err().contains("not a DSCP"));
        assert_eq!(Dscp(46).to_string(), "EF");
        assert_eq!(Dscp(5).to_string(), "5");
        for (name, v) in DSCP_NAMES {
            assert_eq!(name.parse::<Dscp>(), Ok(Dscp(*v)));
            assert_eq!(Dscp(*v).to_string(), *name);
        }
    }

    #[test]
    fn ecn_settings_round_trip() {
        for e in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            assert_eq!(e.to_string().parse::<Ecn>(), Ok(e));
            assert_eq!(Ecn::from_bits(e.bits()), e);
        }
        assert_eq!(tos(Dscp(46), Ecn::Ect0), 0xba);
        assert!("ect2".parse::<Ecn>().is_err());
    }

    /// The forward leg re-marked EF to AF11 on some packets, the backward
    /// leg set CE on ECT(0) replies: each counted on its own leg, and a
    /// reply that reported nothing is "not reported", never 0.
    #[test]
    fn each_leg_counts_what_it_did() {
        let mut s = CosStats::new(tos(Dscp(46), Ecn::Ect0));
        let back = |m: Marks| m.with_rev_sent(Some(Dscp(46)), Some(Ecn::Ect0));
        for _ in 0..3 {
            s.record(
                &back(Marks::NONE.with_fwd_received(tos(Dscp(46), Ecn::Ect0)))
                    .with_rev_received(tos(Dscp(46), Ecn::Ce)),
            );
        }
        s.record(
            &back(Marks::NONE.with_fwd_received(tos(Dscp(10), Ecn::Ect0)))
                .with_rev_received(tos(Dscp(46), Ecn::Ect0)),
        );
        s.record(&Marks::NONE);
        let f = s.figures();
        assert_eq!((f.forward.reported, f.forward.not_reported), (4, 1));
        assert_eq!(f.forward.remarked, Some(1));
        assert_eq!(f.forward.ce, Some(0));
        assert_eq!(f.forward.dscp_received.len(), 2);
        assert_eq!(f.backward.remarked, Some(0));
        assert_eq!((f.backward.ce, f.backward.ce_on_path), (Some(3), Some(3)));
        assert_eq!(f.backward.dscp_sent[0].count, 4, "as the reflector said");
        let none = CosStats::new(0).figures();
        assert_eq!((none.forward.ce, none.forward.remarked), (None, None));
        assert!(none.backward.dscp_sent.is_empty());
    }

    #[test]
    fn marks_keep_each_field_apart() {
        let m = Marks::NONE
            .with_rev_sent(None, Some(Ecn::Ect1))
            .with_rev_received(0xff);
        assert_eq!(m.rev_sent_dscp(), None);
        assert_eq!(m.rev_sent_ecn(), Some(Ecn::Ect1));
        assert_eq!(m.rev_received(), Some(0xff));
        assert_eq!(m.fwd_received(), None);
        assert!(Marks::NONE.is_empty());
    }
}
