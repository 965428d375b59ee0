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
