//! A probe's points as the load's statistics read them (its stages, cut
//! where its stamps are), and as the per-packet log writes them in a load
//! run: with the phase it left in.

use crate::packet_log::{LogRow, client_columns, write_fields};
use std::io::{self, Write};
use synapse_engine::{PacketStatus, Points};
use synapse_stats::load::{PhaseKind, Probe, Stage};

/// A probe's row with its phase, for `--log` in a load run.
#[derive(Debug, Clone, Copy)]
pub struct PhasedPoints {
    /// The probe's points.
    pub points: Points,
    /// The phase it left in.
    pub phase: PhaseKind,
}

impl LogRow for PhasedPoints {
    const HEADER: &'static str = concat!(client_columns!(), ",PHASE");

    fn write_row(&self, out: &mut impl Write) -> io::Result<()> {
        write_fields(out, &self.points)?;
        writeln!(out, ",{}", self.phase.name())
    }
}

/// When a probe left, on the client's clock (realtime ns): its T1, or its
/// slot when no T1 was read.
pub fn sent_at(p: &Points) -> Option<u64> {
    p.t1_user.or(p.sched)
}

/// The reflector's send time at its own cut point: its driver's (or
/// NIC's) by Follow-Up when asked for, the T3 it carried otherwise.
fn measured_t3(p: &Points) -> Option<u64> {
    if p.follow_up {
        p.t3_hw.or(p.t3_driver)
    } else {
        p.t3
    }
}

fn diff(a: Option<u64>, b: Option<u64>) -> Option<i64> {
    Some(b? as i64 - a? as i64)
}

/// A probe for the load's statistics; `None` for a row that is not a
/// probe's first word (a late or repeated reply: the probe was counted
/// lost, or answered, already).
pub fn probe(p: &Points) -> Option<Probe> {
    let at = sent_at(p)?;
    match p.status {
        PacketStatus::Lost => return Some(Probe::lost(at)),
        PacketStatus::Late | PacketStatus::Duplicate => return None,
        PacketStatus::Ok => {}
    }
    let t3 = measured_t3(p);
    let far = diff(p.t2, t3).filter(|d| *d >= 0);
    let network = diff(p.t1_driver, p.t4_driver)
        .filter(|_| p.t2.is_none() || far.is_some())
        .map(|n| n - far.unwrap_or(0));
    let (send_path, send_queue) = match p.t1_sched {
        Some(_) => (diff(p.t1_user, p.t1_sched), diff(p.t1_sched, p.t1_driver)),
        None => (diff(p.t1_user, p.t1_driver), None),
    };
    let mut out = Probe::answered(at, p.rtt_ns?)
        .with(Stage::SendPath, send_path)
        .with(Stage::SendQueue, send_queue)
        .with(Stage::Forward, diff(p.t1_driver, p.t2))
        .with(Stage::FarSide, far)
        .with(Stage::Backward, diff(t3, p.t4_driver))
        .with(Stage::ReceivePath, diff(p.t4_driver, p.t4_user))
        .with(Stage::Network, network);
    out.reflector_seq = p.reflector_seq;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet_log::HEADER;

    fn stamped() -> Points {
        Points {
            seq: 1,
            status: PacketStatus::Ok,
            t1_user: Some(1_000),
            t1_sched: Some(1_500),
            t1_driver: Some(9_500),
            t2: Some(20_000),
            t3: Some(20_300),
            t3_driver: Some(20_800),
            follow_up: true,
            t4_driver: Some(130_000),
            t4_user: Some(131_000),
            rtt_ns: Some(130_000),
            reflector_seq: Some(7),
            ..Points::default()
        }
    }

    #[test]
    fn a_stamped_probe_is_cut_at_its_stamps_and_the_cuts_add_up() {
        let p = probe(&stamped()).unwrap();
        let get = |s| p.stage(s).unwrap();
        assert_eq!(get(Stage::SendPath), 500);
        assert_eq!(get(Stage::SendQueue), 8_000, "qdisc: SCHED to driver");
        assert_eq!(get(Stage::Forward), 10_500);
        assert_eq!(get(Stage::FarSide), 800, "to the Follow-Up's send time");
        assert_eq!(get(Stage::Backward), 109_200);
        assert_eq!(get(Stage::ReceivePath), 1_000);
        assert_eq!(get(Stage::Network), 120_500 - 800);
        let legs = [
            Stage::SendPath,
            Stage::SendQueue,
            Stage::Forward,
            Stage::FarSide,
            Stage::Backward,
            Stage::ReceivePath,
        ];
        assert_eq!(legs.iter().map(|&s| get(s)).sum::<i64>(), 130_000);
        assert_eq!(p.reflector_seq, Some(7));
    }

    #[test]
    fn what_was_not_stamped_is_absent_and_late_rows_are_no_probe() {
        let echo = Points {
            t2: None,
            t3: None,
            t3_driver: None,
            follow_up: false,
            t1_sched: None,
            reflector_seq: None,
            ..stamped()
        };
        let p = probe(&echo).unwrap();
        assert_eq!(p.stage(Stage::SendQueue), None);
        assert_eq!(p.stage(Stage::SendPath), Some(8_500), "user to driver");
        assert_eq!(p.stage(Stage::Forward), None);
        assert_eq!(p.stage(Stage::Network), Some(120_500));
        // Follow-Up asked for and never come: no far side, no network.
        let waiting = Points {
            t3_driver: None,
            ..stamped()
        };
        let p = probe(&waiting).unwrap();
        assert_eq!(
            (p.stage(Stage::FarSide), p.stage(Stage::Network)),
            (None, None)
        );
        let late = Points {
            status: PacketStatus::Late,
            ..stamped()
        };
        assert!(probe(&late).is_none());
        let lost = probe(&Points {
            status: PacketStatus::Lost,
            rtt_ns: None,
            ..stamped()
        })
        .unwrap();
        assert_eq!(lost.rtt_ns, None);
    }

    #[test]
    fn the_phased_header_is_the_logs_and_a_phase() {
        assert_eq!(<PhasedPoints as LogRow>::HEADER, format!("{HEADER},PHASE"));
        let mut out = Vec::new();
        let row = PhasedPoints {
            points: stamped(),
            phase: PhaseKind::Upload,
        };
        row.write_row(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with(",upload\n"), "{text}");
        assert_eq!(text.split(',').count(), HEADER.split(',').count() + 1);
    }
}
