//! Reading a NIC's hardware clock (PHC, `/dev/ptpN`) against the system
//! clock: `PTP_SYS_OFFSET`, which brackets each PHC read between two
//! `CLOCK_REALTIME` reads, as `phc2sys` and `phc_ctl` do.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// `PTP_MAX_SAMPLES` (linux/ptp_clock.h).
const MAX_SAMPLES: usize = 25;

/// `struct ptp_clock_time`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct PtpClockTime {
    sec: i64,
    nsec: u32,
    reserved: u32,
}

impl PtpClockTime {
    fn ns(self) -> i128 {
        i128::from(self.sec) * 1_000_000_000 + i128::from(self.nsec)
    }
}

/// `struct ptp_sys_offset`: system, PHC, system, PHC, …, system.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct PtpSysOffset {
    n_samples: u32,
    rsv: [u32; 3],
    ts: [PtpClockTime; 2 * MAX_SAMPLES + 1],
}

/// `PTP_SYS_OFFSET`: `_IOW('=', 5, struct ptp_sys_offset)`.
const PTP_SYS_OFFSET: libc::c_ulong =
    (1 << 30) | ((size_of::<PtpSysOffset>() as libc::c_ulong) << 16) | (0x3d << 8) | 5;

/// One reading of a PHC against the system clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhcReading {
    /// `CLOCK_REALTIME` half-way between the two system reads, ns.
    pub system_ns: i128,
    /// The PHC at that moment, ns.
    pub phc_ns: i128,
    /// The two system reads' distance apart, ns: the reading's uncertainty
    /// is at most this (the PHC was read somewhere inside it).
    pub window_ns: i128,
}

/// A NIC's hardware clock, open for reading.
#[derive(Debug)]
pub struct Phc {
    file: File,
}

impl Phc {
    /// Opens `/dev/ptp{index}` (the index `ethtool -T` shows).
    pub fn open(index: u32) -> io::Result<Self> {
        let file = File::open(format!("/dev/ptp{index}"))?;
        Ok(Self { file })
    }

    /// Reads the PHC `samples` times between system clock reads and keeps
    /// the reading with the narrowest window (the least disturbed).
    pub fn read(&self, samples: usize) -> io::Result<PhcReading> {
        let n = samples.clamp(1, MAX_SAMPLES);
        let mut req = PtpSysOffset {
            n_samples: n as u32,
            rsv: [0; 3],
            ts: [PtpClockTime::default(); 2 * MAX_SAMPLES + 1],
        };
        // SAFETY: `req` is a live, writable `struct ptp_sys_offset` of the
        // size the request number encodes; the kernel fills its samples.
        let rc = unsafe {
            libc::ioctl(
                self.file.as_raw_fd(),
                PTP_SYS_OFFSET,
                std::ptr::from_mut(&mut req),
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        narrowest(&req.ts[..2 * n + 1]).ok_or_else(|| io::Error::other("no PHC sample"))
    }
}

/// The sample whose two system reads lie closest together (`None`: no
/// sample at all).
fn narrowest(ts: &[PtpClockTime]) -> Option<PhcReading> {
    ts.windows(3)
        .step_by(2)
        .map(|w| {
            let (before, phc, after) = (w[0].ns(), w[1].ns(), w[2].ns());
            PhcReading {
                system_ns: before + (after - before) / 2,
                phc_ns: phc,
                window_ns: after - before,
            }
        })
        .min_by_key(|r| r.window_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ns: i64) -> PtpClockTime {
        PtpClockTime {
            sec: ns / 1_000_000_000,
            nsec: (ns % 1_000_000_000) as u32,
            reserved: 0,
        }
    }

    #[test]
    fn the_request_number_is_the_kernels() {
        // linux/ptp_clock.h on x86-64: 832-byte struct, '=' 5, write.
        assert_eq!(size_of::<PtpSysOffset>(), 832);
        assert_eq!(PTP_SYS_OFFSET, 0x4340_3d05);
    }

    #[test]
    fn the_narrowest_bracket_is_kept_and_centred() {
        // sys 1000, phc 50, sys 1400 | phc 60, sys 1500 (window 100).
        let ts = [t(1_000), t(50), t(1_400), t(60), t(1_500)];
        let r = narrowest(&ts).unwrap();
        assert_eq!(r.window_ns, 100);
        assert_eq!(r.system_ns, 1_450);
        assert_eq!(r.phc_ns, 60);
        assert_eq!(narrowest(&ts[..1]), None);
    }

    #[test]
    fn a_missing_clock_is_an_error_not_a_panic() {
        let e = Phc::open(4_000_000).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
