//! The run every ping-pong client shares (UDP, TCP, TCP connect-each):
//! warm-up first, then packets until the budget (a count or a time,
//! counted from the first measured packet) is spent or stop is raised;
//! what is still open closes when the run ends. Each transport says only
//! what it does around one exchange ([`Exchanges`]); the loop is generic,
//! so each gets its own inlined copy, with no indirection per packet.

use super::{ClientConfig, ClientOutcome, StampingInfo};
use crate::affinity::Placement;
use crate::{EngineError, StopFlag};
use std::time::{Duration, Instant};
use synapse_stats::Stats;

/// What a transport does in the shared run.
pub(super) trait Exchanges {
    /// Before packet `seq` (the previous exchange ended at `last`): the
    /// transport's housekeeping, and a paced slot's wait. `true`: stop was
    /// raised meanwhile, the run ends.
    fn before(&mut self, seq: u64, warmup: bool, last: Instant, stop: &StopFlag) -> bool;

    /// Packet `seq`, sent and settled: whether stop was raised while it
    /// was in flight (then it is not counted), and when it ended. An error
    /// ends the run (a refused or silent peer, a failing socket).
    fn packet(
        &mut self,
        cfg: &ClientConfig,
        seq: u64,
        warmup: bool,
        stop: &StopFlag,
    ) -> Result<(bool, Instant), EngineError>;

    /// The run is over after `seq` packets, the last ended at `last`:
    /// whatever is still open (an outage, a connection) closes.
    fn finish(&mut self, seq: u64, last: Instant);
}

/// How far a run got.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ran {
    /// When its last exchange ended.
    pub last: Instant,
    /// From its first measured packet to `last`.
    pub measured: Duration,
}

/// Runs `e` until its budget is spent or `stop` is raised.
#[inline]
pub(super) fn run<E: Exchanges>(
    e: &mut E,
    cfg: &ClientConfig,
    stop: &StopFlag,
) -> Result<Ran, EngineError> {
    let mut measure_start: Option<Instant> = None;
    let mut seq = 0u64;
    let mut last = Instant::now();
    while !stop.is_raised() {
        let warmup = seq < cfg.warmup;
        if !warmup {
            let start = *measure_start.get_or_insert(last);
            if cfg.budget_spent(seq - cfg.warmup, last.duration_since(start)) {
                break;
            }
        }
        if e.before(seq, warmup, last, stop) {
            break;
        }
        let (stopped, now) = e.packet(cfg, seq, warmup, stop)?;
        last = now;
        if stopped {
            break;
        }
        seq += 1;
    }
    e.finish(seq, last);
    Ok(Ran {
        last,
        measured: measure_start.map_or(Duration::ZERO, |s| last.duration_since(s)),
    })
}

impl ClientOutcome {
    /// The outcome of a ping-pong run: its figures and counters; the
    /// transport fills in what is its own (stamps, TCP, extensions).
    pub(super) fn of_run(
        stats: Stats,
        ran: Ran,
        placement: Placement,
        stop: &StopFlag,
        ring_overflow: u64,
        log_overflow: u64,
    ) -> Self {
        Self {
            stats,
            measured: ran.measured,
            placement,
            interrupted: stop.is_raised(),
            ring_overflow,
            log_overflow,
            stale_stamps: 0,
            unauthenticated: 0,
            stamping: StampingInfo::default(),
            tcp: None,
            extensions: None,
            nic_clock: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    /// Counts what the loop asks of it; stops itself at `stop_at`.
    #[derive(Default)]
    struct Counting {
        exchanged: Vec<(u64, bool)>,
        finished: Option<u64>,
        stop_at: Option<u64>,
    }

    impl Exchanges for Counting {
        fn before(&mut self, _: u64, _: bool, _: Instant, _: &StopFlag) -> bool {
            false
        }
        fn packet(
            &mut self,
            _: &ClientConfig,
            seq: u64,
            warmup: bool,
            _: &StopFlag,
        ) -> Result<(bool, Instant), EngineError> {
            self.exchanged.push((seq, warmup));
            Ok((self.stop_at == Some(seq), Instant::now()))
        }
        fn finish(&mut self, seq: u64, _: Instant) {
            self.finished = Some(seq);
        }
    }

    fn config(packets: u64, warmup: u64) -> ClientConfig {
        let server: SocketAddr = "127.0.0.1:9".parse().expect("an address");
        let mut cfg = ClientConfig::new(server);
        cfg.packets = Some(packets);
        cfg.warmup = warmup;
        cfg
    }

    #[test]
    fn warm_up_then_the_budget_then_finish() {
        let mut c = Counting::default();
        run(&mut c, &config(3, 2), &StopFlag::new()).unwrap();
        let warm: Vec<bool> = c.exchanged.iter().map(|&(_, w)| w).collect();
        assert_eq!(warm, [true, true, false, false, false]);
        assert_eq!(c.finished, Some(5));
    }

    #[test]
    fn a_stopped_exchange_is_not_counted() {
        let mut c = Counting {
            stop_at: Some(1),
            ..Counting::default()
        };
        run(&mut c, &config(10, 0), &StopFlag::new()).unwrap();
        assert_eq!(c.exchanged.len(), 2);
        assert_eq!(c.finished, Some(1), "packet 1 was stopped in flight");
    }
}
