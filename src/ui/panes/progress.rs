//! The progress line: packets against the budget, elapsed and remaining.

use crate::ui::app::ClientView;
use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::widgets::Gauge;
use std::time::Duration;
use synapse_units::group_thousands;

fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The gauge's fill ratio and its label: during the warm-up, how far it
/// is (its packets are not counted), then the run's progress.
pub fn describe(v: &ClientView, running: bool) -> (f64, String) {
    let done = v.run_done;
    let elapsed = clock(v.run_elapsed);
    let warmup = v.info.warmup;
    if running && !v.live.warmed_up && warmup > 0 {
        return (
            (v.live.warmup_seen as f64 / warmup as f64).min(1.0),
            format!(
                "warm-up {}/{} (not counted)  [{elapsed}]",
                group_thousands(v.live.warmup_seen.min(warmup)),
                group_thousands(warmup)
            ),
        );
    }
    match (v.info.packets, v.info.duration) {
        (Some(total), _) => (
            (done as f64 / total.max(1) as f64).min(1.0),
            format!(
                "{}/{} packets  [{elapsed}]",
                group_thousands(done),
                group_thousands(total)
            ),
        ),
        (None, Some(budget)) => (
            (v.run_elapsed.as_secs_f64() / budget.as_secs_f64()).min(1.0),
            format!(
                "{} packets  [{elapsed}, {} left]",
                group_thousands(done),
                clock(budget.saturating_sub(v.run_elapsed))
            ),
        ),
        (None, None) => (
            if running { 1.0 } else { 0.0 },
            format!(
                "{} packets  [{elapsed}]  runs until stopped",
                group_thousands(done)
            ),
        ),
    }
}

/// The gauge's label with, when earlier runs since the clear are in the
/// report too, what the report will count: all of them.
pub fn label(v: &ClientView, running: bool) -> (f64, String) {
    let (ratio, label) = describe(v, running);
    let (n, t) = v.earlier;
    if n == 0 && t.is_zero() {
        return (ratio, label);
    }
    let all = n + v.run_done;
    let secs = (t + v.run_elapsed).as_secs_f64();
    (
        ratio,
        format!(
            "{label}  · since clear: {} packets, {secs:.2} s",
            group_thousands(all)
        ),
    )
}

/// Draws the progress gauge.
pub fn render(f: &mut Frame, area: Rect, v: &ClientView, running: bool, t: Theme) {
    let (ratio, label) = label(v, running);
    f.render_widget(
        Gauge::default()
            .ratio(ratio)
            .label(label)
            .gauge_style(t.good())
            .use_unicode(true),
        area,
    );
}
