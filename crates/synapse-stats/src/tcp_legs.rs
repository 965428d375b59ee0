//! Which leg a TCP reply's lateness points to. On TCP a lost segment is
//! resent by its sender's kernel after a retransmission timeout, so loss
//! shows as a reply late by about that timeout, not as a lost request.
//! The client sees its own resends (`TCP_INFO`), the DSACKs that say the
//! far side already had what it resent, and when the far kernel's ACK of
//! the request came back (`SOF_TIMESTAMPING_TX_ACK`); from those facts,
//! gathered by the engine after a slow reply, this puts each slow reply
//! down to what was measured. It never guesses from the delay alone.

use serde::Serialize;

/// Linux's smallest retransmission timeout (`TCP_RTO_MIN`, 200 ms): a
/// segment resent by a Linux kernel, on either side, leaves at least this
/// long after the original did.
pub const RTO_MIN_NS: u64 = 200_000_000;

/// When the far kernel's ACK of the request came back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AckSeen {
    /// On its own, before the reply, less than [`RTO_MIN_NS`] after the
    /// request left: the request reached the far kernel at once.
    Prompt,
    /// Only with the reply (no segment without data came before it).
    WithReply,
    /// Not stamped, or on its own but itself late.
    #[default]
    Unknown,
}

impl AckSeen {
    /// From a transaction's points: whether the ACK rode on the reply, and
    /// how long after the request left it came (ns).
    pub fn of(ack_with_reply: Option<bool>, ack_after_ns: Option<u64>) -> Self {
        match (ack_with_reply, ack_after_ns) {
            (Some(true), _) => AckSeen::WithReply,
            (Some(false), Some(after)) if after < RTO_MIN_NS => AckSeen::Prompt,
            _ => AckSeen::Unknown,
        }
    }
}

/// What the client knows of one slow reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlowReply {
    /// How much slower than the run's fastest round trip it was, ns.
    pub extra_ns: u64,
    /// Segments this client resent meanwhile (`tcpi_total_retrans` grew).
    pub resent: u64,
    /// DSACKs that came back for them (`tcpi_dsack_dups` grew).
    pub dsack: u64,
    /// The far kernel's ACK of the request.
    pub ack: AckSeen,
}

/// What a slow reply's facts point to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// This client resent the request and no DSACK said the far side had
    /// it: the forward leg (client → server) lost it.
    Forward,
    /// This client resent, and a DSACK said the far side already had it:
    /// what the far side sent back was lost or held on the reverse leg.
    ReverseDsack,
    /// Not resent by this client (so the request arrived the first time),
    /// and the far kernel's ACK came only with the reply, a timeout late:
    /// what the far kernel sent first did not arrive; it resent (reverse
    /// leg).
    ReverseFar,
    /// Not resent here, the request ACKed promptly, the reply a timeout
    /// later: the far application held it, or the reply alone was lost on
    /// the reverse leg and resent.
    AfterAck,
    /// Not resent here, a timeout late, the ACK not stamped: the request
    /// arrived the first time; the time went on the far side or the way
    /// back.
    FarSide,
    /// Slow, but not by a timeout, and nothing resent: not a resend.
    NotResend,
}

/// Puts one slow reply down to what its facts point to.
pub fn classify(s: &SlowReply) -> Cause {
    if s.resent > 0 {
        return if s.dsack > 0 {
            Cause::ReverseDsack
        } else {
            Cause::Forward
        };
    }
    if s.extra_ns < RTO_MIN_NS {
        return Cause::NotResend;
    }
    match s.ack {
        AckSeen::WithReply => Cause::ReverseFar,
        AckSeen::Prompt => Cause::AfterAck,
        AckSeen::Unknown => Cause::FarSide,
    }
}

