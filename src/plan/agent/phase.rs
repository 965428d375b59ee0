//! Keeping a mesh out of step, and under its packet budget.
//!
//! Every agent starts its peers' schedules at a phase drawn from a hash of
//! the host pair (source, peer): the same pair always gets the same phase
//! (restarts and reloads do not move it), and the N agents of a mesh, all
//! started by one deployment at once, do not fire together. The total rate
//! of a mesh is then N × peers × rate, spread evenly over each interval.

use super::PeerConfig;
use crate::error::AppError;
use std::time::Duration;

/// FNV-1a, 64 bits: stable across builds and platforms (std's hasher is
/// not promised to be), and spreads short names well.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The offset of the first probe from `source` to `peer` into an interval.
pub fn phase_of(source: &str, peer: &str, interval: Duration) -> Duration {
    let span = interval.as_nanos().max(1) as u64;
    Duration::from_nanos(fnv1a(&[source, peer]) % span)
}

/// Probes per second the peers send together.
pub fn total_pps(peers: &[PeerConfig]) -> f64 {
    peers
        .iter()
        .map(|p| 1.0 / p.schedule.interval.as_secs_f64())
        .sum()
}

/// Refuses a configuration whose peers together exceed `max_pps`.
pub fn check_rate(peers: &[PeerConfig], max_pps: f64) -> Result<(), AppError> {
    let total = total_pps(peers);
    if total > max_pps * (1.0 + 1e-9) {
        return Err(AppError::Usage(format!(
            "{} would send {} probes/s, over max_pps {} \
             (lengthen the intervals, or raise --max-pps)",
            synapse_units::count_of(peers.len() as u64, "peer"),
            synapse_units::group_thousands(total.round() as u64),
            synapse_units::group_thousands(max_pps.round() as u64)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(name: &str, interval: Duration) -> PeerConfig {
        let mut p = PeerConfig::for_test(name, "127.0.0.1:8080".parse().unwrap());
        p.schedule.interval = interval;
        p.phase = phase_of("a", name, interval);
        p
    }

    #[test]
    fn a_pair_always_gets_the_same_phase_and_pairs_differ() {
        let i = Duration::from_millis(100);
        assert_eq!(phase_of("a", "b", i), phase_of("a", "b", i));
        assert_ne!(phase_of("a", "b", i), phase_of("b", "a", i));
        assert!(phase_of("a", "b", i) < i);
        // The boundary between the two names counts: "ab"+"c" ≠ "a"+"bc".
        assert_ne!(phase_of("ab", "c", i), phase_of("a", "bc", i));
    }

    /// A fake clock: every send of a 50-host full mesh at 10 ms over one
    /// interval, in 100 µs bins. In step, all 2,450 would share one bin;
    /// spread, the busiest bin holds a few times the mean (24.5).
    #[test]
    fn a_mesh_spreads_over_the_interval() {
        let interval = Duration::from_millis(10);
        let hosts: Vec<String> = (0..50).map(|i| format!("host-{i}")).collect();
        let mut bins = vec![0u32; 100];
        for a in &hosts {
            for b in hosts.iter().filter(|b| *b != a) {
                let at = phase_of(a, b, interval).as_nanos() as usize;
                bins[at / 100_000] += 1;
            }
        }
        let busiest = *bins.iter().max().unwrap();
        let empty = bins.iter().filter(|&&n| n == 0).count();
        assert!(
            busiest <= 50,
            "busiest 100 µs holds {busiest} of 2,450 sends"
        );
        assert_eq!(empty, 0, "no stretch of the interval is left idle");
    }

    #[test]
    fn max_pps_refuses_what_would_exceed_it_and_allows_the_exact_budget() {
        let peers: Vec<PeerConfig> = (0..100)
            .map(|i| peer(&format!("p{i}"), Duration::from_millis(10)))
            .collect();
        assert!((total_pps(&peers) - 10_000.0).abs() < 1e-6);
        assert!(check_rate(&peers, 10_000.0).is_ok());
        let err = check_rate(&peers, 9_999.0).unwrap_err().to_string();
        assert_eq!(
            err,
            "100 peers would send 10,000 probes/s, over max_pps 9,999 (lengthen the intervals, or raise --max-pps)"
        );
    }
}
