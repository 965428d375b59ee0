//! Reading a NIC's hardware clock (PHC, `/dev/ptpN`) against the system
//! clock, as `phc2sys` does, with the best request the driver has:
//!
//! - `PTP_SYS_OFFSET_PRECISE`: a cross-timestamp the hardware takes of
//!   both clocks at one instant (window 0), where the driver has it;
//! - `PTP_SYS_OFFSET_EXTENDED`: each PHC read bracketed by system reads
//!   the driver takes right around the register access;
//! - `PTP_SYS_OFFSET`: each PHC read bracketed by system reads around the
//!   driver call (wider).
//!
//! Several samples are taken per reading and the narrowest bracket kept.

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

/// `struct ptp_sys_offset_extended`: per sample, system, PHC, system.
/// (`rsv[0]` is the system clock's id in kernels that have one; 0 is
/// `CLOCK_REALTIME`.)
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct PtpSysOffsetExtended {
    n_samples: u32,
    rsv: [u32; 3],
    ts: [[PtpClockTime; 3]; MAX_SAMPLES],
}

/// `struct ptp_sys_offset_precise`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct PtpSysOffsetPrecise {
    device: PtpClockTime,
    sys_realtime: PtpClockTime,
    sys_monoraw: PtpClockTime,
    rsv: [u32; 4],
}

const fn ioc(dir: libc::c_ulong, size: usize, nr: libc::c_ulong) -> libc::c_ulong {
    (dir << 30) | ((size as libc::c_ulong) << 16) | (0x3d << 8) | nr
}

/// `_IOW('=', 5, struct ptp_sys_offset)`.
const PTP_SYS_OFFSET: libc::c_ulong = ioc(1, size_of::<PtpSysOffset>(), 5);
/// `_IOWR('=', 8, struct ptp_sys_offset_precise)`.
const PTP_SYS_OFFSET_PRECISE: libc::c_ulong = ioc(3, size_of::<PtpSysOffsetPrecise>(), 8);
/// `_IOWR('=', 9, struct ptp_sys_offset_extended)`.
const PTP_SYS_OFFSET_EXTENDED: libc::c_ulong = ioc(3, size_of::<PtpSysOffsetExtended>(), 9);

/// How the PHC is read against the system clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum PhcMethod {
    /// `PTP_SYS_OFFSET_PRECISE`: a hardware cross-timestamp.
    Precise,
    /// `PTP_SYS_OFFSET_EXTENDED`: system reads around the register read.
    Extended,
    /// `PTP_SYS_OFFSET`: system reads around the driver call.
    Basic,
}

impl PhcMethod {
    /// The request's name, as reports give it.
    pub fn name(self) -> &'static str {
        match self {
            PhcMethod::Precise => "PTP_SYS_OFFSET_PRECISE",
            PhcMethod::Extended => "PTP_SYS_OFFSET_EXTENDED",
            PhcMethod::Basic => "PTP_SYS_OFFSET",
        }
    }
}

/// One reading of a PHC against the system clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhcReading {
    /// `CLOCK_REALTIME` half-way between the two system reads, ns.
    pub system_ns: i128,
    /// The PHC at that moment, ns.
    pub phc_ns: i128,
    /// The two system reads' distance apart, ns: the PHC was read
    /// somewhere inside it, so the reading is right within half of it.
    pub window_ns: i128,
}

/// A NIC's hardware clock, open for reading.
#[derive(Debug)]
pub struct Phc {
    file: File,
    method: PhcMethod,
}

impl Phc {
    /// Opens `/dev/ptp{index}` (the index `ethtool -T` shows) and finds
    /// the best request its driver answers.
    pub fn open(index: u32) -> io::Result<Self> {
        let file = File::open(format!("/dev/ptp{index}"))?;
        let mut phc = Self {
            file,
            method: PhcMethod::Precise,
        };
        for method in [PhcMethod::Precise, PhcMethod::Extended, PhcMethod::Basic] {
            phc.method = method;
            match phc.read(1) {
                Ok(_) => return Ok(phc),
                Err(e) if method == PhcMethod::Basic => return Err(e),
                Err(_) => {}
            }
        }
        Ok(phc)
    }

