//! Whole-frame snapshots and frame-level behaviour, from deterministic
//! states (see `fixtures`).

use super::fixtures::{client_app, frame, rows, server_app};
use super::theme::Theme;

#[test]
fn client_frame_snapshot() {
    insta::assert_snapshot!(frame(&client_app(), 120, 36).backend());
}

#[test]
fn server_frame_snapshot() {
    insta::assert_snapshot!(frame(&server_app(), 120, 36).backend());
}

#[test]
fn help_overlay_snapshot() {
    let mut app = client_app();
    app.help = true;
    insta::assert_snapshot!(frame(&app, 120, 36).backend());
}

#[test]
fn smallest_supported_frame_snapshot() {
    insta::assert_snapshot!(frame(&client_app(), 80, 24).backend());
}

#[test]
fn a_small_terminal_gets_a_message_instead_of_broken_panes() {
    let text = rows(&frame(&client_app(), 60, 20)).join("\n");
    assert!(text.contains("Synapse needs 80×24."), "{text}");
    assert!(text.contains("This terminal is 60×20."), "{text}");
    assert!(!text.contains("Live RTT"));
}

#[test]
fn frozen_display_keeps_its_figures_while_data_arrives() {
    let mut app = client_app();
    app.toggle_freeze();
    let before = rows(&frame(&app, 120, 36));
    for i in 0..5_000 {
        app.client.live.ingest(&crate::stats::Record::sample(
            1_000_000 + i,
            0,
            5_000_000,
            false,
        ));
    }
    app.client.run_done += 5_000;
    let frozen = rows(&frame(&app, 120, 36));
    assert_eq!(
        before[1..35],
        frozen[1..35],
        "only the header's state may change"
    );
    assert!(frozen[0].contains("FROZEN"));
    app.toggle_freeze();
    let live = rows(&frame(&app, 120, 36)).join("\n");
    assert!(live.contains("→ 5.00 ms"), "{live}");
}

#[test]
fn animation_frames_are_deterministic_and_move() {
    let mut app = client_app();
    let a = rows(&frame(&app, 120, 36));
    assert_eq!(a, rows(&frame(&app, 120, 36)), "same state, same frame");
    app.anim.on_frame(100, 100, None);
    let b = rows(&frame(&app, 120, 36));
    assert_ne!(a[2..9], b[2..9], "the packet moved down a layer");
}

#[test]
fn no_color_draws_no_colours() {
    let mut app = client_app();
    app.theme = Theme::new(false);
    let t = frame(&app, 120, 36);
    let buf = t.backend().buffer();
    for cell in buf.content() {
        assert_eq!(
            cell.fg,
            ratatui::style::Color::Reset,
            "colour at {:?}",
            cell.symbol()
        );
        assert_eq!(cell.bg, ratatui::style::Color::Reset);
    }
    // The highlighted layer still stands out, by reverse video.
    assert!(
        buf.content()
            .iter()
            .any(|c| c.modifier.contains(ratatui::style::Modifier::REVERSED))
    );
}

#[test]
fn the_save_prompt_and_the_baseline_change_are_drawn() {
    let mut app = client_app();
    app.prompt = Some("lab-a".into());
    let text = rows(&frame(&app, 120, 36)).join("\n");
    assert!(
        text.contains(" save profile as: lab-a█   Enter saves · Esc cancels"),
        "{text}"
    );
    app.prompt = None;
    // A baseline with half today's p50: +100 % or so, drawn under the figures.
    let live =
        crate::stats::Summary::from_stats(app.client.live.total(), std::time::Duration::ZERO);
    app.baseline = Some(crate::config::Baseline {
        date: "2026-11-21T10:00:00Z".into(),
        p50_ns: live.rtt_ns.p50 / 2,
        p99_ns: live.rtt_ns.p99,
        p999_ns: live.rtt_ns.p999,
        loss_percent: 0.0,
        timestamp_source: "user".into(),
    });
    let rows = rows(&frame(&app, 120, 36));
    assert!(
        rows[14].starts_with("└ vs base p50 +100% p99 +0% "),
        "{}",
        rows[14]
    );
}
