//! The whole frame: which panes go where, for each role.

use super::app::{App, Role};
use super::panes::osi::{self, StackLabels};
use super::panes::{
    answers, figures, footer, header, help, histogram, load, progress, responders, sessions,
    sparklines, split,
};
use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use synapse_engine::Transport;
use synapse_stats::{Segment, SegmentFigures};
use synapse_units::{format_ns_plain, format_rate};

/// Smallest terminal the layout fits.
pub const MIN_WIDTH: u16 = 80;
/// Smallest terminal the layout fits.
pub const MIN_HEIGHT: u16 = 24;

/// `ip` and `port` of an address written as text.
fn split_addr(addr: &str) -> (&str, &str) {
    addr.rsplit_once(':').unwrap_or((addr, ""))
}

fn labels(title: &str, program: &str, addr: &str, transport: Transport) -> StackLabels {
    // `10.0.0.1 (a new port per connection)`: no one port to show.
    let (ip, port) = match addr.split_once(" (") {
        Some((ip, _)) => (ip, "new each"),
        None => split_addr(addr),
    };
    let family = if ip.starts_with('[') { "IPv6" } else { "IPv4" };
    let l4 = match transport {
        Transport::Udp => "UDP",
        Transport::Tcp => "TCP",
    };
    StackLabels {
        title: title.to_string(),
        details: [
            program.to_string(),
            format!("{l4} :{port}"),
            format!("{family} {}", ip.trim_matches(['[', ']'])),
            "frame".to_string(),
            "bits".to_string(),
        ],
    }
}

/// TCP: the far side's share at its application, and at its transport
/// the far kernel's ACK: its round trip when it came on its own, or that
/// it rode on the reply (then there is no kernel RTT to show).
fn tcp_details(server: &mut StackLabels, figures: &[SegmentFigures], acks: Option<split::Acks>) {
    let median = |seg| split::median(figures, seg);
    if let Some(far) = median(Segment::FarShare) {
        server.details[0] = format!("far side {far}");
    }
    if let Some(k) = median(Segment::KernelRtt) {
        server.details[1] = format!("TCP ACK ⇄ {k}");
    } else if acks.is_some_and(|a| a.piggybacked > 0) {
        server.details[1] = "TCP ACK on reply".into();
    }
}

/// Below this height the figures go two a row and the packet path drops
/// its caption, so the histogram keeps its height.
const SHORT: u16 = 30;
/// The figures pane's width: two figures a row of up to 99.99 ms each.
const FIGURES: u16 = 34;
/// The packet path's own rows: its stacks and the split table.
const PATH_ROWS: u16 = 7 + 3 + 2;
/// The least the percentiles need beside the packet path to move up there
/// (a wide terminal), leaving the histogram the whole width below.
const SPARKS_BESIDE: u16 = 50;

/// Draws one frame of the display.
pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(f, area);
        return;
    }
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(footer::height(app, area.width)),
    ])
    .areas(area);
    header::render(f, head, app);
    let short = area.height < SHORT;
    match app.role {
        Role::Client => draw_client(f, body, app, short),
        Role::Server => draw_server(f, body, app, short),
    }
    footer::render(f, foot, app);
    if app.help {
        help::render(f, area, app, app.theme);
    }
}

/// The stacks' labels for a client: measured times in place of the
/// decoration where the run has them.
fn client_labels(v: &crate::ui::app::ClientView) -> (StackLabels, StackLabels) {
    let tcp = v.info.transport;
    let mut client = labels("CLIENT (here)", "synapse client", &v.info.local, tcp);
    let stamp = v.stamping.as_ref().is_some_and(|s| s.stamp);
    let reflector = if stamp {
        "STAMP reflector"
    } else {
        "echo reflector"
    };
    let mut server = labels("SERVER", reflector, &v.info.target, tcp);
    let figures = split::figures(&v.live);
    let median = |seg| split::median(&figures, seg);
    if let Some(send) = median(Segment::Send) {
        client.details[3] = format!("↓ send {send}");
    }
    if let Some(receive) = median(Segment::Receive) {
        client.details[4] = format!("↑ receive {receive}");
    }
    if let Some(dwell) = median(Segment::Dwell) {
        server.details[3] = format!("dwell {dwell}");
    }
    if let Some(network) = median(Segment::Network) {
        server.details[4] = format!("⇄ net+remote {network}");
    }
    tcp_details(&mut server, &figures, split::acks(&v.live));
    (client, server)
}

