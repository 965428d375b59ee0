//! The `m` key: what was measured so far becomes a reference, and the
//! figures pane shows the running comparison with it: p50 and p99 in
//! percent of the reference, each marked `*` once the difference is
//! beyond this run's own noise (the interval of `synapse compare`, one
//! run a side: a block bootstrap over half-second intervals). Both sides
//! come from one run, so run-to-run variation, which keeps `compare`
//! from calling one run a side significant, is not in the way here. The bootstrap runs on the display's thread, so
//! it is kept small: a minute a side at most, worked out every 2 s.

use crate::session::IntervalTap;
use std::time::{Duration, Instant};
use synapse_stats::Record;
use synapse_stats::significance::{Figure, MIN_INTERVALS, Run, compare};

/// The intervals compared.
const INTERVAL: Duration = Duration::from_millis(500);
/// Intervals a side at most (the last minute).
const WINDOW: usize = 120;
/// How often the comparison is worked out again.
const EVERY: Duration = Duration::from_secs(2);

/// The reference and what came since.
#[derive(Debug)]
pub struct Versus {
    tap: IntervalTap,
    reference: Option<Run>,
    next: Option<Instant>,
    view: Option<(String, bool)>,
}

impl Default for Versus {
    fn default() -> Self {
        Self::new()
    }
}

impl Versus {
    /// No reference yet.
    pub fn new() -> Self {
        Self {
            tap: IntervalTap::in_memory(INTERVAL),
            reference: None,
            next: None,
            view: None,
        }
    }

    /// A run starts; its lost requests waited `timeout`.
    pub fn start_run(&mut self, timeout: Duration) {
        self.tap.start_run(timeout);
    }

    /// Accounts for a record.
    pub fn record(&mut self, r: &Record) {
        self.tap.record(r);
        // Only the last minute is ever compared: a long session must not
        // keep every interval's histograms.
        self.tap.keep_last(WINDOW);
    }

    fn recent(&self) -> &[synapse_stats::intervals::Interval] {
        let kept = self.tap.kept();
        &kept[kept.len().saturating_sub(WINDOW)..]
    }

    /// Marks the reference; what to tell the user.
    pub fn mark(&mut self) -> String {
        let recent = self.recent();
        if recent.len() < MIN_INTERVALS {
            return format!(
                "nothing to mark yet: a reference needs {} s of measuring",
                MIN_INTERVALS as u64 * INTERVAL.as_millis() as u64 / 1000
            );
        }
        let secs = recent.len() as f64 * INTERVAL.as_secs_f64();
        self.reference = Some(Run::from_intervals("reference", recent, ""));
        self.tap.cut();
        self.next = None;
        self.view = Some((" vs mark: measuring… ".into(), false));
        format!(
            "marked the last {secs:.0} s as the reference: the figures pane compares with it (* beyond this run's own noise)"
        )
    }

    /// The text to show now.
    pub fn view(&self) -> Option<(String, bool)> {
        self.view.clone()
    }

    /// Works the comparison out again when it is due; the new view.
    pub fn update(&mut self, now: Instant) -> Option<(String, bool)> {
        let reference = self.reference.as_ref()?;
        if self.next.is_some_and(|n| now < n) {
            return None;
        }
        self.next = Some(now + EVERY);
        let recent = self.recent();
        if recent.len() < MIN_INTERVALS {
            return self.view.clone();
        }
        let current = Run::from_intervals("now", recent, "");
        let c = compare(std::slice::from_ref(reference), &[current], None);
        let mut text = String::from(" vs mark");
        let mut any = false;
        for f in c
            .figures
            .iter()
            .filter(|f| matches!(f.figure, Figure::P50 | Figure::P99))
        {
            // In percent of the reference, like the baseline's change:
            // it fits under the figures where a time would not.
            let Some(d) = f.difference_percent else {
                continue;
            };
            let star = if f.excludes_zero { "*" } else { "" };
            any |= f.excludes_zero;
            let d = synapse_units::signed(d, 0);
            text.push_str(&format!(" {} {d}%{star}", f.figure.name()));
        }
        text.push(' ');
        self.view = Some((text, any));
        self.view.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(v: &mut Versus, from_ms: u64, ms: u64, rtt: u64) {
        for k in 0..ms * 10 {
            let at = (from_ms * 10 + k) * 100_000;
            let jitter = (k * 7919) % 2_000;
            v.record(&Record::sample(k, at, rtt + jitter, false));
        }
    }

    #[test]
    fn a_shift_after_the_mark_shows_as_significant_and_no_shift_does_not() {
        let mut v = Versus::new();
        v.start_run(Duration::from_millis(100));
        feed(&mut v, 0, 1_000, 50_000);
        assert!(
            v.mark().starts_with("nothing to mark yet"),
            "one second is too little"
        );
        feed(&mut v, 1_000, 4_000, 50_000);
        let marked = v.mark();
        assert!(
            marked.starts_with("marked the last ") && marked.contains(" s as the reference"),
            "{marked}"
        );
        let t0 = Instant::now();
        feed(&mut v, 5_000, 1_000, 50_000);
        assert_eq!(v.update(t0), Some((" vs mark: measuring… ".into(), false)));
        feed(&mut v, 6_000, 4_000, 50_000);
        let (text, significant) = v.update(t0 + EVERY).unwrap();
        assert!(!significant, "{text}");
        assert!(text.starts_with(" vs mark p50 "), "{text}");
        assert!(v.update(t0 + EVERY).is_none(), "not again before EVERY");
        feed(&mut v, 10_000, 6_000, 80_000);
        let (text, significant) = v.update(t0 + 2 * EVERY).unwrap();
        assert!(significant, "{text}");
        assert!(text.contains("p50 +") && text.contains('*'), "{text}");
        // Two and a half minutes more: only the last minute is kept.
        feed(&mut v, 16_000, 150_000, 80_000);
        assert_eq!(v.tap.kept().len(), WINDOW);
    }
}
