//! The live numbers: current RTT, percentiles, rate, packet fates.

use crate::config::Baseline;
use crate::stats::{RttFigures, Summary};
use crate::ui::app::{ClientView, ServerView};
use crate::ui::theme::Theme;
use crate::units::{compact_count, format_ns, format_rate};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use std::time::Duration;

fn row<'a>(t: Theme, label: &'a str, value: String) -> Line<'a> {
    Line::from(vec![
        Span::styled(format!(" {label:<8}"), t.dim()),
        Span::raw(value),
    ])
}

/// The client's figures.
pub fn render_client(
    f: &mut Frame,
    area: Rect,
    v: &ClientView,
    baseline: Option<&Baseline>,
    t: Theme,
) {
    let live = &v.live;
    let s = Summary::from_stats(live.total(), Duration::ZERO);
    let p = &s.packets;
    let current = match live.last_rtt_ns {
        Some(ns) => Span::styled(format!("→ {}", format_ns(ns as f64)), t.rtt(ns)),
        None => Span::styled("→ waiting for replies", t.dim()),
    };
    let fig = |get: fn(&RttFigures) -> f64| {
        s.rtt_ns
            .as_ref()
            .map_or_else(|| "—".to_string(), |r| format_ns(get(r)))
    };
    let mean_style = match &s.rtt_ns {
        None => t.dim(),
        Some(r) if r.mean < 1e6 => t.good(),
        Some(_) => t.bad(),
    };
    let loss_style = if p.lost > 0 { t.bad() } else { t.dim() };
    let warm = if live.warmed_up || v.info.warmup == 0 {
        Span::styled(format!("✓ {}/{}", v.info.warmup, v.info.warmup), t.good())
    } else {
        Span::styled(
            format!("… {}/{}", live.warmup_seen, v.info.warmup),
            t.warn(),
        )
    };
    let o = &s.outages;
    let outages = match o.count {
        0 => Span::styled("none", t.dim()),
        n => Span::styled(
            format!("{n}, longest {}", format_ns(o.longest_ms * 1e6)),
            t.bad(),
        ),
    };
    let lines = vec![
        Line::from(vec![Span::raw(" "), current]),
        Line::from(vec![
            Span::styled(" Mean    ", t.dim()),
            Span::styled(fig(|r| r.mean), mean_style),
        ]),
        row(t, "P50", fig(|r| r.p50 as f64)),
        row(t, "P99", fig(|r| r.p99 as f64)),
        row(t, "P99.9", fig(|r| r.p999 as f64)),
        row(
            t,
            "Min",
            format!("{}  max {}", fig(|r| r.min as f64), fig(|r| r.max as f64)),
        ),
        row(t, "Rate", format!("{} pkt/s", format_rate(live.rate_pps()))),
        Line::from(vec![
            Span::styled(" Lost    ", t.dim()),
            Span::styled(
                format!("{} ({:.2}%)", compact_count(p.lost), p.loss_percent()),
                loss_style,
            ),
        ]),
        row(
            t,
            "Late",
            format!(
                "{}  dup {}",
                compact_count(p.late),
                compact_count(p.duplicate)
            ),
        ),
        Line::from(Span::styled(
            format!(
                " reord {}  stray {}",
                compact_count(p.reordered),
                compact_count(p.stray)
            ),
            t.dim(),
        )),
        Line::from(vec![Span::styled(" Outages ", t.dim()), outages]),
        Line::from(vec![Span::styled(" Warm-up ", t.dim()), warm]),
    ];
    let mut block = Block::bordered().title(Span::styled(" Live RTT ", t.title()));
    if let Some(c) = baseline.and_then(|b| b.compare(&s, None)) {
        let c = c.change_percent;
        let style = if c.p50.max(c.p99) > 10.0 {
            t.bad()
        } else {
            t.dim()
        };
        block = block.title_bottom(Span::styled(
            format!(" vs base p50 {:+.0}% p99 {:+.0}% ", c.p50, c.p99),
            style,
        ));
    }
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// The reflector's figures.
/// The last `n` characters of `text`, with `…` where the rest was: a long
/// path keeps its file name.
fn tail(text: &str, n: usize) -> String {
    let len = text.chars().count();
    if len <= n {
        return text.to_string();
    }
    let kept: String = text.chars().skip(len - (n - 1)).collect();
    format!("…{kept}")
}

pub fn render_server(f: &mut Frame, area: Rect, v: &ServerView, t: Theme) {
    let tot = &v.totals;
    let lines = vec![
        row(t, "Rate", format!("{} pkt/s", format_rate(v.pps))),
        row(
            t,
            "Echoed",
            format!("{} packets", compact_count(tot.packets)),
        ),
        row(t, "Bytes", compact_count(tot.bytes)),
        row(
            t,
            "Clients",
            format!("{} active", compact_count(v.active.len() as u64)),
        ),
        row(
            t,
            "Seen",
            format!("{} since start", compact_count(tot.sessions)),
        ),
        match &v.stamp {
            None => row(t, "STAMP", "off".into()),
            Some(Ok(at)) => row(
                t,
                "STAMP",
                format!(
                    ":{} · {} bad",
                    at.rsplit(':').next().unwrap_or(at),
                    v.stamp_totals.malformed
                ),
            ),
            Some(Err(_)) => Line::from(vec![
                Span::styled(" STAMP   ", t.dim()),
                Span::styled("not served", t.warn()),
            ]),
        },
        Line::from(vec![
            Span::styled(" Dropped ", t.dim()),
            Span::styled(
                format!("{} oversized", tot.oversized),
                if tot.oversized > 0 { t.bad() } else { t.dim() },
            ),
        ]),
        Line::from(vec![
            Span::styled(" Errors  ", t.dim()),
            Span::styled(
                format!("{} sends failed", tot.send_errors),
                if tot.send_errors > 0 {
                    t.bad()
                } else {
                    t.dim()
                },
            ),
        ]),
        match &v.log {
            Some(path) => row(t, "Log", tail(path, 20)),
            None => Line::from(Span::styled(" Echo: every datagram back", t.dim())),
        },
    ];
    let block = Block::bordered().title(Span::styled(" Reflector ", t.title()));
    f.render_widget(Paragraph::new(lines).block(block), area);
}
