//! MPLS label stacks a router quotes in its ICMP error (RFC 4950), read
//! from the ICMP extension structure (RFC 4884) that follows the quoted
//! datagram. The kernel says where that structure starts
//! (`IP_RECVERR_RFC4884`) and has checked its version and checksum.

use synapse_stats::trace::MplsEntry;

/// The extension structure's version (RFC 4884 §7).
const VERSION: u8 = 2;
/// Class-Num and C-Type of an incoming MPLS label stack (RFC 4950 §7).
const MPLS_CLASS: u8 = 1;
const MPLS_INCOMING: u8 = 1;
/// Entries kept at most: label stacks are short.
pub const MAX_LABELS: usize = 8;

/// The label stack entries in the extension structure at `ext` (which
/// runs to the end of what was read), at most [`MAX_LABELS`], into `out`;
/// returns how many. None when the structure is not one, or holds no stack.
pub fn labels(ext: &[u8], out: &mut [MplsEntry; MAX_LABELS]) -> usize {
    if ext.len() < 4 || ext[0] >> 4 != VERSION {
        return 0;
    }
    let mut n = 0;
    let mut at = 4;
    while let Some(header) = ext.get(at..at + 4) {
        let len = usize::from(u16::from_be_bytes([header[0], header[1]]));
        if len < 4 || at + len > ext.len() {
            break;
        }
        if header[2] == MPLS_CLASS && header[3] == MPLS_INCOMING {
            for e in ext[at + 4..at + len].chunks_exact(4) {
                if n == MAX_LABELS {
                    break;
                }
                let word = u32::from_be_bytes([e[0], e[1], e[2], e[3]]);
                out[n] = MplsEntry {
                    label: word >> 12,
                    tc: ((word >> 9) & 0b111) as u8,
                    bottom: (word >> 8) & 1 == 1,
                    ttl: word as u8,
                };
                n += 1;
            }
        }
        at += len;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(label: u32, tc: u8, bottom: bool, ttl: u8) -> [u8; 4] {
        (label << 12 | u32::from(tc) << 9 | u32::from(bottom) << 8 | u32::from(ttl)).to_be_bytes()
    }

    fn empty() -> [MplsEntry; MAX_LABELS] {
        [MplsEntry {
            label: 0,
            tc: 0,
            bottom: false,
            ttl: 0,
        }; MAX_LABELS]
    }

    /// A two-label stack (as RFC 4950's example), after an object of
    /// another class, is read label by label.
    #[test]
    fn a_label_stack_is_read_after_other_objects() {
        let mut ext = vec![0x20, 0, 0xde, 0xad];
        ext.extend_from_slice(&[0, 8, 2, 1, 9, 9, 9, 9]); // another class
        ext.extend_from_slice(&[0, 12, MPLS_CLASS, MPLS_INCOMING]);
        ext.extend_from_slice(&entry(16_004, 0, false, 1));
        ext.extend_from_slice(&entry(24_001, 5, true, 1));
        let mut out = empty();
        let n = labels(&ext, &mut out);
        assert_eq!(n, 2);
        assert_eq!(
            out[..n],
            [
                MplsEntry {
                    label: 16_004,
                    tc: 0,
                    bottom: false,
                    ttl: 1
                },
                MplsEntry {
                    label: 24_001,
                    tc: 5,
                    bottom: true,
                    ttl: 1
                },
            ]
        );
    }

    #[test]
    fn a_wrong_version_or_a_cut_object_gives_nothing() {
        let mut out = empty();
        let mut ext = vec![0x10, 0, 0, 0, 0, 8, MPLS_CLASS, MPLS_INCOMING];
        ext.extend_from_slice(&entry(1, 0, true, 1));
        assert_eq!(labels(&ext, &mut out), 0, "version 1");
        ext[0] = 0x20;
        assert_eq!(labels(&ext, &mut out), 1);
        assert_eq!(labels(&ext[..10], &mut out), 0, "object cut short");
        assert_eq!(labels(&[0x20, 0], &mut out), 0);
    }
}

/// A router's ICMP time-exceeded with an MPLS label stack in its
/// extensions, made by hand (a raw socket on loopback, as root) and read
/// through the kernel: the report places the extensions, the tracer files
/// the labels with the hop.
#[cfg(test)]
mod through_the_kernel {
    use crate::sys::cmsg::ControlBuf;
    use crate::sys::errqueue::{ErrQueue, read_error_queue_into};
    use crate::sys::sockopt;
    use crate::trace::{TracePlan, Tracer};
    use socket2::{Domain, Protocol, Socket, Type};
    use std::net::{SocketAddr, UdpSocket};
    use std::os::fd::AsRawFd;

    /// The Internet checksum of `bytes`.
    fn checksum(bytes: &[u8]) -> u16 {
        let mut sum: u32 = bytes
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    /// ICMP time exceeded quoting a UDP datagram `from` → `to` carrying
    /// `payload`, padded to 128 bytes (RFC 4884), then an extension
    /// structure with one incoming label stack: `label`, bottom of stack.
    fn time_exceeded(from: SocketAddr, to: SocketAddr, payload: &[u8], label: u32) -> Vec<u8> {
        let (SocketAddr::V4(f), SocketAddr::V4(t)) = (from, to) else {
            panic!("IPv4");
        };
        let mut quote = vec![0x45, 0, 0, 128, 0, 0, 0x40, 0, 1, 17, 0, 0];
        quote.extend_from_slice(&f.ip().octets());
        quote.extend_from_slice(&t.ip().octets());
        let ip_sum = checksum(&quote);
        quote[10..12].copy_from_slice(&ip_sum.to_be_bytes());
        quote.extend_from_slice(&f.port().to_be_bytes());
        quote.extend_from_slice(&t.port().to_be_bytes());
        quote.extend_from_slice(&(108u16).to_be_bytes());
        quote.extend_from_slice(&[0, 0]);
        quote.extend_from_slice(payload);
        quote.resize(128, 0);
        let entry = (label << 12 | 1 << 8 | 1).to_be_bytes();
        let mut ext = vec![0x20, 0, 0, 0, 0, 8, 1, 1];
        ext.extend_from_slice(&entry);
        let ext_sum = checksum(&ext);
        ext[2..4].copy_from_slice(&ext_sum.to_be_bytes());
        // Type 11, code 0, checksum, unused, length (32 words), unused.
        let mut icmp = vec![11, 0, 0, 0, 0, 32, 0, 0];
        icmp.extend_from_slice(&quote);
        icmp.extend_from_slice(&ext);
        let sum = checksum(&icmp);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());
        icmp
    }

    #[test]
    fn a_label_stack_reaches_the_hop_through_the_kernel() {
        let raw = match Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4)) {
            Ok(s) => s,
            Err(e) => {
                println!(
                    "SKIPPED a_label_stack_reaches_the_hop_through_the_kernel: a raw socket needs root ({e})"
                );
                return;
            }
        };
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let fd = udp.as_raw_fd();
        sockopt::enable_recverr(fd, false).unwrap();
        sockopt::enable_recverr_rfc4884(fd, false).unwrap();
        let to: SocketAddr = "127.0.0.1:33434".parse().unwrap();
        let plan = TracePlan {
            destination: to.ip(),
            ports: vec![udp.local_addr().unwrap().port()],
            probes: 1,
            max_ttl: 1,
            rate: 1000.0,
            timeout_ns: 1_000_000_000,
        };
        let mut tracer = Tracer::new(plan, 9, 0xfeed, 0);
        let probe = tracer.next_probe(0).unwrap();
        tracer.sent(&probe, 0, 0);
        let icmp = time_exceeded(udp.local_addr().unwrap(), to, &probe.bytes, 16_004);
        raw.send_to(&icmp, &"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        let (mut control, mut quote) = (ControlBuf::default(), [0u8; 1024]);
        let mut report = None;
        for _ in 0..200 {
            if let Ok(ErrQueue::Error(r)) = read_error_queue_into(fd, &mut control, 0, &mut quote) {
                report = Some(r);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let r = report.expect("the time exceeded on the error queue");
        assert!(r.is_time_exceeded(), "{r:?}");
        assert_eq!(
            r.extensions_at,
            Some(100),
            "128 quoted, less the IP and UDP headers"
        );
        let read = r.quoted.read_len();
        assert!(tracer.on_report(0, &r, &quote[..read], 1_000));
        let hop = &tracer.into_tallies()[0].hops[0];
        let labels = &hop.responders[0].mpls;
        assert_eq!(labels.len(), 1, "{hop:?}");
        assert_eq!(
            (labels[0].label, labels[0].bottom, labels[0].ttl),
            (16_004, true, 1)
        );
    }
}
