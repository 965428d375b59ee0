//! The live numbers: current RTT, percentiles, rate, packet fates.

use crate::config::Baseline;
use crate::report::FloorComparison;
use crate::ui::app::{ClientInfo, ClientView, ServerView};
use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use std::time::Duration;
use synapse_engine::floor::Calibration;
use synapse_engine::{Refusals, Schedule};
use synapse_stats::{Pattern, RttFigures, Summary};
use synapse_units::{compact_count, format_ns, format_rate};

fn row<'a>(t: Theme, label: &'a str, value: String) -> Line<'a> {
    Line::from(vec![
        Span::styled(format!(" {label:<8}"), t.dim()),
        Span::raw(value),
    ])
}

/// What a mode's figures are built from.
struct Parts<'a> {
    s: Summary,
    t: Theme,
    live: &'a synapse_stats::LiveStats,
}

impl Parts<'_> {
    fn fig(&self, get: fn(&RttFigures) -> f64) -> String {
        self.s
            .rtt_ns
            .as_ref()
            .map_or_else(|| "—".to_string(), |r| format_ns(get(r)))
    }

    /// `label  a  b_label b`: two RTT figures on one row.
    fn two(
        &self,
        label: &'static str,
        a: fn(&RttFigures) -> f64,
        b_label: &str,
        b: fn(&RttFigures) -> f64,
    ) -> Line<'static> {
        row(
            self.t,
            label,
            format!("{}  {b_label} {}", self.fig(a), self.fig(b)),
        )
    }

    fn current(&self) -> Span<'static> {
        match self.live.last_rtt_ns {
            Some(ns) => Span::styled(format!("→ {}", format_ns(ns as f64)), self.t.rtt(ns)),
            None => Span::styled("→ waiting for replies", self.t.dim()),
        }
    }

    fn mean(&self) -> Span<'static> {
        let style = match &self.s.rtt_ns {
            None => self.t.dim(),
            Some(r) if r.mean < 1e6 => self.t.good(),
            Some(_) => self.t.bad(),
        };
        Span::styled(self.fig(|r| r.mean), style)
    }

    fn lost(&self) -> Line<'static> {
        let p = &self.s.packets;
        let style = if p.lost > 0 {
            self.t.bad()
        } else {
            self.t.dim()
        };
        Line::from(vec![
            Span::styled(" Lost    ", self.t.dim()),
            Span::styled(
                format!("{} ({:.2}%)", compact_count(p.lost), p.loss_percent()),
                style,
            ),
        ])
    }

    fn outages(&self) -> Line<'static> {
        let o = &self.s.outages;
        let shown = match o.count {
            0 => Span::styled("none", self.t.dim()),
            n => Span::styled(
                format!("{n}, longest {}", format_ns(o.longest_ms * 1e6)),
                self.t.bad(),
            ),
        };
        Line::from(vec![Span::styled(" Outages ", self.t.dim()), shown])
    }

    fn warmup(&self, warmup: u64) -> Line<'static> {
        let t = self.t;
        let shown = if self.live.warmed_up || warmup == 0 {
            Span::styled(format!("✓ {warmup}/{warmup}"), t.good())
        } else {
            Span::styled(format!("… {}/{warmup}", self.live.warmup_seen), t.warn())
        };
        Line::from(vec![Span::styled(" Warm-up ", t.dim()), shown])
    }

    fn rate(&self) -> Line<'static> {
        row(
            self.t,
            "Rate",
            format!("{} pkt/s", format_rate(self.live.rate_pps())),
        )
    }
}