/// The client: its figures and the packet path on top (as tall as the
/// figures need), the histogram and the percentiles over time below, the
/// progress at the bottom. Wide, the percentiles move up beside the packet
/// path, which keeps its own width.
fn draw_client(f: &mut Frame, area: Rect, app: &App, short: bool) {
    let (v, t) = (app.shown_client(), app.theme);
    let figure_lines = figures::client_lines(v, FIGURES, (short, app.running), t).len() as u16;
    let path_rows = if short { PATH_ROWS } else { PATH_ROWS + 2 };
    let [top, middle, bar] = Layout::vertical([
        Constraint::Length((figure_lines + 2).max(path_rows)),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let (client, server) = client_labels(v);
    let segments = split::figures(&v.live);
    let path_width = osi::natural_width(&client, &server).max(split::natural_width(&segments) + 2);
    let wide = top.width >= FIGURES + path_width + SPARKS_BESIDE;
    let [numbers, path, beside] = if wide {
        Layout::horizontal([
            Constraint::Length(FIGURES),
            Constraint::Length(path_width),
            Constraint::Fill(1),
        ])
        .areas(top)
    } else {
        let [numbers, path] =
            Layout::horizontal([Constraint::Length(FIGURES), Constraint::Fill(1)]).areas(top);
        [numbers, path, Rect::default()]
    };
    let compare = (app.baseline.as_ref(), app.floor.as_ref());
    figures::render_client(f, numbers, v, (short, app.running), compare, t);
    let last = v.live.last_rtt_ns.map(|rtt| (v.live.last_seq, rtt));
    let caption = match v.silence.filter(|_| app.running) {
        Some(s) => osi::silent_caption(app.shown_anim(), s),
        None => osi::packet_caption(app.shown_anim(), last, app.running),
    };
    let caption = (!short).then_some(caption.as_str());
    let below = osi::render(f, path, (&client, &server), app.shown_anim(), caption, t);
    let acks = split::acks(&v.live);
    split::render(f, below, &segments, acks, v.stamping.as_ref(), t);
    let middle = group_rows(f, middle, v, t);
    if let Some(l) = &v.load {
        // Under load the story is the phases: the round trip over them,
        // and where the added delay sits.
        if wide {
            sparklines::render(f, beside, &v.live, t);
        }
        load::render(f, middle, l, t);
    } else if wide {
        sparklines::render(f, beside, &v.live, t);
        histogram::render(f, middle, &v.live, app.zoom, t);
    } else {
        let [hist, sparks] =
            Layout::horizontal([Constraint::Percentage(56), Constraint::Fill(1)]).areas(middle);
        histogram::render(f, hist, &v.live, app.zoom, t);
        sparklines::render(f, sparks, &v.live, t);
    }
    progress::render(f, bar, v, app.running, t);
}

/// A multicast run: a row per responder above the histogram, in at most
/// half of `middle`; what is left of `middle` is returned.
fn group_rows(
    f: &mut Frame,
    middle: Rect,
    v: &crate::ui::app::ClientView,
    t: crate::ui::theme::Theme,
) -> Rect {
    if !v.info.is_group() {
        return middle;
    }
    let rows = responders::height(&v.responders).min(middle.height / 2);
    let [table, rest] =
        Layout::vertical([Constraint::Length(rows), Constraint::Fill(1)]).areas(middle);
    responders::render(f, table, &v.responders, &v.info.target, v.run_elapsed, t);
    rest
}

/// The client table's natural width, about: what leaves room for the
/// answers beside it.
const CLIENTS: u16 = 80;

/// The reflector: its figures and the packet path on top, its clients
/// below and, where there is room, its answers per 250 ms beside them (or,
/// wide, beside the packet path, which keeps its own width).
fn draw_server(f: &mut Frame, area: Rect, app: &App, short: bool) {
    let (v, t) = (app.shown_server(), app.theme);
    let path_rows = if short { PATH_ROWS } else { PATH_ROWS + 2 };
    let figure_lines = figures::server_lines(v, FIGURES, t).len() as u16;
    let [top, middle, bar] = Layout::vertical([
        Constraint::Length((figure_lines + 2).max(path_rows)),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let peer = v
        .active
        .first()
        .or(v.ended.front())
        .map(|s| s.peer.to_string());
    let client = labels(
        "CLIENT (remote)",
        "client app",
        peer.as_deref().unwrap_or("?:?"),
        Transport::Udp,
    );
    let server = labels("SERVER (here)", "synapse server", &v.bind, Transport::Udp);
    let [numbers, rest] =
        Layout::horizontal([Constraint::Length(FIGURES), Constraint::Fill(1)]).areas(top);
    let path_width = osi::natural_width(&client, &server);
    let (path, beside) = if rest.width >= path_width + SPARKS_BESIDE {
        let [path, beside] =
            Layout::horizontal([Constraint::Length(path_width), Constraint::Fill(1)]).areas(rest);
        (path, Some(beside))
    } else {
        (rest, None)
    };
    figures::render_server(f, numbers, v, t);
    let caption = match (app.running, v.active.len()) {
        (false, _) => "stopped · press space to listen".to_string(),
        (true, 0) => "listening · waiting for clients".to_string(),
        (true, n) => format!(
            "{} · {} pkt/s echoed",
            synapse_units::count_of(n as u64, "active client"),
            format_rate(v.pps)
        ),
    };
    let caption = (!short).then_some(caption.as_str());
    osi::render(f, path, (&client, &server), app.shown_anim(), caption, t);
    match beside {
        Some(beside) => {
            answers::render(f, beside, v, t);
            sessions::render(f, middle, v, app.running, t);
        }
        None if middle.width >= CLIENTS + SPARKS_BESIDE / 2 => {
            let [table, chart] =
                Layout::horizontal([Constraint::Length(CLIENTS), Constraint::Fill(1)])
                    .areas(middle);
            sessions::render(f, table, v, app.running, t);
            answers::render(f, chart, v, t);
        }
        None => sessions::render(f, middle, v, app.running, t),
    }
    let idle = format_ns_plain(v.session_idle.as_nanos() as u64);
    let note = Line::styled(
        format!(" sessions end after {idle} idle · figures since start or c · r: measure"),
        t.dim(),
    );
    f.render_widget(Paragraph::new(note), bar);
}

fn too_small(f: &mut Frame, area: Rect) {
    let text = vec![
        Line::from(format!("Synapse needs {MIN_WIDTH}×{MIN_HEIGHT}.")),
        Line::from(format!("This terminal is {}×{}.", area.width, area.height)),
        Line::from("Enlarge it, or q to quit."),
    ];
    let [v] = Layout::vertical([Constraint::Length(3)])
        .flex(Flex::Center)
        .areas(area);
    f.render_widget(Paragraph::new(text).centered(), v);
}
