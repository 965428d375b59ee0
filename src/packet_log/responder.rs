//! A multicast run's `--log` rows: each responder's row for each request
//! (its answer, loss, late answer or duplicate), the client's columns
//! followed by who answered: its name, if it tells one, and its address.

use super::{LogRow, client_columns, write_fields};
use std::io::{self, Write};
use synapse_engine::ResponderPoints;

impl LogRow for ResponderPoints {
    const HEADER: &'static str = concat!(client_columns!(), ",RESPONDER,RESPONDER_ADDRESS");

    fn write_row(&self, out: &mut impl Write) -> io::Result<()> {
        write_fields(out, &self.points)?;
        let name = self.responder.name.as_ref().map(|n| n.as_str());
        // A name is 1 to 16 bytes of UTF-8: quoted when CSV needs it.
        match name {
            Some(n) if n.contains([',', '"', '\n', '\r']) => {
                write!(out, ",\"{}\"", n.replace('"', "\"\""))?;
            }
            Some(n) => write!(out, ",{n}")?,
            None => write!(out, ",")?,
        }
        writeln!(out, ",{}", self.responder.address)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::packet_log::HEADER;
    use synapse_engine::{PacketStatus, Points, ResponderEntry};

    fn row(name: Option<&str>, points: Points) -> String {
        let r = ResponderPoints {
            responder: ResponderEntry {
                index: 2,
                name: name.map(|n| n.parse().unwrap()),
                address: "10.78.0.4:7000".parse().unwrap(),
            },
            points,
        };
        let mut out = Vec::new();
        r.write_row(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_responder_row_is_the_client_row_then_who_answered() {
        assert_eq!(
            <ResponderPoints as LogRow>::HEADER,
            format!("{HEADER},RESPONDER,RESPONDER_ADDRESS")
        );
        let p = Points {
            seq: 41,
            status: PacketStatus::Ok,
            rtt_ns: Some(18_250),
            ..Points::default()
        };
        let mut plain = Vec::new();
        crate::packet_log::write_fields(&mut plain, &p).unwrap();
        let plain = String::from_utf8(plain).unwrap();
        assert_eq!(row(Some("r3"), p), format!("{plain},r3,10.78.0.4:7000\n"));
        assert_eq!(row(None, p), format!("{plain},,10.78.0.4:7000\n"));
        assert_eq!(
            row(Some("a,\"b\""), p),
            format!("{plain},\"a,\"\"b\"\"\",10.78.0.4:7000\n")
        );
        let columns = HEADER.split(',').count() + 2;
        assert_eq!(row(Some("r3"), p).trim_end().split(',').count(), columns);
    }
}