    /// The request in use.
    pub fn method(&self) -> PhcMethod {
        self.method
    }

    /// Reads the PHC `samples` times against the system clock and keeps
    /// the reading with the narrowest window (the least disturbed); a
    /// cross-timestamp is one sample of window 0.
    pub fn read(&self, samples: usize) -> io::Result<PhcReading> {
        let n = samples.clamp(1, MAX_SAMPLES);
        let reading = match self.method {
            PhcMethod::Precise => {
                let mut req = PtpSysOffsetPrecise::default();
                self.ioctl(PTP_SYS_OFFSET_PRECISE, std::ptr::from_mut(&mut req).cast())?;
                Some(PhcReading {
                    system_ns: req.sys_realtime.ns(),
                    phc_ns: req.device.ns(),
                    window_ns: 0,
                })
            }
            PhcMethod::Extended => {
                let mut req = PtpSysOffsetExtended {
                    n_samples: n as u32,
                    rsv: [0; 3],
                    ts: [[PtpClockTime::default(); 3]; MAX_SAMPLES],
                };
                self.ioctl(PTP_SYS_OFFSET_EXTENDED, std::ptr::from_mut(&mut req).cast())?;
                narrowest(req.ts[..n].iter().map(|s| (s[0], s[1], s[2])))
            }
            PhcMethod::Basic => {
                let mut req = PtpSysOffset {
                    n_samples: n as u32,
                    rsv: [0; 3],
                    ts: [PtpClockTime::default(); 2 * MAX_SAMPLES + 1],
                };
                self.ioctl(PTP_SYS_OFFSET, std::ptr::from_mut(&mut req).cast())?;
                let ts = &req.ts[..2 * n + 1];
                narrowest(ts.windows(3).step_by(2).map(|w| (w[0], w[1], w[2])))
            }
        };
        reading.ok_or_else(|| io::Error::other("no PHC sample"))
    }

    fn ioctl(&self, request: libc::c_ulong, arg: *mut libc::c_void) -> io::Result<()> {
        // SAFETY: every caller passes a live, writable struct of the size
        // `request` encodes (checked by the tests against the kernel's
        // numbers); the kernel writes only inside it.
        let rc = unsafe { libc::ioctl(self.file.as_raw_fd(), request, arg) };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

/// The sample whose two system reads lie closest together (`None`: no
/// sample at all).
fn narrowest(
    samples: impl Iterator<Item = (PtpClockTime, PtpClockTime, PtpClockTime)>,
) -> Option<PhcReading> {
    samples
        .map(|(before, phc, after)| {
            let (before, after) = (before.ns(), after.ns());
            PhcReading {
                system_ns: before + (after - before) / 2,
                phc_ns: phc.ns(),
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
    fn the_request_numbers_are_the_kernels() {
        // linux/ptp_clock.h on x86-64.
        assert_eq!(size_of::<PtpSysOffset>(), 832);
        assert_eq!(PTP_SYS_OFFSET, 0x4340_3d05);
        assert_eq!(size_of::<PtpSysOffsetExtended>(), 1216);
        assert_eq!(PTP_SYS_OFFSET_EXTENDED, 0xc4c0_3d09);
        assert_eq!(size_of::<PtpSysOffsetPrecise>(), 64);
        assert_eq!(PTP_SYS_OFFSET_PRECISE, 0xc040_3d08);
    }

    #[test]
    fn the_narrowest_bracket_is_kept_and_centred() {
        // sys 1000, phc 50, sys 1400 | sys 1400, phc 60, sys 1500.
        let samples = [(t(1_000), t(50), t(1_400)), (t(1_400), t(60), t(1_500))];
        let r = narrowest(samples.into_iter()).unwrap();
        assert_eq!(r.window_ns, 100);
        assert_eq!(r.system_ns, 1_450);
        assert_eq!(r.phc_ns, 60);
        assert_eq!(narrowest(std::iter::empty()), None);
    }

    #[test]
    fn a_missing_clock_is_an_error_not_a_panic() {
        let e = Phc::open(4_000_000).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
