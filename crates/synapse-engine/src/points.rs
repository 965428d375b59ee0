//! Where one round trip's time went: the points in time Synapse knows
//! about a packet, and the segments between them ([`Split`]).
//!
//! Subtraction happens only inside one clock domain. T1/T4 user and the
//! kernel's software stamps share `CLOCK_REALTIME`; T2/T3 are the
//! reflector's clock, used only as T3 − T2; NIC stamps are the NIC's clock
//! (PHC), used only as T4 hw − T1 hw. The RTT itself stays on the monotonic
//! clock; the segments add up to it within the cost of a clock read.

use crate::protocol::stamp::ErrorEstimate;
use synapse_stats::{FarSide, Marks, Split};

/// What became of a packet, as its log row says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PacketStatus {
    /// Answered in time: a sample.
    Ok,
    /// No reply by its deadline (so far).
    #[default]
    Lost,
    /// A reply after its deadline (the packet was logged lost before).
    Late,
    /// A second (or further) reply.
    Duplicate,
}

impl PacketStatus {
    /// The word in the log's `STATUS` column.
    pub fn name(self) -> &'static str {
        match self {
            PacketStatus::Ok => "ok",
            PacketStatus::Lost => "lost",
            PacketStatus::Late => "late",
            PacketStatus::Duplicate => "duplicate",
        }
    }
}

/// Every point in time known about one packet, nanoseconds. `None`: the
/// kernel, the NIC or the reflector did not provide it (never filled in
/// from another kind of stamp).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Points {
    /// Sequence number.
    pub seq: u64,
    /// What became of it.
    pub status: PacketStatus,
    /// Client, just before `send` (`CLOCK_REALTIME`).
    pub t1_user: Option<u64>,
    /// Client, entering the packet scheduler (kernel software stamp).
    pub t1_sched: Option<u64>,
    /// Client, handed to the device (kernel software stamp).
    pub t1_driver: Option<u64>,
    /// Client NIC, on the wire (PHC clock).
    pub t1_hw: Option<u64>,
    /// The same on the system clock (`CLOCK_REALTIME`), through a reading
    /// of the NIC's clock against it: only for T1 hw − T1 driver.
    pub t1_wire: Option<u64>,
    /// Reflector, received (STAMP; the reflector's clock).
    pub t2: Option<u64>,
    /// Reflector, sending the reply (STAMP; the reflector's clock).
    pub t3: Option<u64>,
    /// Reflector kernel, the reply handed to its device: the real T3 a
    /// later reply's Follow-Up Telemetry TLV carried (its clock).
    pub t3_driver: Option<u64>,
    /// Reflector NIC, the reply on the wire (Follow-Up, hardware mode: its
    /// NIC's stamp, which the reflector put on its own system clock).
    pub t3_hw: Option<u64>,
    /// Follow-Up Telemetry was asked for: the dwell runs to the measured
    /// T3 (`t3_driver`), and is missing when that never came.
    pub follow_up: bool,
    /// Class of service each leg's packet carried, as far as reported.
    pub marks: Marks,
    /// Client NIC, off the wire (PHC clock).
    pub t4_hw: Option<u64>,
    /// Client kernel, received (kernel software stamp).
    pub t4_driver: Option<u64>,
    /// Client, just after the receive returned (`CLOCK_REALTIME`).
    pub t4_user: Option<u64>,
    /// Round-trip time on the monotonic clock; `None` for a lost packet.
    pub rtt_ns: Option<u64>,
    /// Paced mode: when the request was scheduled to leave
    /// (`CLOCK_REALTIME`, as the run's start maps the monotonic schedule).
    pub sched: Option<u64>,
    /// STAMP: the reflector's own sequence number for the reply.
    pub reflector_seq: Option<u32>,
    /// STAMP: the reflector's error estimate on the reply (its S bit, its
    /// clock's error, its timestamps' format).
    pub reflector_error: Option<ErrorEstimate>,
    /// STAMP: this host's error estimate as the request carried it.
    pub client_error: Option<ErrorEstimate>,
    /// TCP: the far kernel's ACK of the request's last byte came back
    /// (kernel software stamp, `SOF_TIMESTAMPING_TX_ACK`).
    pub t1_ack: Option<u64>,
    /// TCP: whether that ACK rode on the reply (then it says nothing of
    /// the far kernel apart from the far application); `None`: unknown.
    pub ack_with_reply: Option<bool>,
    /// TCP `--connect-each`: client, before the connection was opened.
    pub t0_user: Option<u64>,
    /// TCP `--connect-each`: client, when `connect` returned.
    pub connected: Option<u64>,
    /// What the path said about this request (an ICMP error; over TCP the
    /// peer's FIN or RST), when it said something.
    pub path_error: Option<synapse_stats::PathError>,
}

