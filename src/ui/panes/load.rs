//! A load run, live: the round trip over time coloured by phase (a
//! letter under each column says which, so no colour is needed to read
//! it), and beside it the phase, the load each way and where the current
//! phase's added delay sits so far.

use super::histogram::{Slot, draw_bar};
use super::sparklines::heights;
use crate::session::LoadLive;
use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use synapse_stats::load::{PhaseKind, stages};
use synapse_units::{format_bps, format_ns, signed_ns};

/// The side panel's width.
const SIDE: u16 = 40;

/// A phase's letter under the chart.
fn letter(k: PhaseKind) -> &'static str {
    match k {
        PhaseKind::Idle => "·",
        PhaseKind::Download => "D",
        PhaseKind::Upload => "U",
        PhaseKind::Bidirectional => "B",
    }
}

/// One column per bin of the run so far (or its latest part when the run
/// is longer than the columns at a quarter second each): each bin's
/// median round trip and the phase of its first probe.
pub fn columns(live: &LoadLive, width: usize) -> Vec<(Option<u64>, PhaseKind)> {
    let Some(last) = live.probes.back() else {
        return Vec::new();
    };
    let first = live.probes.front().map_or(0.0, |p| p.t_s);
    let span = (last.t_s - first).max(0.25);
    let bin = (span / width.max(1) as f64).max(0.25);
    let start = last.t_s - bin * width as f64;
    let mut cols: Vec<(Vec<u64>, Option<PhaseKind>)> = vec![(Vec::new(), None); width];
    for p in live.probes.iter().filter(|p| p.t_s > start) {
        let i = (((p.t_s - start) / bin) as usize).min(width - 1);
        cols[i].1.get_or_insert(p.phase);
        if let Some(r) = p.rtt_ns {
            cols[i].0.push(r);
        }
    }
    let used = cols.iter().position(|c| c.1.is_some()).unwrap_or(width);
    cols.into_iter()
        .skip(used)
        .map(|(mut v, k)| {
            v.sort_unstable();
            (
                v.get(v.len().saturating_sub(1) / 2).copied(),
                k.unwrap_or(PhaseKind::Idle),
            )
        })
        .collect()
}

/// Draws the pane.
pub fn render(f: &mut Frame, area: Rect, live: &LoadLive, t: Theme) {
    let title = match live.phase {
        Some((i, n, k, _)) => format!(" Under load · phase {i} of {n}: {} ", k.name()),
        None => " Under load · starting ".into(),
    };
    let block = Block::bordered().title(Span::styled(title, t.title()));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let side = SIDE.min(inner.width / 2);
    let [chart, panel] =
        Layout::horizontal([Constraint::Fill(1), Constraint::Length(side)]).areas(inner);
    render_chart(f, chart, live, t);
    f.render_widget(Paragraph::new(panel_lines(live, t)), panel);
}

fn phase_style(t: Theme, k: PhaseKind) -> Style {
    match k {
        PhaseKind::Idle => t.dim(),
        PhaseKind::Download => t.bar(),
        PhaseKind::Upload => t.spark(2),
        PhaseKind::Bidirectional => t.warn(),
    }
}

/// The round trip over time, a column per bin, the phase letters below.
fn render_chart(f: &mut Frame, area: Rect, live: &LoadLive, t: Theme) {
    if area.height < 3 || area.width < 4 {
        return;
    }
    let [head, bars, letters] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let cols = columns(live, usize::from(bars.width));
    let values: Vec<Option<u64>> = cols.iter().map(|c| c.0).collect();
    let peak = values.iter().flatten().max();
    let latest = values.iter().rev().flatten().next();
    let text = match (latest, peak) {
        (Some(l), Some(p)) => format!(
            "RTT median {}   peak {}",
            format_ns(*l as f64),
            format_ns(*p as f64)
        ),
        _ => "RTT median —".into(),
    };
    f.render_widget(Paragraph::new(Line::styled(text, t.title())), head);
    let hs = heights(&values, bars.height);
    let buf = f.buffer_mut();
    for (x, ((_, kind), h)) in (bars.x..bars.right()).zip(cols.iter().zip(hs)) {
        let style = phase_style(t, *kind);
        if let Some((h, cut)) = h {
            let slot = Slot {
                x,
                width: 1,
                bottom: bars.bottom() - 1,
                height: bars.height,
            };
            draw_bar(buf, slot, h, style);
            if cut {
                buf[(x, bars.y)].set_symbol("↑").set_style(style);
            }
        }
        buf[(x, letters.y)]
            .set_symbol(letter(*kind))
            .set_style(style);
    }
}

