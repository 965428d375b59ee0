//! How the measurement threads are scheduled: `SCHED_FIFO`, a timer slack
//! of a nanosecond, and CPUs kept out of deep idle states.

use super::errno::zero;
use std::io;

/// Moves the calling thread to `SCHED_FIFO` at the given priority.
pub fn set_fifo(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: param is a live sched_param; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &raw const param) };
    zero(rc)
}

/// A request that no CPU enter an idle state it takes longer than 0 µs to
/// leave (`/dev/cpu_dma_latency`, as cyclictest makes): idle CPUs poll
/// instead of halting, so a wake-up costs microseconds. The kernel drops
/// the request when the file closes, however the process ends.
#[derive(Debug)]
pub struct NoIdle(#[allow(dead_code)] std::fs::File);

impl NoIdle {
    /// Makes the request (root only, usually).
    pub fn request() -> io::Result<Self> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")?;
        f.write_all(&0i32.to_ne_bytes())?;
        Ok(Self(f))
    }
}

/// Lowers the calling thread's timer slack to `ns` (the kernel's default
/// lets a sleep end up to 50 µs late, to batch wake-ups).
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and changes only
    // the calling thread.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    zero(rc)
}