impl Points {
    /// Fills in what a fresh reply brings: its round trip, the reflector's
    /// T2/T3 and number (STAMP), and when it arrived.
    #[inline]
    pub(crate) fn answered(
        &mut self,
        rtt_ns: u64,
        reply: &crate::protocol::Reply,
        rx: crate::sys::timestamping::Stamps,
        t4_user: Option<u64>,
    ) {
        self.rtt_ns = Some(rtt_ns);
        self.t2 = reply.t2;
        self.t3 = reply.t3;
        self.t4_driver = rx.software;
        self.t4_hw = rx.hardware;
        self.t4_user = t4_user;
        self.reflector_seq = reply.reflector_seq;
        if reply.reflector_seq.is_some() {
            self.reflector_error = Some(reply.reflector_error);
            self.client_error = Some(reply.client_error);
        }
    }

    /// What the reflector's stamps say of the round trip, when the reply
    /// was a STAMP reply: its number, each end's clock error, and the
    /// one-way delays between two sets of cut points.
    ///
    /// - Application: T2 − T1 user (the T1 the request carried) and
    ///   T4 user − T3 (the T3 the reply carried).
    /// - Kernel: T2 − T1 kernel (the NIC's stamp on the system clock when
    ///   the NIC stamped, else the kernel's; none when the NIC's could not
    ///   be placed) and T4 kernel − T3 measured (Follow-Up's when it was
    ///   asked for, none if it never came; the T3 carried otherwise).
    pub fn far_side(&self) -> FarSide {
        let Some(seq) = self.reflector_seq else {
            return FarSide::NONE;
        };
        let diff = |a: Option<u64>, b: Option<u64>| Some(b? as i64 - a? as i64);
        let t1_kernel = if self.t1_hw.is_some() {
            self.t1_wire
        } else {
            self.t1_driver
        };
        let t3 = self.measured_t3();
        let bound = |e: Option<ErrorEstimate>| e.and_then(ErrorEstimate::bound_ns);
        FarSide::new(seq)
            .with_application(diff(self.t1_user, self.t2), diff(self.t3, self.t4_user))
            .with_kernel(diff(t1_kernel, self.t2), diff(t3, self.t4_driver))
            .with_errors(bound(self.reflector_error), bound(self.client_error))
    }

    /// The reflector's T3 at its own cut point: its kernel's or NIC's send
    /// time when Follow-Up was asked for (`None` until it came), the T3
    /// the reply carried otherwise.
    fn measured_t3(&self) -> Option<u64> {
        if self.follow_up {
            self.t3_hw.or(self.t3_driver)
        } else {
            self.t3
        }
    }

