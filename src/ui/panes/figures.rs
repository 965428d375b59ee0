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

/// Figures that belong on one row, each kept whole: the first with its
/// label in the label column, the others after it as long as they fit,
/// the rest on the next row under the values.
type Cells = Vec<Vec<Span<'static>>>;

/// Width of the label column (` Lost    `).
const LABEL: usize = 9;

/// Lays `cells` out in rows of `width`, `sep` apart, never cutting one.
fn flow(cells: Cells, width: usize, sep: &str) -> Vec<Line<'static>> {
    let sep_width = sep.chars().count();
    let mut lines = Vec::new();
    let mut line: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for cell in cells {
        let w: usize = cell.iter().map(Span::width).sum();
        if w == 0 {
            continue;
        }
        if !line.is_empty() && used + sep_width + w > width {
            lines.push(Line::from(std::mem::take(&mut line)));
            line.push(Span::raw(" ".repeat(LABEL)));
            used = LABEL;
        } else if !line.is_empty() && used > LABEL {
            line.push(Span::raw(sep.to_string()));
            used += sep_width;
        }
        used += w;
        line.extend(cell);
    }
    if !line.is_empty() {
        lines.push(Line::from(line));
    }
    lines
}

/// A labelled cell: ` P50     ` and the value.
fn labelled(t: Theme, label: &str, value: Span<'static>) -> Vec<Span<'static>> {
    vec![Span::styled(format!(" {label:<8}"), t.dim()), value]
}

/// A cell named inside the row: `dup 0`.
fn named(t: Theme, name: &str, value: Span<'static>) -> Vec<Span<'static>> {
    vec![Span::styled(format!("{name} "), t.dim()), value]
}

/// What a mode's figures are built from.
struct Parts<'a> {
    s: Summary,
    t: Theme,
    live: &'a synapse_stats::LiveStats,
    silence: Option<crate::session::far_side::Silence>,
    /// Measuring now: the newest reply is current, not the last one.
    running: bool,
}

impl Parts<'_> {
    fn fig(&self, get: fn(&RttFigures) -> f64) -> Span<'static> {
        Span::raw(
            self.s
                .rtt_ns
                .as_ref()
                .map_or_else(|| "—".to_string(), |r| format_ns(get(r))),
        )
    }

    /// The newest reply; while replies are missing, how long and what the
    /// path said, never the last figure as if it were current; once
    /// stopped, the last one, said to be the last (the same packet the
    /// path's caption names).
    fn current(&self) -> Vec<Span<'static>> {
        let now = match (self.silence.filter(|_| self.running), self.live.last_rtt_ns) {
            (Some(s), _) => Span::styled(silence_text(s), self.t.bad()),
            (None, Some(ns)) if self.running => {
                Span::styled(format!("→ {}", format_ns(ns as f64)), self.t.rtt(ns))
            }
            (None, Some(ns)) => {
                Span::styled(format!("■ last {}", format_ns(ns as f64)), self.t.dim())
            }
            (None, None) if self.running => Span::styled("→ waiting for replies", self.t.dim()),
            (None, None) => Span::styled("■ stopped", self.t.dim()),
        };
        vec![Span::raw(" "), now]
    }

    fn mean(&self) -> Span<'static> {
        let style = match &self.s.rtt_ns {
            None => self.t.dim(),
            Some(r) if r.mean < 1e6 => self.t.good(),
            Some(_) => self.t.bad(),
        };
        let mut mean = self.fig(|r| r.mean);
        mean.style = style;
        mean
    }

    fn count(&self, n: u64, bad: bool) -> Span<'static> {
        let style = if n > 0 && bad {
            self.t.bad()
        } else if n > 0 {
            self.t.warn()
        } else {
            self.t.dim()
        };
        Span::styled(compact_count(n), style)
    }

    fn lost(&self) -> Vec<Span<'static>> {
        let p = &self.s.packets;
        let style = if p.lost > 0 {
            self.t.bad()
        } else {
            self.t.dim()
        };
        labelled(
            self.t,
            "Lost",
            Span::styled(
                format!("{} ({:.2}%)", compact_count(p.lost), p.loss_percent()),
                style,
            ),
        )
    }

    /// Late, duplicate, reordered and stray replies.
    fn fates(&self, short: bool) -> Cells {
        let c = &self.s.packets;
        let (reord, stray) = if short {
            ("reo", "str")
        } else {
            ("reord", "stray")
        };
        vec![
            labelled(self.t, "Late", self.count(c.late, true)),
            named(self.t, "dup", self.count(c.duplicate, false)),
            named(self.t, reord, self.count(c.reordered, false)),
            named(self.t, stray, self.count(c.stray, false)),
        ]
    }

    /// Closed outages, and the one going on while replies are missing (an
    /// outage is counted once it ends: "none" beside a silence would be
    /// a figure the data does not support).
    fn outages(&self) -> Vec<Span<'static>> {
        let o = &self.s.outages;
        let shown = match (o.count, self.silence.filter(|_| self.running)) {
            (0, None) => Span::styled("none", self.t.dim()),
            (n, None) => Span::styled(
                format!(
                    "{}, longest {}",
                    compact_count(n),
                    format_ns(o.longest_ms * 1e6)
                ),
                self.t.bad(),
            ),
            (n, Some(now)) => {
                let before = if n == 0 {
                    String::new()
                } else {
                    format!("; {} before", compact_count(n))
                };
                Span::styled(
                    format!("one now, {:.1} s{before}", now.for_ns as f64 / 1e9),
                    self.t.bad(),
                )
            }
        };
        labelled(self.t, "Outages", shown)
    }

    fn rate(&self) -> Vec<Span<'static>> {
        labelled(
            self.t,
            "Rate",
            Span::raw(format!("{} pkt/s", format_rate(self.live.rate_pps()))),
        )
    }
}

