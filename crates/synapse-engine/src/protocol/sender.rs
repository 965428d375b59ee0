//! The client's STAMP session-sender: its test packets and how it reads
//! the reflector's answers.

use super::Reply;
use super::stamp::{Layout, ReflectorPacket, SenderPacket, TimeFormat, WireTime};
use super::stamp_key::StampKey;
use super::tlv::{self, StampTlvs, TlvRequest};
use super::wire_time::PIVOT_UNIX_NS;
use crate::protocol::clock_state::ClockWatch;

/// STAMP session-sender packets: 44 octets (more with `--size`, as
/// zero padding), sequence number and T1 in NTP format (or PTP), and this
/// host's error estimate, read again about once a second.
///
/// Request `seq` goes out numbered `seq + 1`. A stateful reflector's own
/// number for it counts the requests that reached it before, so it is at
/// most `seq`; a stateless one copies ours, `seq + 1`. One reply tells
/// them apart, which loss direction needs.
#[derive(Debug)]
pub struct StampSender {
    pub(super) packet: Vec<u8>,
    /// This host's clock state, for each request's error estimate; its
    /// format is T1's.
    clock: ClockWatch,
    ssid: u16,
    /// Authenticated mode: signs requests, and only replies it verifies
    /// are replies.
    key: Option<StampKey>,
    layout: Layout,
    /// RFC 8972 TLVs after the base packet (none: RFC 8762 packets).
    tlvs: Option<TlvRequest>,
    /// The payload size asked for.
    size: usize,
}

impl StampSender {
    /// Packets of `size` octets, at least the 44 STAMP needs (112 with a
    /// `key`, authenticated mode), carrying `ssid` (RFC 8972; 0: none, the
    /// RFC 8762 MBZ octets).
    pub fn new(size: usize, ssid: u16, key: Option<StampKey>) -> Self {
        let layout = if key.is_some() {
            Layout::AUTHENTICATED
        } else {
            Layout::OPEN
        };
        Self {
            packet: vec![0; size.max(layout.len)],
            clock: ClockWatch::new(TimeFormat::Ntp),
            ssid,
            key,
            layout,
            tlvs: None,
            size,
        }
    }

    /// The same sender, its requests carrying the TLVs of `set` (the CoS
    /// TLV asking for `cos_tos` on the reply), padded to the size asked
    /// with an Extra Padding TLV, and closed by an HMAC TLV in
    /// authenticated mode. An empty set changes nothing.
    #[must_use]
    pub fn with_tlvs(mut self, set: StampTlvs, cos_tos: u8) -> Self {
        if !set.is_empty() {
            let base = self.layout.len;
            let signed = self.key.is_some();
            let req = TlvRequest::build(&mut self.packet, base, self.size, set, cos_tos, signed);
            self.tlvs = Some(req);
        }
        self
    }

    /// The same sender, its timestamps in `format` (RFC 8762 §4.2.1).
    #[must_use]
    pub fn with_format(mut self, format: TimeFormat) -> Self {
        self.clock = ClockWatch::with_state(format, self.clock.state());
        self
    }

    /// The format of the timestamps it sends.
    pub fn format(&self) -> TimeFormat {
        self.clock.format()
    }

    /// Whether the requests ask for Follow-Up Telemetry.
    pub fn follows_up(&self) -> bool {
        self.tlvs.as_ref().is_some_and(|t| t.follow_up)
    }

    /// Whether a datagram was refused as a reply because it does not carry
    /// this sender's HMAC (authenticated mode; never otherwise).
    pub fn failed_authentication(&self, datagram: &[u8]) -> bool {
        self.key.as_ref().is_some_and(|k| !k.verifies(datagram))
    }

    /// Whether this host says its clock is synchronised (the S bit sent).
    pub fn synchronized(&self) -> bool {
        self.clock.estimate().synchronized
    }

    /// The packet length on the wire.
    pub fn size(&self) -> usize {
        self.packet.len()
    }

    #[inline]
    pub(super) fn encode(&mut self, seq: u64, t1_unix_ns: u64) -> &[u8] {
        // T1 is the clock the state's second is counted on: no other read.
        self.clock.tick(t1_unix_ns);
        SenderPacket {
            seq: (seq as u32).wrapping_add(1),
            timestamp: WireTime::encode(t1_unix_ns, self.clock.format()),
            error: self.clock.estimate(),
            ssid: self.ssid,
        }
        .encode_as(&mut self.packet, self.layout);
        if let Some(t) = &self.tlvs {
            let sent = (seq as u32).wrapping_add(1);
            t.finish(&mut self.packet, self.layout.len, sent, self.key.as_ref());
        }
        if let Some(key) = &self.key {
            key.sign(&mut self.packet);
        }
        &self.packet
    }

    #[inline]
    pub(super) fn decode(&self, reply: &[u8], newest: u64) -> Option<Reply> {
        if self.failed_authentication(reply) {
            return None;
        }
        let r = ReflectorPacket::decode_as(reply, self.layout).ok()?;
        // A reflector always stamps T2; zero there is our own request
        // coming back from a plain echo server (those octets are MBZ).
        if r.receive_timestamp == WireTime::default() {
            return None;
        }
        // Another session's answer; zero is an RFC 8762-only reflector,
        // which leaves those octets MBZ.
        if r.ssid != self.ssid && r.ssid != 0 {
            return None;
        }
        let tlv = match &self.tlvs {
            Some(_) => {
                let seq = [reply[0], reply[1], reply[2], reply[3]];
                let area = reply.get(self.layout.len..).unwrap_or_default();
                tlv::read_reply(area, seq, self.key.as_ref())
            }
            None => tlv::TlvReport::default(),
        };
        // T2 and T3 in the reflector's format (its Z bit), each read in
        // the era nearest our own T1 (RFC 5905 §6): right across 2036.
        let t1 = r.sender_timestamp.decode(self.format(), PIVOT_UNIX_NS);
        let far = r.error.format();
        let read = |t: WireTime| t1.and_then(|t1| t.decode(far, t1));
        Some(Reply {
            seq: widen(r.sender_seq.wrapping_sub(1), newest),
            t2: read(r.receive_timestamp),
            t3: read(r.timestamp),
            reflector_seq: Some(r.seq),
            reflector_error: r.error,
            client_error: r.sender_error,
            tlv,
        })
    }
}

/// The 64-bit sequence number closest below or at `newest` whose low 32
/// bits are `low`.
pub(super) fn widen(low: u32, newest: u64) -> u64 {
    let candidate = (newest & !0xFFFF_FFFF) | u64::from(low);
    if candidate > newest && candidate >= 1 << 32 {
        candidate - (1 << 32)
    } else {
        candidate
    }
}