    /// The segments the points allow. A segment whose end points are out of
    /// order (a clock step mid-packet) is missing, not negative.
    pub fn split(&self) -> Split {
        // User-space stamps on a plain echo (every packet of
        // `--timestamps user`): no segment has both its ends, so nothing
        // below is worth computing per packet.
        if self.t1_driver.is_none()
            && self.t4_driver.is_none()
            && self.t1_hw.is_none()
            && self.t4_hw.is_none()
            && self.t2.is_none()
            && self.ack_with_reply.is_none()
        {
            return Split::NONE;
        }
        let between = |a: Option<u64>, b: Option<u64>| b?.checked_sub(a?);
        // The send path to the wire may read below zero by the error of
        // the NIC clock's reading: kept as it is, not dropped.
        let signed = |a: Option<u64>, b: Option<u64>| Some(b? as i64 - a? as i64);
        // A Follow-Up T3 from the reflector's NIC comes on its system
        // clock (the reflector maps it there), as T2 is: the dwell then
        // runs to the wire.
        let dwell = between(self.t2, self.measured_t3());
        // Waiting for a follow-up that never came, the dwell is unknown,
        // and so is what is left of the round trip without it.
        let network = between(self.t1_driver, self.t4_driver)
            .filter(|_| !self.follow_up || dwell.is_some())
            .and_then(|total| total.checked_sub(dwell.unwrap_or(0)));
        // In `Split::from_parts` order.
        let split = Split::from_parts([
            between(self.t1_user, self.t1_driver),
            network,
            dwell,
            between(self.t4_driver, self.t4_user),
            between(self.t1_hw, self.t4_hw),
        ])
        .with_wire(signed(self.t1_driver, self.t1_wire));
        match self.ack_with_reply {
            Some(true) => split.with_ack(None, None, true),
            Some(false) => split.with_ack(
                between(self.t1_driver, self.t1_ack),
                between(self.t1_ack, self.t4_driver),
                false,
            ),
            None => split,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_stats::Segment;

    /// The shortcut for user-space stamps gives what the segments would.
    #[test]
    fn user_space_points_split_into_nothing() {
        let user = Points {
            t1_user: Some(1_000),
            t4_user: Some(12_000),
            t3: Some(5_000),
            t1_wire: Some(1_500),
            t1_ack: Some(2_000),
            rtt_ns: Some(11_000),
            ..Points::default()
        };
        assert_eq!(user.split(), Split::NONE);
        assert_eq!(
            user.split(),
            Split::from_parts([None; 5]).with_wire(None),
            "the long way agrees"
        );
        assert!(user.split().is_empty());
        // Any kernel point and the shortcut is not taken.
        let stamped = Points {
            t1_driver: Some(900),
            ..user
        };
        assert_eq!(stamped.split().get(Segment::Send), None);
        assert_eq!(stamped.split().get(Segment::ToWire), Some(600));
        let acked = Points {
            ack_with_reply: Some(true),
            ..user
        };
        assert!(acked.split().is_piggybacked(Segment::KernelRtt));
    }

    fn full() -> Points {
        Points {
            seq: 7,
            status: PacketStatus::Ok,
            t1_user: Some(1_000),
            t1_sched: Some(1_400),
            t1_driver: Some(1_900),
            t1_hw: None,
            t1_wire: None,
            t2: Some(50_000),
            t3: Some(53_000),
            t4_hw: None,
            t4_driver: Some(9_900),
            t4_user: Some(12_000),
            rtt_ns: Some(11_000),
            sched: None,
            reflector_seq: Some(3),
            ..Points::default()
        }
    }

    #[test]
    fn with_follow_up_the_dwell_runs_to_the_measured_t3_or_is_missing() {
        let asked = Points {
            follow_up: true,
            ..full()
        };
        let s = asked.split();
        assert_eq!(s.get(Segment::Dwell), None, "never the user-space T3");
        assert_eq!(s.get(Segment::Network), None);
        let followed = Points {
            t3_driver: Some(53_400),
            ..asked
        };
        let s = followed.split();
        assert_eq!(s.get(Segment::Dwell), Some(3_400));
        assert_eq!(s.get(Segment::Network), Some(8_000 - 3_400));
        let on_the_wire = Points {
            t3_hw: Some(53_900),
            ..asked
        };
        assert_eq!(
            on_the_wire.split().get(Segment::Dwell),
            Some(3_900),
            "a NIC's T3 (on the reflector's clock) ends the dwell at the wire"
        );
    }

    #[test]
    fn the_send_path_to_the_wire_needs_the_nic_stamp_on_the_system_clock() {
        let raw_only = Points {
            t1_hw: Some(77),
            ..full()
        };
        assert_eq!(
            raw_only.split().get(Segment::ToWire),
            None,
            "a PHC stamp is never subtracted from a system one"
        );
        let mapped = Points {
            t1_wire: Some(2_650),
            ..raw_only
        };
        assert_eq!(mapped.split().get(Segment::ToWire), Some(750));
        let before_the_driver = Points {
            t1_wire: Some(1_800),
            ..raw_only
        };
        let s = before_the_driver.split();
        assert_eq!(
            s.wire_ns(),
            Some(-100),
            "out of order by the mapping's error: kept, not dropped"
        );
        assert_eq!(
            s.get(Segment::ToWire),
            Some(0),
            "its percentiles clamp at 0"
        );
    }

    #[test]
    fn far_side_needs_a_stamp_reply_and_keeps_each_set_of_cut_points() {
        let synced = ErrorEstimate::synchronized_within_ns(2_000);
        let p = Points {
            reflector_error: Some(synced),
            client_error: Some(ErrorEstimate::UNSYNCHRONIZED),
            ..full()
        };
        let f = p.far_side();
        assert_eq!(f.application(), Some((49_000, 12_000 - 53_000)));
        assert_eq!(
            f.kernel(),
            Some((50_000 - 1_900, 9_900 - 53_000)),
            "T1 driver, T4 driver; T3 as carried (no Follow-Up asked)"
        );
        assert_eq!(f.reflector_seq(), Some(3));
        assert!(f.reflector_error_ns().is_some_and(|e| e >= 2_000));
        assert_eq!(f.client_error_ns(), None, "unsynchronised: no bound");
        let echo = Points {
            reflector_seq: None,
            ..full()
        };
        assert_eq!(echo.far_side(), FarSide::NONE);
    }

    #[test]
    fn kernel_one_way_delays_take_the_measured_t3_and_the_nics_t1() {
        let asked = Points {
            follow_up: true,
            ..full()
        };
        assert_eq!(asked.far_side().kernel(), None, "Follow-Up never came");
        let followed = Points {
            t3_driver: Some(53_400),
            ..asked
        };
        assert_eq!(followed.far_side().kernel(), Some((48_100, 9_900 - 53_400)));
        let nic = Points {
            t1_hw: Some(7),
            t1_wire: Some(2_000),
            ..full()
        };
        assert_eq!(
            nic.far_side().kernel().unwrap().0,
            48_000,
            "T2 − T1 on the wire"
        );
        let unplaced = Points {
            t1_wire: None,
            ..nic
        };
        assert_eq!(
            unplaced.far_side().kernel(),
            None,
            "a NIC stamp not placed on the system clock is not replaced by the driver's"
        );
    }

    #[test]
    fn segments_partition_the_realtime_round_trip() {
        let s = full().split();
        assert_eq!(s.get(Segment::Send), Some(900));
        assert_eq!(s.get(Segment::Dwell), Some(3_000));
        assert_eq!(s.get(Segment::Network), Some(8_000 - 3_000));
        assert_eq!(s.get(Segment::Receive), Some(2_100));
        assert_eq!(s.get(Segment::NicRoundTrip), None);
        let sum: u64 = [
            Segment::Send,
            Segment::Network,
            Segment::Dwell,
            Segment::Receive,
        ]
        .iter()
        .filter_map(|&g| s.get(g))
        .sum();
        assert_eq!(sum, 12_000 - 1_000);
    }

    #[test]
    fn without_stamp_the_network_segment_includes_the_far_side() {
        let p = Points {
            t2: None,
            t3: None,
            ..full()
        };
        let s = p.split();
        assert_eq!(s.get(Segment::Dwell), None);
        assert_eq!(s.get(Segment::Network), Some(8_000));
    }

    #[test]
    fn a_missing_stamp_leaves_its_segments_missing_and_nothing_else() {
        let p = Points {
            t1_driver: None,
            ..full()
        };
        let s = p.split();
        assert_eq!(s.get(Segment::Send), None, "never replaced by T1 sched");
        assert_eq!(s.get(Segment::Network), None);
        assert_eq!(s.get(Segment::Receive), Some(2_100));
        assert!(!s.is_empty());
        assert!(Points::default().split().is_empty());
    }

    #[test]
    fn out_of_order_points_give_no_segment() {
        let p = Points {
            t4_user: Some(9_000),
            ..full()
        };
        assert_eq!(p.split().get(Segment::Receive), None);
    }

    #[test]
    fn a_separate_ack_splits_the_network_segment_and_a_piggybacked_one_does_not() {
        let tcp = Points {
            t2: None,
            t3: None,
            t1_ack: Some(4_000),
            ack_with_reply: Some(false),
            ..full()
        };
        let s = tcp.split();
        assert_eq!(s.get(Segment::KernelRtt), Some(2_100));
        assert_eq!(s.get(Segment::FarShare), Some(5_900));
        assert_eq!(
            s.get(Segment::KernelRtt).unwrap() + s.get(Segment::FarShare).unwrap(),
            s.get(Segment::Network).unwrap(),
            "the two parts of the network segment add up to it"
        );
        let rode = Points {
            ack_with_reply: Some(true),
            ..tcp
        };
        let s = rode.split();
        assert_eq!(s.get(Segment::KernelRtt), None);
        assert!(s.is_piggybacked(Segment::KernelRtt));
        assert_eq!(s.get(Segment::Network), Some(8_000), "still measured whole");
        let udp = full().split();
        assert!(!udp.is_piggybacked(Segment::KernelRtt));
        assert_eq!(udp.get(Segment::KernelRtt), None);
    }

    #[test]
    fn hardware_points_are_only_subtracted_from_each_other() {
        let p = Points {
            t1_hw: Some(5_000_000_000),
            t4_hw: Some(5_000_007_000),
            ..full()
        };
        let s = p.split();
        assert_eq!(s.get(Segment::NicRoundTrip), Some(7_000));
        assert_eq!(s.get(Segment::Send), Some(900), "software points unchanged");
    }
}