/// The client's figures: the RTT, the fates of the packets and, paced,
/// the schedule, jitter, one-way delays and loss by direction.
pub fn render_client(
    f: &mut Frame,
    area: Rect,
    v: &ClientView,
    baseline: Option<&Baseline>,
    floor: Option<&Calibration>,
    t: Theme,
) {
    let parts = Parts {
        s: Summary::from_stats(v.live.total(), Duration::ZERO),
        t,
        live: &v.live,
    };
    let lines = match v.info.pace {
        None => ping_pong_lines(&parts, v.info.warmup),
        Some(_) => paced_lines(&parts, v.info.warmup),
    };
    let title = format!(" RTT · {} ", pace_label(v.info.pace));
    let mut block = Block::bordered().title(Span::styled(title, t.title()));
    let mut room = usize::from(area.width.saturating_sub(2));
    if let Some(c) = baseline.and_then(|b| b.compare(&parts.s, None)) {
        let c = c.change_percent;
        let style = if c.p50.max(c.p99) > 10.0 {
            t.bad()
        } else {
            t.dim()
        };
        let text = format!(" vs base p50 {:+.0}% p99 {:+.0}% ", c.p50, c.p99);
        room = room.saturating_sub(text.chars().count());
        block = block.title_bottom(Span::styled(text, style));
    }
    if let Some((text, significant)) = v
        .versus
        .as_ref()
        .filter(|(text, _)| text.chars().count() <= room)
    {
        room = room.saturating_sub(text.chars().count());
        let style = if *significant { t.warn() } else { t.dim() };
        block = block.title_bottom(Span::styled(text.clone(), style));
    }
    if let Some(text) = floor_title(&parts.s, &v.info, floor).filter(|t| t.chars().count() <= room)
    {
        block = block.title_bottom(Line::from(Span::styled(text, t.dim())).right_aligned());
    }
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// ` 1.3× floor `: the p50 against this host's calibrated floor for the
/// run's mode (`synapse calibrate`), when there is one.
fn floor_title(s: &Summary, info: &ClientInfo, floor: Option<&Calibration>) -> Option<String> {
    let remote = info
        .target
        .parse::<std::net::SocketAddr>()
        .is_ok_and(|a| !synapse_engine::socket::is_this_host(a.ip()));
    let c = FloorComparison::of(floor?, s.rtt_ns?.p50, info.floor_mode, remote)?;
    Some(format!(" {:.1}× floor ", c.ratio))
}

/// `ping-pong`, `every 1.00 ms`, `poisson ~1.00 ms`.
pub fn pace_label(pace: Option<Schedule>) -> String {
    match pace {
        None => "ping-pong".into(),
        Some(s) if s.pattern == Pattern::Poisson => {
            format!("poisson ~{}", format_ns(s.interval_ns() as f64))
        }
        Some(s) => format!("every {}", format_ns(s.interval_ns() as f64)),
    }
}

fn ping_pong_lines(p: &Parts, warmup: u64) -> Vec<Line<'static>> {
    let (t, c) = (p.t, &p.s.packets);
    vec![
        Line::from(vec![Span::raw(" "), p.current()]),
        Line::from(vec![Span::styled(" Mean    ", t.dim()), p.mean()]),
        row(t, "P50", p.fig(|r| r.p50 as f64)),
        row(t, "P99", p.fig(|r| r.p99 as f64)),
        row(t, "P99.9", p.fig(|r| r.p999 as f64)),
        p.two("Min", |r| r.min as f64, "max", |r| r.max as f64),
        p.rate(),
        p.lost(),
        row(
            t,
            "Late",
            format!(
                "{}  dup {}",
                compact_count(c.late),
                compact_count(c.duplicate)
            ),
        ),
        Line::from(Span::styled(
            format!(
                " reord {}  stray {}",
                compact_count(c.reordered),
                compact_count(c.stray)
            ),
            t.dim(),
        )),
        p.outages(),
        p.warmup(warmup),
    ]
    .into_iter()
    .chain(cos_lines(p))
    .collect()
}

/// Class of service per leg, live: what arrived, whether it was
/// re-marked on the way, and how many were marked CE.
fn cos_lines(p: &Parts) -> Vec<Line<'static>> {
    let Some(c) = &p.s.class_of_service else {
        return Vec::new();
    };
    let t = p.t;
    let leg = |label: &'static str, l: &synapse_stats::cos::LegFigures| -> Line<'static> {
        let Some(top) = l.dscp_received.iter().max_by_key(|d| d.count) else {
            return row(t, label, "not reported".into());
        };
        let name = top
            .name
            .map_or_else(|| top.dscp.to_string(), str::to_string);
        let remarked = l.remarked.unwrap_or(0);
        let ce = l.ce.unwrap_or(0);
        Line::from(vec![
            Span::styled(format!(" {label:<8}"), t.dim()),
            Span::raw(name),
            Span::styled(
                if remarked > 0 {
                    format!(" re-marked {}", compact_count(remarked))
                } else {
                    " as sent".to_string()
                },
                if remarked > 0 { t.warn() } else { t.dim() },
            ),
            Span::styled(
                format!("  CE {}", compact_count(ce)),
                if ce > 0 { t.warn() } else { t.dim() },
            ),
        ])
    };
    vec![leg("CoS →", &c.forward), leg("    ←", &c.backward)]
}

