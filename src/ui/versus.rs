//! The `m` key: what was measured so far becomes a reference, and the
//! figures pane shows the running comparison with it: p50 and p99 in
//! percent of the reference and the verdict of `synapse compare`'s test
//! (`regression`, `no regression` with `--min-effect`, or `inconclusive`),
//! with only this run's own noise in the interval (a block bootstrap over
//! half-second intervals): both sides come from one run, so the variation
//! between runs is not in the way here. The bootstrap runs on the
//! display's thread, so it is kept small: a minute a side at most, worked
//! out every 2 s.

use crate::session::IntervalTap;
use std::time::{Duration, Instant};
use synapse_stats::Record;
use synapse_stats::significance::{
    Figure, MIN_SLICES as MIN_INTERVALS, Options, Run, Spread, SpreadSource, Verdict, compare,
};

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
    /// `--min-effect`, percent: the margin of both tests.
    min_effect: Option<f64>,
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
            min_effect: None,
        }
    }

    /// The same, with `--min-effect` as the margin.
    #[must_use]
    pub fn with_min_effect(mut self, min_effect: Option<f64>) -> Self {
        self.min_effect = min_effect;
        self
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
            "marked the last {secs:.0} s as the reference: the figures pane compares with it (regression, no regression or inconclusive, within this run's own noise)"
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
        // Both sides are this run: no variation between runs to allow for.
        let opts = Options {
            min_effect_percent: self.min_effect,
            spread: Spread {
                source: SpreadSource::Assumed,
                log_sd: [0.0; 5],
                df: f64::INFINITY,
            },
        };
        let c = compare(std::slice::from_ref(reference), &[current], &opts);
        let mut text = String::from(" vs mark");
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
            let sign = if d < 0.0 { "−" } else { "+" };
            text.push_str(&format!(" {} {sign}{:.0}%", f.figure.name(), d.abs()));
        }
        let verdict = Verdict::all(
            c.figures
                .iter()
                .filter(|f| matches!(f.figure, Figure::P50 | Figure::P99))
                .map(|f| f.verdict),
        );
        text.push_str(&format!(": {} ", verdict.words()));
        self.view = Some((text, verdict == Verdict::Regression));
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
    fn a_shift_after_the_mark_is_a_regression_and_no_shift_is_not() {
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
        let (text, regression) = v.update(t0 + EVERY).unwrap();
        assert!(!regression, "{text}");
        assert!(text.starts_with(" vs mark p50 "), "{text}");
        assert!(
            text.ends_with(": inconclusive "),
            "no margin: never no regression: {text}"
        );
        assert!(v.update(t0 + EVERY).is_none(), "not again before EVERY");
        // A minute at 80 µs: the whole window since the mark is slower.
        feed(&mut v, 10_000, 61_000, 80_000);
        let (text, regression) = v.update(t0 + 2 * EVERY).unwrap();
        assert!(regression, "{text}");
        assert!(
            text.contains("p50 +") && text.ends_with(": regression "),
            "{text}"
        );
        // Two and a half minutes more: only the last minute is kept.
        feed(&mut v, 71_000, 150_000, 80_000);
        assert_eq!(v.tap.kept().len(), WINDOW);
    }

    #[test]
    fn with_a_margin_an_unchanged_run_shows_no_regression() {
        let mut v = Versus::new().with_min_effect(Some(10.0));
        v.start_run(Duration::from_millis(100));
        feed(&mut v, 0, 10_000, 50_000);
        v.mark();
        feed(&mut v, 10_000, 10_000, 50_000);
        let (text, regression) = v.update(Instant::now()).unwrap();
        assert!(!regression && text.ends_with(": no regression "), "{text}");
    }
}