/// Slow replies by what they point to (measured ones only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Resends {
    /// Requests this client resent that the far side had not got: the
    /// forward leg.
    pub forward: u64,
    /// Requests this client resent that the far side already had (DSACK):
    /// the reverse leg.
    pub reverse: u64,
    /// Replies a timeout late, not resent here, the far kernel's ACK only
    /// with them: resent by the far kernel, the reverse leg.
    pub far_resent: u64,
    /// Replies a timeout late after a prompt ACK of the request: the far
    /// application, or the reply alone lost on the reverse leg.
    pub after_ack: u64,
    /// Replies a timeout late, not resent here, the ACK not stamped.
    pub far_side: u64,
}

impl Resends {
    /// Counts one slow reply.
    pub fn record(&mut self, s: &SlowReply) {
        match classify(s) {
            Cause::Forward => self.forward += 1,
            Cause::ReverseDsack => self.reverse += 1,
            Cause::ReverseFar => self.far_resent += 1,
            Cause::AfterAck => self.after_ack += 1,
            Cause::FarSide => self.far_side += 1,
            Cause::NotResend => {}
        }
    }

    /// Replies a resend made late on the reverse leg, whoever resent.
    pub fn reverse_leg(&self) -> u64 {
        self.reverse + self.far_resent
    }

    /// Every reply late by about a retransmission timeout.
    pub fn late_replies(&self) -> u64 {
        self.forward + self.reverse_leg() + self.after_ack + self.far_side
    }

    /// The leg the resends point to: `forward`, `reverse`, `both`, or
    /// `none` (no resend placed on a leg).
    pub fn leg(&self) -> &'static str {
        match (self.forward > 0, self.reverse_leg() > 0) {
            (true, false) => "forward",
            (false, true) => "reverse",
            (true, true) => "both",
            (false, false) => "none",
        }
    }

    /// What the reports say of them, or nothing when no reply was late by
    /// about a retransmission timeout.
    pub fn summary(&self) -> Option<String> {
        let late = self.late_replies();
        if late == 0 {
            return None;
        }
        let on = match self.leg() {
            "forward" => "on the forward leg (client → server)".to_string(),
            "reverse" => "on the reverse leg (server → client)".to_string(),
            "both" => format!(
                "on both legs ({} forward, {} reverse)",
                self.forward,
                self.reverse_leg()
            ),
            _ => "on neither leg as measured".to_string(),
        };
        let mut parts = Vec::new();
        for (n, what) in [
            (
                self.forward,
                "Requests resent by this client that the server had not got (forward leg)",
            ),
            (
                self.reverse,
                "Requests resent by this client that the server already had (its DSACK said so: the reply was lost on the way back)",
            ),
            (
                self.far_resent,
                "Replies the server resent (not resent here; its ACK of the request came only with the reply, ≥ 200 ms late: reverse leg)",
            ),
            (
                self.after_ack,
                "Replies ≥ 200 ms late after a prompt ACK of the request (the server application held them, or the reply alone was lost on the way back)",
            ),
            (
                self.far_side,
                "Replies ≥ 200 ms late without a resend here, ACK not stamped (the request arrived the first time; the time went on the far side or the way back)",
            ),
        ] {
            if n > 0 {
                parts.push(format!("{what}: {n}"));
            }
        }
        Some(format!(
            "retransmissions showed as latency, not loss: replies late by about a retransmission timeout ({late}), {on}. {}",
            parts.join("; ")
        ))
    }
}

/// Resends as the reports give them: the counts, the leg, the sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResendReport {
    /// Slow replies by what they point to.
    #[serde(flatten)]
    pub counts: Resends,
    /// `forward`, `reverse`, `both` or `none`.
    pub leg: &'static str,
    /// What the text report says, when any reply was late by a resend.
    pub summary: Option<String>,
}

