//! The host's floor: what a clock read, a syscall, a context switch, a
//! wake-up, a timer and a loopback round trip cost here, each on pinned
//! threads, each as a median and a 99th percentile. Every application
//! round trip sits on these;
//! `synapse calibrate` reports them and runs are explained against them.

mod calibration;
mod cpu;
mod tcp;
mod udp;

pub use calibration::{Calibration, Figures};
pub use cpu::{clock_read, context_switch, syscall, timer_overshoot};
pub use tcp::tcp_round_trip;
pub use udp::{LoopbackFloor, udp_round_trip};

/// One figure: median and 99th percentile, ns.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Figure {
    /// Median, ns.
    pub p50_ns: f64,
    /// 99th percentile, ns.
    pub p99_ns: f64,
}

impl Figure {
    /// The median and 99th percentile of `samples` (ns); `None` if empty.
    pub fn of(samples: &mut [f64]) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_by(f64::total_cmp);
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Some(Self {
            p50_ns: at(0.5),
            p99_ns: at(0.99),
        })
    }
}

/// How long to measure: the full calibration, or `--quick` (about a
/// tenth).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    /// A few seconds in all.
    Full,
    /// About one second in all.
    Quick,
}

impl Effort {
    /// `full` repetitions, or a tenth of them when quick (at least 10).
    pub fn scale(self, full: usize) -> usize {
        match self {
            Self::Full => full,
            Self::Quick => (full / 10).max(10),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_is_the_median_and_the_99th_percentile() {
        let mut s: Vec<f64> = (1..=101).map(f64::from).rev().collect();
        assert_eq!(
            Figure::of(&mut s),
            Some(Figure {
                p50_ns: 51.0,
                p99_ns: 100.0
            })
        );
        assert_eq!(Figure::of(&mut []), None);
    }

    #[test]
    fn quick_is_a_tenth() {
        assert_eq!(Effort::Quick.scale(20_000), 2_000);
        assert_eq!(Effort::Quick.scale(50), 10);
        assert_eq!(Effort::Full.scale(50), 50);
    }
}