/// Paced: two percentiles a row, to make room for the schedule, jitter
/// and (STAMP) one-way delays and loss by direction.
fn paced_lines(p: &Parts, warmup: u64) -> Vec<Line<'static>> {
    let (t, s) = (p.t, &p.s);
    let c = &s.packets;
    let mut lines = vec![
        Line::from(vec![
            Span::raw(" "),
            p.current(),
            Span::styled("  mean ", t.dim()),
            p.mean(),
        ]),
        p.two("P50", |r| r.p50 as f64, "p99", |r| r.p99 as f64),
        p.two("P99.9", |r| r.p999 as f64, "max", |r| r.max as f64),
        p.rate(),
    ];
    let dash = || "—".to_string();
    lines.push(row(
        t,
        "|IPDV|",
        s.jitter_ns
            .as_ref()
            .and_then(|j| Some((j.ipdv_p50?, j.ipdv_p99?)))
            .map_or_else(dash, |(p50, p99)| {
                format!("{}  p99 {}", format_ns(p50 as f64), format_ns(p99 as f64))
            }),
    ));
    lines.push(match &s.schedule {
        Some(sch) => Line::from(vec![
            Span::styled(" Sched   ", t.dim()),
            Span::raw(format!("p99 +{}", format_ns(sch.error_p99_ns as f64))),
            Span::styled(
                format!(" miss {}", compact_count(sch.misses)),
                if sch.misses > 0 { t.warn() } else { t.dim() },
            ),
        ]),
        None => row(t, "Sched", dash()),
    });
    if let Some(w) = &s.one_way_ns {
        // Delays only when the clocks' error is small against them; else
        // how far apart the clocks read (a negative "delay" is their
        // offset, not a delay).
        let best = w.best();
        let text = match &best.clocks {
            _ if best.forward.trusted && best.backward.trusted => {
                format!("→{} ←{}", delay(best.forward.p50), delay(best.backward.p50))
            }
            Some(o) => format!(
                "? clocks {}±{}",
                signed(o.offset_ns),
                format_ns(o.bound_ns as f64)
            ),
            None => "? clocks unknown".to_string(),
        };
        lines.push(row(t, "1-way", text));
    }
    lines.push(p.lost());
    if let Some(d) = &s.loss_direction {
        lines.push(Line::from(Span::styled(
            format!(
                "  ↳ →{} ←{} ?{}",
                compact_count(d.forward),
                compact_count(d.backward),
                compact_count(d.unknown)
            ),
            if d.forward + d.backward > 0 {
                t.bad()
            } else {
                t.dim()
            },
        )));
    }
    lines.push(row(
        t,
        "Late",
        format!(
            "{} dup {} reo {} str {}",
            compact_count(c.late),
            compact_count(c.duplicate),
            compact_count(c.reordered),
            compact_count(c.stray)
        ),
    ));
    lines.push(p.outages());
    lines.push(p.warmup(warmup));
    lines.extend(cos_lines(p));
    lines
}

/// A one-way delay: never a negative figure.
fn delay(ns: i64) -> String {
    if ns < 0 {
        "<0".to_string()
    } else {
        format_ns(ns as f64)
    }
}

fn signed(ns: i64) -> String {
    if ns < 0 {
        format!("−{}", format_ns(ns.unsigned_abs() as f64))
    } else {
        format_ns(ns as f64)
    }
}

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

/// `3 port · 10k rate`: each reason that refused anything, in the order
/// of [`Refusals::REASONS`]; `0` when nothing was refused.
fn refusal_summary(r: &Refusals) -> String {
    const SHORT: [&str; 6] = ["port", "unlisted", "sessions", "rate", "bad", "unauth"];
    let parts: Vec<String> = SHORT
        .iter()
        .zip(r.counts())
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{} {name}", compact_count(n)))
        .collect();
    if parts.is_empty() {
        "0".into()
    } else {
        parts.join(" · ")
    }
}

/// ` · TLV 2 U 1 M`: RFC 8972 TLVs the STAMP reflector refused, if any.
fn tlv_refusals(t: &synapse_engine::TlvTotals) -> String {
    if t.unrecognized + t.malformed + t.integrity_failed == 0 {
        return String::new();
    }
    format!(
        " · TLV {} U {} M {} I",
        compact_count(t.unrecognized),
        compact_count(t.malformed),
        compact_count(t.integrity_failed)
    )
}

/// The reflector's figures.
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
                    ":{} · {} bad{}",
                    at.rsplit(':').next().unwrap_or(at),
                    v.stamp_totals.refused.malformed + v.stamp_totals.refused.unauthenticated,
                    tlv_refusals(&v.stamp_totals.tlv)
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
            Span::styled(" Refused ", t.dim()),
            Span::styled(
                refusal_summary(&tot.refused),
                if tot.refused.total() > 0 {
                    t.warn()
                } else {
                    t.dim()
                },
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
