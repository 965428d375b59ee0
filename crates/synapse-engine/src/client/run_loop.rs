//! The run every ping-pong client shares (UDP, TCP, TCP connect-each):
//! warm-up first, then packets until the budget (a count or a time,
//! counted from the first measured packet) is spent or stop is raised;
//! what is still open closes when the run ends. Each transport says only
//! what it does around one exchange ([`Exchanges`]); the loop is generic,
//! so each gets its own inlined copy, with no indirection per packet.

use super::{ClientConfig, ClientOutcome, StampingInfo};
use crate::affinity::Placement;
use crate::mono::Mono;
use crate::{EngineError, StopFlag};
use std::time::Duration;
use synapse_stats::Stats;

/// How one packet ended: whether stop was raised while it was in flight
/// (then it is not counted), and when; an error ends the run.
pub(super) type Packet = Result<(bool, Mono), EngineError>;

/// What a transport does in the shared run.
pub(super) trait Exchanges {
    /// Before packet `seq` (the previous exchange ended at `last`): the
    /// transport's housekeeping, and a paced slot's wait. `true`: stop was
    /// raised meanwhile, the run ends.
    fn before(&mut self, seq: u64, warmup: bool, last: Mono, stop: &StopFlag) -> bool;

    /// Packet `seq`, sent and settled. An error ends the run (a refused
    /// or silent peer, a failing socket).
    fn packet(&mut self, cfg: &ClientConfig, seq: u64, warmup: bool, stop: &StopFlag) -> Packet;

    /// The run is over after `seq` packets, the last ended at `last`:
    /// whatever is still open (an outage, a connection) closes.
    fn finish(&mut self, seq: u64, last: Mono);

    /// How long the peer had been silent when the run gave up on it
    /// (`ClientConfig::give_up_after`; the transport's `packet` then
    /// returned as stopped).
    fn gave_up(&self) -> Option<Duration>;

    /// The run's statistics, and what had no room: records in the live
    /// ring, rows in the log's.
    fn tallies(&self) -> (&Stats, u64, u64);

    /// The loop's outcome with what is the transport's own added (stale
    /// stamps, TCP figures, extensions).
    fn outcome(&self, cfg: &ClientConfig, base: ClientOutcome) -> ClientOutcome;
}

/// Runs `e` until its budget is spent or `stop` is raised.
#[inline]
pub(super) fn run<E: Exchanges>(
    e: &mut E,
    cfg: &ClientConfig,
    stop: &StopFlag,
    placement: Placement,
) -> Result<ClientOutcome, EngineError> {
    let mut measure_start: Option<Mono> = None;
    let mut seq = 0u64;
    let mut last = Mono::now();
    while !stop.is_raised() {
        let warmup = seq < cfg.warmup;
        if !warmup {
            let start = *measure_start.get_or_insert(last);
            if cfg.budget_spent(seq - cfg.warmup, start, last) {
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
    let (stats, ring_overflow, log_overflow) = e.tallies();
    let base = ClientOutcome {
        stats: stats.clone(),
        measured: measure_start.map_or(Duration::ZERO, |s| last.duration_since(s)),
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
        gave_up: e.gave_up(),
        group: None,
    };
    Ok(e.outcome(cfg, base))
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
        stats: Stats,
        gave_up: Option<Duration>,
    }

    impl Exchanges for Counting {
        fn before(&mut self, _: u64, _: bool, _: Mono, _: &StopFlag) -> bool {
            false
        }
        fn packet(&mut self, _: &ClientConfig, seq: u64, warmup: bool, _: &StopFlag) -> Packet {
            self.exchanged.push((seq, warmup));
            Ok((self.stop_at == Some(seq), Mono::now()))
        }
        fn finish(&mut self, seq: u64, _: Mono) {
            self.finished = Some(seq);
        }
        fn gave_up(&self) -> Option<Duration> {
            self.gave_up
        }
        fn tallies(&self) -> (&Stats, u64, u64) {
            (&self.stats, 1, 2)
        }
        fn outcome(&self, _: &ClientConfig, base: ClientOutcome) -> ClientOutcome {
            base
        }
    }

    fn placement() -> Placement {
        Placement {
            cpu: 0,
            cpu_auto: true,
            realtime: false,
            kept_awake: false,
            refused: None,
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
        let outcome = run(&mut c, &config(3, 2), &StopFlag::new(), placement()).unwrap();
        assert!(!outcome.interrupted);
        assert_eq!((outcome.ring_overflow, outcome.log_overflow), (1, 2));
        let warm: Vec<bool> = c.exchanged.iter().map(|&(_, w)| w).collect();
        assert_eq!(warm, [true, true, false, false, false]);
        assert_eq!(c.finished, Some(5));
    }

    #[test]
    fn a_transport_that_gave_up_ends_the_run_uninterrupted_and_says_how_long() {
        let mut c = Counting {
            stop_at: Some(3),
            gave_up: Some(Duration::from_secs(5)),
            ..Counting::default()
        };
        let outcome = run(&mut c, &config(100, 0), &StopFlag::new(), placement()).unwrap();
        assert_eq!(c.exchanged.len(), 4);
        assert_eq!(outcome.gave_up, Some(Duration::from_secs(5)));
        assert!(!outcome.interrupted);
    }

    #[test]
    fn a_stopped_exchange_is_not_counted() {
        let mut c = Counting {
            stop_at: Some(1),
            ..Counting::default()
        };
        run(&mut c, &config(10, 0), &StopFlag::new(), placement()).unwrap();
        assert_eq!(c.exchanged.len(), 2);
        assert_eq!(c.finished, Some(1), "packet 1 was stopped in flight");
    }
}