/// `⚠ no reply for 4.2 s (port unreachable)`: short, for a narrow pane
/// (the packet path's caption says who sent it).
pub fn silence_text(s: crate::session::far_side::Silence) -> String {
    let said = s
        .error
        .map_or(String::new(), |e| format!(" ({})", e.kind.words()));
    format!("⚠ no reply for {:.1} s{said}", s.for_ns as f64 / 1e9)
}

/// The client's figures, as lines `width` wide: the RTT, the fates of the
/// packets and, paced, the schedule, jitter, one-way delays and loss by
/// direction. `compact`: the reply fates on one row, for short terminals.
pub fn client_lines(
    v: &ClientView,
    width: u16,
    (compact, running): (bool, bool),
    t: Theme,
) -> Vec<Line<'static>> {
    let parts = Parts {
        s: Summary::from_stats(v.live.total(), Duration::ZERO),
        t,
        live: &v.live,
        silence: v.silence,
        running,
    };
    let rows = match v.info.pace {
        None => ping_pong_rows(&parts, compact),
        Some(_) => paced_rows(&parts),
    };
    let width = usize::from(width.saturating_sub(2));
    rows.into_iter()
        .chain(cos_rows(&parts))
        .flat_map(|(cells, sep)| flow(cells, width, sep))
        .collect()
}

