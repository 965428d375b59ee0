//! The whole frame: which panes go where, for each role.

use super::app::{App, Role};
use super::panes::osi::{self, StackLabels};
use super::panes::{
    figures, footer, header, help, histogram, progress, sessions, sparklines, split,
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
    let (ip, port) = split_addr(addr);
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

/// Draws one frame of the display.
pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(f, area);
        return;
    }
    let [head, top, middle, bar, foot] = Layout::vertical([
        Constraint::Length(1),
        // Room under the packet path for the three-line split table.
        Constraint::Length(14),
        Constraint::Fill(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    header::render(f, head, app);
    let [numbers, path] =
        Layout::horizontal([Constraint::Length(32), Constraint::Fill(1)]).areas(top);
    let t = app.theme;
    let anim = app.shown_anim();
    match app.role {
        Role::Client => {
            let v = app.shown_client();
            figures::render_client(f, numbers, v, app.baseline.as_ref(), app.floor.as_ref(), t);
            let caption = osi::packet_caption(anim, app.running);
            let tcp = v.info.transport;
            let mut client = labels("CLIENT (here)", "synapse client", &v.info.local, tcp);
            let stamp = v.stamping.as_ref().is_some_and(|s| s.stamp);
            let reflector = if stamp {
                "STAMP reflector"
            } else {
                "echo reflector"
            };
            let mut server = labels("SERVER", reflector, &v.info.target, tcp);
            // Measured times replace the decoration where the run has them.
            let figures = split::figures(&v.live);
            let acks = split::acks(&v.live);
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
            tcp_details(&mut server, &figures, acks);
            let below = osi::render(f, path, &client, &server, anim, &caption, t);
            split::render(f, below, &figures, acks, v.stamping.as_ref(), t);
            let [hist, sparks] =
                Layout::horizontal([Constraint::Percentage(56), Constraint::Fill(1)]).areas(middle);
            histogram::render(f, hist, &v.live, app.zoom, t);
            sparklines::render(f, sparks, &v.live, t);
            progress::render(f, bar, v, app.running, t);
        }
        Role::Server => {
            let v = app.shown_server();
            figures::render_server(f, numbers, v, t);
            let peer = v
                .active
                .first()
                .or(v.ended.front())
                .map(|s| s.peer.to_string());
            let caption = match (app.running, v.active.len()) {
                (false, _) => "stopped · press space to listen".to_string(),
                (true, 0) => "listening · waiting for clients".to_string(),
                (true, n) => format!("{n} active client(s) · {} pkt/s echoed", format_rate(v.pps)),
            };
            let client = labels(
                "CLIENT (remote)",
                "client app",
                peer.as_deref().unwrap_or("?:?"),
                Transport::Udp,
            );
            let server = labels("SERVER (here)", "synapse server", &v.bind, Transport::Udp);
            osi::render(f, path, &client, &server, anim, &caption, t);
            sessions::render(f, middle, v, t);
            let idle = format_ns_plain(v.session_idle.as_nanos() as u64);
            let note = Line::styled(
                format!(" sessions end after {idle} idle · figures since start or c · r: measure"),
                t.dim(),
            );
            f.render_widget(Paragraph::new(note), bar);
        }
    }
    footer::render(f, foot, app);
    if app.help {
        help::render(f, area, app.fps, t);
    }
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
