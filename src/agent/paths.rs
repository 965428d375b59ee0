//! Each peer's paths (`--paths K`): K source ports, so K flows, which ECMP
//! may hash onto K different routes. Per path the agent keeps the window's
//! loss and median RTT; what leaves it is bounded: per peer the worst
//! path's loss and median, and the spread between paths (metrics), and
//! each path's port and figures in the `--json` lines and the live table.
//! No series per port: K × peers series would be the N² problem again.

use hdrhistogram::Histogram;
use serde::Serialize;
use synapse_stats::{MAX_TRACKABLE_NS, Record, RecordKind};

/// One path's figures over a window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PathFigures {
    /// Its source port.
    pub port: u16,
    /// Probes whose fate is known.
    pub sent: u64,
    /// Without a timely reply.
    pub lost: u64,
    /// `lost / sent`, percent (`None`: nothing sent).
    pub loss_percent: Option<f64>,
    /// Median RTT, ns (`None`: no reply).
    pub rtt_p50_ns: Option<u64>,
}

/// What the paths of one peer say together, over a window.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct PathSpread {
    /// The path that lost the most (the highest loss, then the slowest).
    pub worst_port: Option<u16>,
    /// Its loss, percent.
    pub worst_loss_percent: Option<f64>,
    /// Highest loss less lowest, percentage points.
    pub loss_spread_percent: Option<f64>,
    /// The highest of the paths' medians, ns.
    pub worst_rtt_p50_ns: Option<u64>,
    /// Highest median less lowest, ns.
    pub rtt_p50_spread_ns: Option<u64>,
    /// Paths that lost anything.
    pub lossy: usize,
}

/// One path's window being filled.
#[derive(Debug, Clone)]
struct PathWindow {
    sent: u64,
    lost: u64,
    /// One significant digit: a path's median to ~10 %, in about a
    /// kilobyte, so a thousand peers × 8 paths stay small.
    rtt: Histogram<u16>,
}

impl PathWindow {
    fn new() -> Self {
        #[allow(clippy::expect_used)]
        let rtt = Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, 1)
            .expect("constant histogram bounds are valid");
        Self {
            sent: 0,
            lost: 0,
            rtt,
        }
    }
}

/// A peer's paths: one window each.
#[derive(Debug, Clone, Default)]
pub struct PeerPaths {
    windows: Vec<PathWindow>,
    /// The last whole window's figures, one per path.
    pub last: Vec<PathFigures>,
}

impl PeerPaths {
    /// Adds a record about path `path` (warm-up excluded).
    pub fn record(&mut self, path: usize, r: &Record) {
        if r.warmup {
            return;
        }
        if self.windows.len() <= path {
            self.windows.resize_with(path + 1, PathWindow::new);
        }
        let w = &mut self.windows[path];
        match r.kind {
            RecordKind::Sample => {
                w.sent += 1;
                // Saturating: a u16 bucket full at 65,535 stays a median.
                w.rtt.saturating_record(r.rtt_ns.clamp(1, MAX_TRACKABLE_NS));
            }
            RecordKind::Lost => {
                w.sent += 1;
                w.lost += 1;
            }
            _ => {}
        }
    }

    /// Ends the window: each path's figures (ports from `ports`, by path).
    pub fn turn(&mut self, ports: &[u16]) -> &[PathFigures] {
        self.last = self
            .windows
            .iter_mut()
            .enumerate()
            .map(|(i, w)| {
                let f = PathFigures {
                    port: ports.get(i).copied().unwrap_or(0),
                    sent: w.sent,
                    lost: w.lost,
                    loss_percent: (w.sent > 0).then(|| w.lost as f64 * 100.0 / w.sent as f64),
                    rtt_p50_ns: (!w.rtt.is_empty()).then(|| w.rtt.value_at_quantile(0.5)),
                };
                w.sent = 0;
                w.lost = 0;
                w.rtt.reset();
                f
            })
            .collect();
        &self.last
    }
}

/// The worst path and the spread, over paths that sent anything.
pub fn spread(paths: &[PathFigures]) -> PathSpread {
    let live: Vec<&PathFigures> = paths.iter().filter(|p| p.sent > 0).collect();
    let losses: Vec<f64> = live.iter().filter_map(|p| p.loss_percent).collect();
    let medians: Vec<u64> = live.iter().filter_map(|p| p.rtt_p50_ns).collect();
    let worst = live.iter().max_by(|a, b| {
        let key = |p: &PathFigures| {
            (
                p.loss_percent.unwrap_or(0.0),
                p.rtt_p50_ns.unwrap_or(u64::MAX),
            )
        };
        let (ka, kb) = (key(a), key(b));
        ka.0.total_cmp(&kb.0).then(ka.1.cmp(&kb.1))
    });
    let range_f = |v: &[f64]| {
        let hi = v.iter().copied().fold(f64::MIN, f64::max);
        let lo = v.iter().copied().fold(f64::MAX, f64::min);
        (!v.is_empty()).then_some(hi - lo)
    };
    PathSpread {
        worst_port: worst.map(|p| p.port),
        worst_loss_percent: worst.and_then(|p| p.loss_percent),
        loss_spread_percent: range_f(&losses),
        worst_rtt_p50_ns: medians.iter().max().copied(),
        rtt_p50_spread_ns: medians
            .iter()
            .max()
            .zip(medians.iter().min())
            .map(|(h, l)| h - l),
        lossy: live.iter().filter(|p| p.lost > 0).count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rtt: u64) -> Record {
        Record::sample(0, 0, rtt, false)
    }

    fn lost() -> Record {
        Record::event(RecordKind::Lost, 0, 0, false)
    }

    #[test]
    fn each_path_counts_its_own_and_the_worst_is_the_lossiest() {
        let mut p = PeerPaths::default();
        for i in 0..100 {
            p.record(0, &sample(20_000));
            p.record(1, &if i % 4 == 0 { lost() } else { sample(30_000) });
            p.record(2, &sample(25_000));
        }
        p.record(1, &Record::event(RecordKind::Lost, 0, 0, true)); // warm-up
        let f = p.turn(&[40_001, 40_002, 40_003]).to_vec();
        assert_eq!(f.len(), 3);
        assert_eq!((f[1].port, f[1].sent, f[1].lost), (40_002, 100, 25));
        assert_eq!(f[1].loss_percent, Some(25.0));
        assert_eq!(f[0].loss_percent, Some(0.0));
        let s = spread(&f);
        assert_eq!(s.worst_port, Some(40_002));
        assert_eq!(
            (s.worst_loss_percent, s.loss_spread_percent),
            (Some(25.0), Some(25.0))
        );
        assert_eq!(s.lossy, 1);
        // One significant digit: medians to within ~10 %.
        let (hi, sp) = (s.worst_rtt_p50_ns.unwrap(), s.rtt_p50_spread_ns.unwrap());
        assert!(hi.abs_diff(30_000) <= 3_000, "{hi}");
        assert!(sp.abs_diff(10_000) <= 4_000, "{sp}");
        // The next window starts empty.
        let f = p.turn(&[40_001, 40_002, 40_003]).to_vec();
        assert!(f.iter().all(|p| p.sent == 0 && p.loss_percent.is_none()));
        assert_eq!(spread(&f), PathSpread::default());
    }

    #[test]
    fn without_loss_the_slowest_path_is_the_worst() {
        let mut p = PeerPaths::default();
        p.record(0, &sample(20_000));
        p.record(1, &sample(90_000));
        let f = p.turn(&[1, 2]).to_vec();
        assert_eq!(spread(&f).worst_port, Some(2));
        assert_eq!(spread(&f).lossy, 0);
    }
}