impl From<Resends> for ResendReport {
    fn from(counts: Resends) -> Self {
        Self {
            counts,
            leg: counts.leg(),
            summary: counts.summary(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LATE: u64 = RTO_MIN_NS + 10_000_000;

    fn slow(extra_ns: u64, resent: u64, dsack: u64, ack: AckSeen) -> SlowReply {
        SlowReply {
            extra_ns,
            resent,
            dsack,
            ack,
        }
    }

    /// Each slow reply against the cause it must be given.
    fn check(cases: &[(SlowReply, Cause)]) {
        for (reply, want) in cases {
            assert_eq!(classify(reply), *want, "{reply:?}");
        }
    }

    #[test]
    fn a_resend_here_is_the_forward_leg_unless_a_dsack_says_it_arrived() {
        check(&[
            (slow(LATE, 1, 0, AckSeen::WithReply), Cause::Forward),
            (slow(LATE, 1, 1, AckSeen::Prompt), Cause::ReverseDsack),
            // The resend is the evidence, whatever the delay.
            (slow(5_000_000, 2, 0, AckSeen::Unknown), Cause::Forward),
        ]);
    }

    #[test]
    fn without_a_resend_here_the_ack_stamp_tells_the_far_side_cases_apart() {
        check(&[
            (slow(LATE, 0, 0, AckSeen::WithReply), Cause::ReverseFar),
            (slow(LATE, 0, 0, AckSeen::Prompt), Cause::AfterAck),
            (slow(LATE, 0, 0, AckSeen::Unknown), Cause::FarSide),
            // Slow, but less than any retransmission timeout: not a resend.
            (
                slow(RTO_MIN_NS - 1, 0, 0, AckSeen::WithReply),
                Cause::NotResend,
            ),
        ]);
    }

    #[test]
    fn an_ack_is_prompt_only_on_its_own_and_within_the_smallest_timeout() {
        assert_eq!(AckSeen::of(Some(true), Some(1_000)), AckSeen::WithReply);
        assert_eq!(AckSeen::of(Some(false), Some(1_000_000)), AckSeen::Prompt);
        assert_eq!(AckSeen::of(Some(false), Some(RTO_MIN_NS)), AckSeen::Unknown);
        assert_eq!(AckSeen::of(Some(false), None), AckSeen::Unknown);
        assert_eq!(AckSeen::of(None, Some(1_000)), AckSeen::Unknown);
    }

    #[test]
    fn the_summary_names_the_leg_and_what_was_measured() {
        let mut r = Resends::default();
        assert_eq!(r.summary(), None);
        assert_eq!(r.leg(), "none");
        for _ in 0..3 {
            r.record(&slow(LATE, 1, 0, AckSeen::WithReply));
        }
        r.record(&slow(3_000_000, 0, 0, AckSeen::WithReply));
        assert_eq!(r.leg(), "forward");
        let s = r.summary().unwrap();
        assert!(
            s.starts_with("retransmissions showed as latency, not loss: replies late by about a retransmission timeout (3), on the forward leg (client → server). Requests resent by this client that the server had not got (forward leg): 3"),
            "{s}"
        );
        let mut r = Resends::default();
        r.record(&slow(LATE, 1, 1, AckSeen::Prompt));
        r.record(&slow(LATE, 0, 0, AckSeen::WithReply));
        assert_eq!((r.reverse, r.far_resent, r.reverse_leg()), (1, 1, 2));
        assert_eq!(r.leg(), "reverse");
        let s = r.summary().unwrap();
        assert!(s.contains("on the reverse leg (server → client)"), "{s}");
        assert!(s.contains("Replies the server resent (not resent here; its ACK of the request came only with the reply, ≥ 200 ms late: reverse leg): 1"), "{s}");
        r.record(&slow(LATE, 1, 0, AckSeen::Unknown));
        assert_eq!(r.leg(), "both");
        let report = ResendReport::from(r);
        assert_eq!(report.leg, "both");
        assert!(
            report
                .summary
                .unwrap()
                .contains("on both legs (1 forward, 2 reverse)")
        );
    }

    #[test]
    fn a_late_reply_after_a_prompt_ack_is_on_no_leg() {
        let mut r = Resends::default();
        r.record(&slow(LATE, 0, 0, AckSeen::Prompt));
        assert_eq!(r.leg(), "none");
        let s = r.summary().unwrap();
        assert!(s.contains("on neither leg as measured"), "{s}");
        assert!(s.contains("after a prompt ACK"), "{s}");
    }
}
