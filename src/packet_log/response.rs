//! The server's `--log FILE` rows (rant's `response.txt`): one per answered
//! datagram, written by the same writer as the client's log.

use super::{LogRow, stamp};
use std::io::{self, Write};
use synapse_engine::{AnswerPoints, Protocol};

/// The server's header. T2_DRV and T3_SCHED/T3_DRV are the kernel's
/// software stamps; T2_SW and T3_SW are user space (rant's meaning);
/// RESPONSE is T3_DRV − T2_DRV and RESPONSE_HW is T3_HW − T2_HW, in ns.
pub const RESPONSE_HEADER: &str =
    "PROTO,PEER,SEQ,T2_HW,T2_DRV,T2_SW,T3_SW,T3_SCHED,T3_DRV,T3_HW,RESPONSE,RESPONSE_HW";

impl LogRow for AnswerPoints {
    const HEADER: &'static str = RESPONSE_HEADER;

    fn write_row(&self, out: &mut impl Write) -> io::Result<()> {
        let proto = match self.protocol {
            Protocol::Echo => "echo",
            Protocol::Stamp => "stamp",
        };
        write!(out, "{proto},{},", self.peer)?;
        if let Some(seq) = self.seq {
            write!(out, "{seq}")?;
        }
        for ns in [
            self.t2_hw,
            self.t2_driver,
            self.t2_user,
            self.t3_user,
            self.t3.sched,
            self.t3.driver,
            self.t3.hw,
        ] {
            stamp(out, ns)?;
        }
        for span in [self.response_ns(), self.response_hw_ns()] {
            match span {
                Some(ns) => write!(out, ",{ns}")?,
                None => write!(out, ",")?,
            }
        }
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet_log::PacketLog;
    use std::net::SocketAddr;
    use synapse_engine::timestamping::tx_matcher::TxPoints;

    fn answer(protocol: Protocol, seq: Option<u64>) -> AnswerPoints {
        AnswerPoints {
            protocol,
            peer: "[::1]:40000".parse::<SocketAddr>().unwrap(),
            seq,
            t2_driver: None,
            t2_hw: None,
            t2_user: None,
            t3_user: None,
            t3: TxPoints::default(),
            follow_up: None,
        }
    }

    #[test]
    fn rows_carry_every_point_and_the_spans_only_when_both_ends_exist() {
        let mut out = Vec::new();
        let full = AnswerPoints {
            t2_driver: Some(1_771_555_281_293_211_904),
            t2_user: Some(1_771_555_281_293_247_670),
            t3_user: Some(1_771_555_281_293_248_149),
            t3: TxPoints {
                sched: Some(1_771_555_281_293_250_000),
                driver: Some(1_771_555_281_293_264_861),
                ..TxPoints::default()
            },
            ..answer(Protocol::Stamp, Some(7))
        };
        full.write_row(&mut out).unwrap();
        answer(Protocol::Echo, None).write_row(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "stamp,[::1]:40000,7,,1771555281.293211904,1771555281.293247670,\
             1771555281.293248149,1771555281.293250000,1771555281.293264861,,52957,"
        );
        assert_eq!(lines[1], "echo,[::1]:40000,,,,,,,,,,");
        let columns = RESPONSE_HEADER.split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == columns));
    }

    #[test]
    fn one_writer_drains_both_reflectors_rings_under_one_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.csv");
        let (mut echo_tx, echo_rx) = rtrb::RingBuffer::new(4);
        let (mut stamp_tx, stamp_rx) = rtrb::RingBuffer::new(4);
        let log = PacketLog::create(&path)
            .unwrap()
            .start(vec![echo_rx, stamp_rx])
            .unwrap();
        echo_tx.push(answer(Protocol::Echo, Some(1))).unwrap();
        stamp_tx.push(answer(Protocol::Stamp, Some(2))).unwrap();
        drop(echo_tx);
        stamp_tx.push(answer(Protocol::Stamp, Some(3))).unwrap();
        drop(stamp_tx);
        assert_eq!(log.finish().rows, 3);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(RESPONSE_HEADER));
        let mut protos: Vec<&str> = lines.map(|l| l.split(',').next().unwrap()).collect();
        protos.sort_unstable();
        assert_eq!(protos, ["echo", "stamp", "stamp"]);
    }
}
