//! The two OSI stacks and the wire between them, with the packet's place
//! highlighted.

use crate::ui::animation::{Animation, LAYERS, Position};
use crate::ui::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use synapse_units::format_ns;

const NAMES: [&str; LAYERS] = [
    "L7 APPLICATION",
    "L4 TRANSPORT",
    "L3 NETWORK",
    "L2 DATA LINK",
    "L1 PHYSICAL",
];

/// What each stack's layers say beside their names.
#[derive(Debug, Clone, Default)]
pub struct StackLabels {
    /// Heading, e.g. `CLIENT`.
    pub title: String,
    /// One detail per layer (L7..L1), e.g. `UDP :8080`.
    pub details: [String; LAYERS],
}

fn stack(f: &mut Frame, area: Rect, labels: &StackLabels, active: Option<usize>, t: Theme) {
    let width = area.width.saturating_sub(2) as usize;
    // Details only when every one fits: a cut-off address misleads.
    let longest = labels
        .details
        .iter()
        .map(|d| d.chars().count())
        .max()
        .unwrap_or(0);
    let with_details = 2 + 15 + longest <= width;
    let lines: Vec<Line> = (0..LAYERS)
        .map(|i| {
            let on = active == Some(i);
            let marker = if on { "●" } else { " " };
            let detail = if with_details {
                labels.details[i].as_str()
            } else {
                ""
            };
            let text = format!("{marker} {:<w$}{detail}", NAMES[i], w = usize::from(NAME));
            Line::from(Span::styled(format!("{text:<width$}"), t.layer(i, on)))
        })
        .collect();
    let block = Block::bordered().title(Span::styled(format!(" {} ", labels.title), t.title()));
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// The gap between the stacks, where the wire runs.
const WIRE: u16 = 6;
/// A layer's name column.
const NAME: u16 = 15;

/// The width a stack needs to show every detail whole, borders included.
fn stack_width(labels: &StackLabels) -> u16 {
    let longest = labels.details.iter().map(|d| d.chars().count()).max();
    let title = labels.title.chars().count() as u16 + 4;
    (2 + NAME + longest.unwrap_or(0) as u16 + 3).max(title)
}

/// The width the two stacks and the wire need, the pane's borders
/// included: wider than this, the pane only adds empty space.
pub fn natural_width(client: &StackLabels, server: &StackLabels) -> u16 {
    2 * stack_width(client).max(stack_width(server)) + WIRE + 2
}

/// Draws both stacks and the wire, the two stacks no wider than their
/// details need and centred. `caption` goes under the wire (the packet
/// shown, or why nothing moves); without one, neither it nor the arrow's
/// row is drawn (a short terminal). Returns the room left below.
pub fn render(
    f: &mut Frame,
    area: Rect,
    labels: (&StackLabels, &StackLabels),
    anim: &Animation,
    caption: Option<&str>,
    t: Theme,
) -> Rect {
    let (client, server) = labels;
    let outer = Block::bordered().title(Span::styled(" Packet path ", t.title()));
    let inner = outer.inner(area);
    f.render_widget(outer, area);
    let text_rows = if caption.is_some() { 1 } else { 0 };
    let [stacks, wire_row, caption_row, below] = Layout::vertical([
        Constraint::Length(7),
        Constraint::Length(text_rows),
        Constraint::Length(text_rows),
        Constraint::Fill(1),
    ])
    .areas(inner);
    let each = stack_width(client)
        .max(stack_width(server))
        .min(inner.width.saturating_sub(WIRE) / 2);
    let [left, gap, right] = Layout::horizontal([
        Constraint::Length(each),
        Constraint::Length(WIRE),
        Constraint::Length(each),
    ])
    .flex(Flex::Center)
    .areas(stacks);
    let pos = anim.position();
    let on_client = match pos {
        Position::Client(i) => Some(i),
        _ => None,
    };
    let on_server = match pos {
        Position::Server(i) => Some(i),
        _ => None,
    };
    stack(f, left, client, on_client, t);
    stack(f, right, server, on_server, t);
    // The wire joins the two L1 rows.
    let l1 = Rect {
        x: gap.x,
        y: gap.y + 5,
        width: gap.width,
        height: 1,
    };
    let (glyph, style) = match pos {
        Position::Wire(true) => ("═════▶", t.layer(4, true)),
        Position::Wire(false) => ("◀═════", t.layer(4, true)),
        _ => ("──────", t.layer(4, false)),
    };
    f.render_widget(Paragraph::new(Span::styled(glyph, style)), l1);
    let arrow = match pos {
        Position::Client(_) | Position::Wire(true) if anim.step <= LAYERS as u8 => "request  ──▶",
        Position::Server(_) if anim.step <= 2 * LAYERS as u8 => "request  ──▶",
        _ => "reply  ◀──",
    };
    if caption.is_some() {
        f.render_widget(
            Paragraph::new(Line::from(Span::styled(arrow, t.dim())).centered()),
            wire_row,
        );
    }
    if let Some(caption) = caption {
        f.render_widget(
            Paragraph::new(Line::from(Span::styled(caption.to_string(), t.dim())).centered()),
            caption_row,
        );
    }
    below
}

/// The caption for a packet being shown; once stopped, the last reply
/// (`last`: its number and round trip), the one the figures show too,
/// not the packet the animation happened to carry.
pub fn packet_caption(anim: &Animation, last: Option<(u64, u64)>, running: bool) -> String {
    match (anim.packet, last, running) {
        (Some((seq, rtt)), _, true) => {
            format!("packet #{seq}: round trip {}", format_ns(rtt as f64))
        }
        (None, _, true) => "waiting for the first reply…".into(),
        (_, Some((seq, rtt)), false) => {
            format!("stopped · last reply #{seq}: {}", format_ns(rtt as f64))
        }
        (_, None, false) => "stopped · press space to measure".into(),
    }
}

/// The caption while replies are missing: how long, what the path said,
/// and the last packet that was answered, said to be the last.
pub fn silent_caption(anim: &Animation, s: crate::session::far_side::Silence) -> String {
    let said = s
        .error
        .map_or(String::new(), |e| format!(" ({})", e.phrase()));
    let last = anim.packet.map_or(String::new(), |(seq, rtt)| {
        format!(
            " · the last answered, #{seq}, took {}",
            format_ns(rtt as f64)
        )
    });
    format!("no reply for {:.1} s{said}{last}", s.for_ns as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::buffer::Buffer;

    fn labels() -> StackLabels {
        StackLabels {
            title: "A".into(),
            details: [
                "app".into(),
                "UDP :1".into(),
                "IPv4 10.0.0.1".into(),
                String::new(),
                String::new(),
            ],
        }
    }

    fn draw_stack(width: u16, active: Option<usize>) -> Buffer {
        let mut t = Terminal::new(TestBackend::new(width, 7)).unwrap();
        t.draw(|f| stack(f, f.area(), &labels(), active, Theme::new(false)))
            .unwrap();
        t.backend().buffer().clone()
    }

    #[test]
    fn a_stack_lists_layers_top_down_and_marks_the_packet() {
        let buf = draw_stack(34, Some(2));
        let mut expected = Buffer::with_lines([
            "┌ A ─────────────────────────────┐",
            "│  L7 APPLICATION app            │",
            "│  L4 TRANSPORT   UDP :1         │",
            "│● L3 NETWORK     IPv4 10.0.0.1  │",
            "│  L2 DATA LINK                  │",
            "│  L1 PHYSICAL                   │",
            "└────────────────────────────────┘",
        ]);
        // Without colour, the active layer is reverse video across the row.
        let active = Theme::new(false).layer(2, true);
        expected.set_style(Rect::new(1, 3, 32, 1), active);
        expected.set_style(Rect::new(1, 0, 3, 1), Theme::new(false).title());
        let plain = Theme::new(false).layer(0, false);
        for y in [1, 2, 4, 5] {
            expected.set_style(Rect::new(1, y, 32, 1), plain);
        }
        assert_eq!(buf, expected);
    }

    #[test]
    fn details_are_dropped_rather_than_cut() {
        let buf = draw_stack(24, None);
        let row: String = (0..24).map(|x| buf[(x, 3)].symbol()).collect();
        assert_eq!(row, "│  L3 NETWORK          │");
    }

    #[test]
    fn captions_say_what_is_shown_or_why_nothing_moves() {
        let mut a = Animation::default();
        assert_eq!(
            packet_caption(&a, None, false),
            "stopped · press space to measure"
        );
        assert_eq!(
            packet_caption(&a, None, true),
            "waiting for the first reply…"
        );
        a.on_frame(1, 1, Some((42, 61_200)));
        assert_eq!(
            packet_caption(&a, Some((43, 5_000)), true),
            "packet #42: round trip 61.2 µs"
        );
        // Issue 51: stopped, the caption names the last reply, the one the
        // figures' `■ last` shows, not the packet the animation carried.
        assert_eq!(
            packet_caption(&a, Some((227_307, 337_500)), false),
            "stopped · last reply #227307: 337.5 µs"
        );
        let s = crate::session::far_side::Silence {
            for_ns: 4_200_000_000,
            error: Some(synapse_stats::PathError {
                kind: synapse_stats::PathErrorKind::PortUnreachable,
                from: "10.0.1.2".parse().ok(),
                mtu: None,
            }),
        };
        assert_eq!(
            silent_caption(&a, s),
            "no reply for 4.2 s (port unreachable from 10.0.1.2) · the last answered, #42, took 61.2 µs"
        );
    }
}
