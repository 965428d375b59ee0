//! CPU-side figures: clock reads, a syscall, token passing between two
//! threads, and how late a short sleep wakes.

use super::{Effort, Figure};
use crate::sys::{self, floor as raw};
use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Operations timed together for one sample of the cheap figures: one
/// clock read around a single 20 ns operation would measure the clock.
const BATCH: usize = 1_000;

/// The cost of one clock read: `CLOCK_MONOTONIC` (through the vDSO) and
/// `CLOCK_REALTIME`, pinned to `cpu`.
pub fn clock_read(cpu: usize, effort: Effort) -> io::Result<(Figure, Figure)> {
    sys::affinity::pin_current_thread(cpu)?;
    let mono = per_op(effort, || {
        std::hint::black_box(Instant::now());
    });
    let real = per_op(effort, || {
        std::hint::black_box(sys::clock::realtime_ns());
    });
    Ok((mono, real))
}

/// The cost of a trivial syscall (`getpid`: the kernel does next to
/// nothing, so this is the crossing alone), pinned.
pub fn syscall(cpu: usize, effort: Effort) -> io::Result<Figure> {
    sys::affinity::pin_current_thread(cpu)?;
    Ok(per_op(effort, || {
        std::hint::black_box(raw::getpid_syscall());
    }))
}

/// Samples of `BATCH` operations each, divided: ns per operation.
fn per_op(effort: Effort, mut op: impl FnMut()) -> Figure {
    let mut samples = vec![0.0; effort.scale(2_000)];
    for s in &mut samples {
        let t = Instant::now();
        for _ in 0..BATCH {
            op();
        }
        *s = t.elapsed().as_nanos() as f64 / BATCH as f64;
    }
    Figure::of(&mut samples).unwrap_or(Figure {
        p50_ns: 0.0,
        p99_ns: 0.0,
    })
}

/// A byte passed back and forth over two pipes between a thread on `a`
/// and one on `b`: half a round trip is one hand-over. On one CPU that is
/// a context switch; across two, a wake-up of a sleeping thread.
pub fn context_switch(a: usize, b: usize, effort: Effort) -> io::Result<Figure> {
    let (ping_rx, ping_tx) = raw::pipe()?;
    let (pong_rx, pong_tx) = raw::pipe()?;
    let rounds = effort.scale(20_000);
    let echo = std::thread::Builder::new()
        .name("synapse-floor".into())
        .spawn(move || -> io::Result<()> {
            sys::affinity::pin_current_thread(b)?;
            // Until the other side closes its end.
            while raw::take_byte(ping_rx.as_raw_fd()).is_ok() {
                raw::put_byte(pong_tx.as_raw_fd())?;
            }
            Ok(())
        })?;
    let measured = (|| -> io::Result<Vec<f64>> {
        sys::affinity::pin_current_thread(a)?;
        let mut samples = vec![0.0; rounds];
        // The first hand-overs wake a cold thread: not counted.
        for i in 0..rounds + 100 {
            let t = Instant::now();
            raw::put_byte(ping_tx.as_raw_fd())?;
            raw::take_byte(pong_rx.as_raw_fd())?;
            if let Some(s) = i.checked_sub(100).and_then(|i| samples.get_mut(i)) {
                *s = t.elapsed().as_nanos() as f64 / 2.0;
            }
        }
        Ok(samples)
    })();
    drop(ping_tx);
    let echoed = echo
        .join()
        .map_err(|_| io::Error::other("the echo thread panicked"))?;
    let mut samples = measured?;
    echoed?;
    Figure::of(&mut samples).ok_or_else(|| io::Error::other("no samples"))
}

/// How late a 100 µs sleep ends (timer slack at 1 ns, as paced runs set
/// it), pinned.
pub fn timer_overshoot(cpu: usize, effort: Effort) -> io::Result<Figure> {
    const SLEEP: Duration = Duration::from_micros(100);
    sys::affinity::pin_current_thread(cpu)?;
    sys::sched::set_timer_slack(1)?;
    let mut samples = vec![0.0; effort.scale(2_000)];
    for s in &mut samples {
        let t = Instant::now();
        std::thread::sleep(SLEEP);
        *s = t.elapsed().saturating_sub(SLEEP).as_nanos() as f64;
    }
    Figure::of(&mut samples).ok_or_else(|| io::Error::other("no samples"))
}
