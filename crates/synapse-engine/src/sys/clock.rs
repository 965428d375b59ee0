//! The system clock: `CLOCK_REALTIME`, the clock software stamps are in
//! (so user-space points can be subtracted from them), and what the
//! kernel says of its synchronisation.

use std::mem::zeroed;

/// Nanoseconds since the Unix epoch, `CLOCK_REALTIME`. (vDSO: no syscall.)
#[inline]
pub fn realtime_ns() -> u64 {
    // SAFETY: timespec is plain old data; all-zero is valid.
    let mut ts: libc::timespec = unsafe { zeroed() };
    // SAFETY: ts is a live timespec; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &raw mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds of `CLOCK_MONOTONIC`, the clock `Instant` reads. (vDSO:
/// no syscall.)
#[inline]
pub fn monotonic_ns() -> u64 {
    // SAFETY: timespec is plain old data; all-zero is valid.
    let mut ts: libc::timespec = unsafe { zeroed() };
    // SAFETY: ts is a live timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What the kernel says of the system clock (`adjtimex` with modes 0, as
/// `ntp_adjtime` reads it): whether it is synchronised (a time daemon
/// clears `STA_UNSYNC`; the call returns `TIME_ERROR` otherwise), its
/// maximum error and its estimated error, µs. `None` when it cannot be
/// asked.
pub fn clock_sync() -> Option<(bool, u64, u64)> {
    // SAFETY: timex is plain data; all zeroes (modes 0) asks without setting.
    let mut tx: libc::timex = unsafe { zeroed() };
    // SAFETY: tx is a live, writable timex; modes 0 only reads.
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return None;
    }
    let synced = state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0;
    Some((synced, tx.maxerror.max(0) as u64, tx.esterror.max(0) as u64))
}