/// The phase, the load each way, and where the added delay sits so far.
fn panel_lines(live: &LoadLive, t: Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let loaded = live.phase.is_some_and(|(_, _, k, _)| k.loaded());
    if let Some(why) = &live.failure {
        lines.push(Line::styled(format!("broken off: {why}"), t.bad()));
    }
    if live.done {
        lines.push(Line::styled("every phase has run", t.dim()));
    }
    if loaded {
        let (down, up) = live.streams;
        lines.push(Line::from(format!("streams {down}↓ {up}↑")));
        for (v, arrow) in [(live.goodput.down, "↓"), (live.goodput.up, "↑")] {
            if let Some(v) = v {
                lines.push(Line::from(format!("goodput {arrow} {}", format_bps(v))));
            }
        }
        let rule = if live.stable {
            Span::styled("goodput stable (IETF rule)", t.good())
        } else {
            Span::styled("goodput not stable yet (IETF rule)", t.dim())
        };
        lines.push(Line::from(rule));
    } else {
        lines.push(Line::styled("idle: the baseline", t.dim()));
    }
    let shares = stages::shares(&live.stages);
    if !live.stages.is_empty() {
        lines.push(Line::styled("added, mean, this phase:", t.title()));
        // Where most of it sits first: a short pane still shows that.
        let mut by = live.stages.clone();
        by.sort_by(|a, b| b.1.total_cmp(&a.1));
        for (s, v) in &by {
            let share = shares
                .iter()
                .find(|x| x.0 == *s)
                .map_or(String::new(), |x| {
                    // A share that rounds to nothing has no sign.
                    let pct = (x.1 * 100.0).round();
                    format!("{:>4} %", if pct == 0.0 { 0.0 } else { pct })
                });
            lines.push(Line::from(format!(
                "{:<13}{:>11} {share}",
                s.key().replace('_', " "),
                signed_ns(*v)
            )));
        }
    }
    lines.push(Line::styled(
        "· idle  D download  U upload  B both",
        t.dim(),
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::load_live::LivePoint;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use synapse_stats::load::{Goodput, Stage};

    fn live() -> LoadLive {
        let mut l = LoadLive {
            phase: Some((2, 3, PhaseKind::Download, 2.0)),
            streams: (4, 0),
            goodput: Goodput {
                down: Some(9.52e6),
                up: None,
            },
            stages: vec![(Stage::Backward, 98e6), (Stage::Forward, 1e5)],
            stable: true,
            ..LoadLive::default()
        };
        for i in 0..400 {
            let t_s = f64::from(i) * 0.01;
            let (phase, rtt) = if t_s < 2.0 {
                (PhaseKind::Idle, 1_000_000)
            } else {
                (PhaseKind::Download, 100_000_000)
            };
            l.push(LivePoint {
                t_s,
                rtt_ns: Some(rtt),
                phase,
            });
        }
        l
    }

    #[test]
    fn columns_follow_the_run_and_keep_each_phase() {
        let cols = columns(&live(), 16);
        assert_eq!(cols.len(), 16);
        assert_eq!(cols[0], (Some(1_000_000), PhaseKind::Idle));
        assert_eq!(cols[15], (Some(100_000_000), PhaseKind::Download));
        assert!(columns(&LoadLive::default(), 10).is_empty());
    }

    #[test]
    fn the_pane_says_the_phase_the_load_and_where_it_sits() {
        let backend = TestBackend::new(90, 14);
        let mut term = Terminal::new(backend).unwrap();
        term.draw(|f| render(f, f.area(), &live(), Theme::new(false)))
            .unwrap();
        let text: String = term
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        for want in [
            "phase 2 of 3: download",
            "streams 4↓ 0↑",
            "goodput ↓ 9.52 Mbit/s",
            "goodput stable",
            "backward",
            "+98.00 ms",
            "RTT median 100.00 ms",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
        assert!(
            text.contains("DDDD") && text.contains("····"),
            "phase letters: {text}"
        );
    }
}