/// The client's figures pane (see [`client_lines`]).
pub fn render_client(
    f: &mut Frame,
    area: Rect,
    v: &ClientView,
    layout: (bool, bool),
    compare: (Option<&Baseline>, Option<&Calibration>),
    t: Theme,
) {
    let (baseline, floor) = compare;
    let s = Summary::from_stats(v.live.total(), Duration::ZERO);
    let lines = client_lines(v, area.width, layout, t);
    let title = format!(" RTT · {} ", pace_label(v.info.pace));
    let mut block = Block::bordered().title(Span::styled(title, t.title()));
    let mut room = usize::from(area.width.saturating_sub(2));
    if let Some(c) = baseline.and_then(|b| b.compare(&s, None)) {
        let c = c.change_percent;
        let style = if c.p50.max(c.p99) > 10.0 {
            t.bad()
        } else {
            t.dim()
        };
        let text = format!(
            " vs base p50 {}% p99 {}% ",
            synapse_units::signed(c.p50, 0),
            synapse_units::signed(c.p99, 0)
        );
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
    if let Some(text) = floor_title(&s, &v.info, floor).filter(|t| t.chars().count() <= room) {
        block = block.title_bottom(Line::from(Span::styled(text, t.dim())).right_aligned());
    }
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// ` 1.3× floor `: the p50 against this host's calibrated floor of the
/// run's kind (`synapse calibrate`), when there is one; ` below floor? `
/// when the p50 is below what that floor allows.
fn floor_title(s: &Summary, info: &ClientInfo, floor: Option<&Calibration>) -> Option<String> {
    let c = FloorComparison::of(floor?, s.rtt_ns?.p50, info.floor_kind)?;
    Some(if c.below_floor {
        " below floor: stale? ".into()
    } else {
        format!(" {:.1}× floor ", c.ratio)
    })
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

/// A row's cells and what separates them.
type Row = (Cells, &'static str);

fn ping_pong_rows(p: &Parts, compact: bool) -> Vec<Row> {
    let t = p.t;
    let fig = |label: &str, get: fn(&RttFigures) -> f64| labelled(t, label, p.fig(get));
    let mut rows: Vec<Row> = vec![
        (vec![p.current()], "  "),
        (vec![labelled(t, "Mean", p.mean())], "  "),
        (vec![fig("P50", |r| r.p50 as f64)], "  "),
        (vec![fig("P99", |r| r.p99 as f64)], "  "),
        (vec![fig("P99.9", |r| r.p999 as f64)], "  "),
        (
            vec![
                fig("Min", |r| r.min as f64),
                named(t, "max", p.fig(|r| r.max as f64)),
            ],
            "  ",
        ),
        (vec![p.rate()], "  "),
        (vec![p.lost()], "  "),
    ];
    // Short terminals: the reply fates on one row (abridged names), as
    // long as they fit.
    let fates = p.fates(compact);
    if compact {
        rows.push((fates, " "));
    } else {
        let (late, rest) = fates.split_at(2);
        rows.push((late.to_vec(), "  "));
        let indent = vec![Span::raw(" ".repeat(LABEL))];
        rows.push((
            std::iter::once(indent)
                .chain(rest.iter().cloned())
                .collect(),
            "  ",
        ));
    }
    rows.push((vec![p.outages()], "  "));
    rows
}

/// Class of service per leg, live: what arrived, whether it was
/// re-marked on the way, and how many were marked CE.
fn cos_rows(p: &Parts) -> Vec<Row> {
    let Some(c) = &p.s.class_of_service else {
        return Vec::new();
    };
    let t = p.t;
    let leg = |label: &'static str, l: &synapse_stats::cos::LegFigures| -> Row {
        let Some(top) = l.dscp_received.iter().max_by_key(|d| d.count) else {
            return (vec![labelled(t, label, Span::raw("not reported"))], "  ");
        };
        let name = top
            .name
            .map_or_else(|| top.dscp.to_string(), str::to_string);
        let remarked = l.remarked.unwrap_or(0);
        let ce = l.ce.unwrap_or(0);
        let marks = if remarked > 0 {
            named(
                t,
                "re-marked",
                Span::styled(compact_count(remarked), t.warn()),
            )
        } else {
            vec![Span::styled("as sent", t.dim())]
        };
        let ce_style = if ce > 0 { t.warn() } else { t.dim() };
        let ce = named(t, "CE", Span::styled(compact_count(ce), ce_style));
        (vec![labelled(t, label, Span::raw(name)), marks, ce], " ")
    };
    vec![leg("CoS →", &c.forward), leg("    ←", &c.backward)]
}

/// Paced: two percentiles a row, to make room for the schedule, jitter
/// and (STAMP) one-way delays and loss by direction.
fn paced_rows(p: &Parts) -> Vec<Row> {
    let (t, s) = (p.t, &p.s);
    let dash = || Span::raw("—");
    let fig = |label: &str, get: fn(&RttFigures) -> f64| labelled(t, label, p.fig(get));
    let pair = |name: &str, get: fn(&RttFigures) -> f64| named(t, name, p.fig(get));
    let mut rows: Vec<Row> = vec![
        (vec![p.current(), named(t, "mean", p.mean())], "  "),
        (
            vec![fig("P50", |r| r.p50 as f64), pair("p99", |r| r.p99 as f64)],
            "  ",
        ),
        (
            vec![
                fig("P99.9", |r| r.p999 as f64),
                pair("max", |r| r.max as f64),
            ],
            "  ",
        ),
        (vec![p.rate()], "  "),
    ];
    rows.push(
        match s
            .jitter_ns
            .as_ref()
            .and_then(|j| Some((j.ipdv_p50?, j.ipdv_p99?)))
        {
            Some((p50, p99)) => (
                vec![
                    labelled(t, "|IPDV|", Span::raw(format_ns(p50 as f64))),
                    named(t, "p99", Span::raw(format_ns(p99 as f64))),
                ],
                "  ",
            ),
            None => (vec![labelled(t, "|IPDV|", dash())], "  "),
        },
    );
    rows.push(match &s.schedule {
        Some(sch) => (
            vec![
                labelled(
                    t,
                    "Sched",
                    Span::raw(format!("p99 +{}", format_ns(sch.error_p99_ns as f64))),
                ),
                named(t, "miss", p.count(sch.misses, false)),
            ],
            " ",
        ),
        None => (vec![labelled(t, "Sched", dash())], "  "),
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
                synapse_units::signed_ns(o.offset_ns as f64),
                format_ns(o.bound_ns as f64)
            ),
            None => "? clocks unknown".to_string(),
        };
        rows.push((vec![labelled(t, "1-way", Span::raw(text))], "  "));
    }
    let mut lost = vec![p.lost()];
    if let Some(d) = &s.loss_direction {
        let style = if d.forward + d.backward > 0 {
            t.bad()
        } else {
            t.dim()
        };
        lost.push(vec![Span::styled(
            format!(
                "→{} ←{} ?{}",
                compact_count(d.forward),
                compact_count(d.backward),
                compact_count(d.unknown)
            ),
            style,
        )]);
    }
    rows.push((lost, "  "));
    rows.push((p.fates(true), " "));
    rows.push((vec![p.outages()], "  "));
    rows
}

/// A one-way delay: never a negative figure.
fn delay(ns: i64) -> String {
    if ns < 0 {
        "<0".to_string()
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

/// `3 port`, `10k rate`: each reason that refused anything, in the order
/// of [`Refusals::REASONS`], a cell each; `0` when nothing was refused.
fn refusal_cells(r: &Refusals, t: Theme) -> Cells {
    const SHORT: [&str; 6] = ["port", "unlisted", "sessions", "rate", "bad", "unauth"];
    let cells: Cells = SHORT
        .iter()
        .zip(r.counts())
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| {
            vec![Span::styled(
                format!("{} {name}", compact_count(n)),
                t.warn(),
            )]
        })
        .collect();
    if cells.is_empty() {
        vec![vec![Span::styled("0", t.dim())]]
    } else {
        cells
    }
}

/// `TLV 2 U 1 M 0 I`: RFC 8972 TLVs the STAMP reflector refused, if any.
fn tlv_refusals(t: &synapse_engine::TlvTotals) -> String {
    if t.unrecognized + t.malformed + t.integrity_failed == 0 {
        return String::new();
    }
    format!(
        "TLV {} U {} M {} I",
        compact_count(t.unrecognized),
        compact_count(t.malformed),
        compact_count(t.integrity_failed)
    )
}

/// The reflector's figures, as lines `width` wide.
pub fn server_lines(v: &ServerView, width: u16, t: Theme) -> Vec<Line<'static>> {
    let tot = &v.totals;
    let flagged = |n: u64, bad: bool| {
        let style = match (n, bad) {
            (0, _) => t.dim(),
            (_, true) => t.bad(),
            (_, false) => t.warn(),
        };
        Span::styled(compact_count(n), style)
    };
    let stamp = match &v.stamp {
        None => vec![labelled(t, "STAMP", Span::styled("off", t.dim()))],
        Some(Ok(at)) => {
            let bad = v.stamp_totals.refused.malformed + v.stamp_totals.refused.unauthenticated;
            vec![
                labelled(
                    t,
                    "STAMP",
                    Span::raw(format!(":{}", at.rsplit(':').next().unwrap_or(at))),
                ),
                vec![flagged(bad, false), Span::styled(" bad", t.dim())],
                vec![Span::styled(tlv_refusals(&v.stamp_totals.tlv), t.warn())],
            ]
        }
        Some(Err(_)) => vec![labelled(t, "STAMP", Span::styled("not served", t.warn()))],
    };
    let mut refused = refusal_cells(&tot.refused, t);
    refused[0].splice(0..0, [Span::styled(" Refused ", t.dim())]);
    let rows: Vec<Row> = vec![
        (
            vec![labelled(
                t,
                "Rate",
                Span::raw(format!("{} pkt/s", format_rate(v.pps))),
            )],
            "  ",
        ),
        (
            vec![labelled(
                t,
                "Echoed",
                Span::raw(format!("{} packets", compact_count(tot.packets))),
            )],
            "  ",
        ),
        (
            vec![labelled(t, "Bytes", Span::raw(compact_count(tot.bytes)))],
            "  ",
        ),
        (
            vec![
                labelled(
                    t,
                    "Clients",
                    Span::raw(format!("{} active", compact_count(v.active.len() as u64))),
                ),
                vec![Span::styled(
                    format!("{} in all", compact_count(tot.sessions)),
                    t.dim(),
                )],
            ],
            " · ",
        ),
        (stamp, " · "),
        (
            vec![
                labelled(t, "Dropped", flagged(tot.oversized, true)),
                vec![Span::styled("oversized", t.dim())],
            ],
            " ",
        ),
        (refused, " · "),
        (
            vec![
                labelled(t, "Errors", flagged(tot.send_errors, true)),
                vec![Span::styled("failed sends", t.dim())],
            ],
            " ",
        ),
        (
            vec![match &v.log {
                Some(path) => labelled(
                    t,
                    "Log",
                    Span::raw(tail(path, usize::from(width.saturating_sub(11)))),
                ),
                None => vec![Span::styled(" Echo: every datagram back", t.dim())],
            }],
            "  ",
        ),
    ];
    let width = usize::from(width.saturating_sub(2));
    rows.into_iter()
        .flat_map(|(cells, sep)| flow(cells, width, sep))
        .collect()
}

/// The reflector's figures pane (see [`server_lines`]).
pub fn render_server(f: &mut Frame, area: Rect, v: &ServerView, t: Theme) {
    let lines = server_lines(v, area.width, t);
    let block = Block::bordered().title(Span::styled(" Reflector ", t.title()));
    f.render_widget(Paragraph::new(lines).block(block), area);
}
