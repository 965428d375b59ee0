//! Whole-frame snapshots and frame-level behaviour, from deterministic
//! states (see `fixtures`).

use super::fixtures::{
    client_app, frame, load_client_app, paced_client_app, rows, server_app, tcp_client_app,
};
use super::theme::Theme;

/// The sizes every view is drawn at: the smallest supported, tui-shot's,
/// and a wide screen.
const SIZES: [(u16, u16); 3] = [(80, 24), (120, 36), (260, 60)];

/// Every view at every size, snapshotted: the client (ping-pong, paced,
/// TCP), the server and the help overlay. No row of any pane is cut at
/// its right border, and no box is wider than its content needs at 260.
#[test]
fn every_view_at_every_size() {
    let mut help = client_app();
    help.help = true;
    let mut server_help = server_app();
    server_help.help = true;
    let views = [
        ("client", client_app()),
        ("paced", paced_client_app()),
        ("tcp", tcp_client_app()),
        ("load", load_client_app()),
        ("server", server_app()),
        ("help", help),
        ("server_help", server_help),
    ];
    for (name, app) in &views {
        for (w, h) in SIZES {
            let f = frame(app, w, h);
            insta::assert_snapshot!(format!("{name}_{w}x{h}"), f.backend());
        }
    }
    // At 260 columns the stacks keep the width their details need (one
    // spare column; 120 has room for the details but not the spare), and
    // the percentiles sit beside them.
    let stack_width = |w: u16| {
        let screen = rows(&frame(&client_app(), w, 36));
        let line = screen
            .iter()
            .find(|l| l.contains("┌ CLIENT (here)"))
            .unwrap();
        let chars: Vec<char> = line.chars().collect();
        let start = line[..line.find("┌ CLIENT").unwrap()].chars().count();
        let end = (start..chars.len()).find(|&i| chars[i] == '┐').unwrap();
        (end - start, screen[1].contains("Percentiles"))
    };
    assert_eq!(stack_width(120), (38, false));
    assert_eq!(stack_width(260), (39, true));
}

/// Issue 36: the RTT pane said `Lost 626`, the histogram `lost 1,471`
/// (lost and late under one word). Both now count lost and late apart,
/// the same, at every size.
#[test]
fn the_rtt_pane_and_the_histogram_count_lost_and_late_alike() {
    let mut app = client_app();
    let live = &mut app.client.live;
    for seq in 0..1_471u64 {
        live.ingest(&synapse_stats::Record::event(
            synapse_stats::RecordKind::Lost,
            50_000 + seq,
            0,
            false,
        ));
    }
    for seq in 0..845u64 {
        live.ingest(&synapse_stats::Record::event(
            synapse_stats::RecordKind::Late { reordered: false },
            50_000 + seq,
            0,
            false,
        ));
    }
    let c = *live.total().counters();
    let (lost, late) = (
        synapse_units::group_thousands(c.lost),
        synapse_units::group_thousands(c.late),
    );
    for (w, h) in SIZES {
        let text = rows(&frame(&app, w, h)).join("\n");
        let pane = format!("│ Lost    {lost} (");
        assert!(text.contains(&pane), "{w}×{h}: {pane} in\n{text}");
        assert!(
            text.contains(&format!("│ Late    {late}")),
            "{w}×{h}:\n{text}"
        );
        let hist = format!(" lost {lost} · late {late} ");
        assert!(text.contains(&hist), "{w}×{h}: {hist} in\n{text}");
    }
}

#[test]
fn tcp_frames_name_the_segments_and_the_acks_on_the_reply() {
    let text = rows(&frame(&tcp_client_app(), 120, 36)).join("\n");
    // The TCP segments are named, the piggy-backed ACKs said, not hidden.
    for want in [
        "TCP :50000",
        "far side ",
        "TCP ACK ⇄ 9.0 µs",
        "ACK RTT  far side",
        "ACK on reply: 1500 of 2000",
        "TCP ping-pong",
    ] {
        assert!(text.contains(want), "{want} in\n{text}");
    }
}

#[test]
fn paced_rows_fit_the_smallest_frame_whole() {
    let text = rows(&frame(&paced_client_app(), 80, 24)).join("\n");
    for row in [
        "RTT · every 1.00 ms",
        "|IPDV|",
        "Sched   p99 +",
        "1-way   →",
        "Lost    2 (0.10%)  →1 ←1 ?0",
        "Outages",
    ] {
        assert!(text.contains(row), "{row}: {text}");
    }
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
        app.client.live.ingest(&synapse_stats::Record::sample(
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
    app.prompt = Some(super::app::Prompt {
        text: "lab-a".into(),
        fresh: false,
    });
    let text = rows(&frame(&app, 120, 36)).join("\n");
    assert!(
        text.contains(" save profile as: lab-a█   Enter saves · Esc cancels"),
        "{text}"
    );
    app.prompt = None;
    // A baseline with half today's p50: +100 % or so, drawn under the figures.
    app.baseline = Some(half_p50_baseline(&app));
    let rows = rows(&frame(&app, 120, 36));
    assert!(
        rows[14].starts_with("└ vs base p50 +100% p99 0% "),
        "{}",
        rows[14]
    );
}

#[test]
fn the_running_comparison_with_the_mark_is_drawn_under_the_figures() {
    let mut app = client_app();
    app.theme = Theme::new(true);
    app.client.versus = Some((" vs mark p50 +15%* p99 −3% ".into(), true));
    let t = frame(&app, 120, 36);
    let row = &rows(&t)[14];
    let at = row
        .find("vs mark p50 +15%* p99 −3% ")
        .unwrap_or_else(|| panic!("{row}"));
    assert!(row.starts_with("└"), "{row}");
    // Significant: in the warning colour, not dimmed.
    let x = row[..at].chars().count() as u16;
    let cell = &t.backend().buffer()[(x, 14)];
    assert_eq!(cell.fg, app.theme.warn().fg.unwrap(), "{cell:?}");
    // Not significant yet: dimmed.
    app.client.versus = Some((" vs mark p50 +1% p99 +2% ".into(), false));
    let t = frame(&app, 120, 36);
    let cell = &t.backend().buffer()[(x, 14)];
    assert_eq!(cell.fg, app.theme.dim().fg.unwrap(), "{cell:?}");
    // The help lists the key.
    app.client.versus = None;
    app.help = true;
    let help = rows(&frame(&app, 120, 36)).join("\n");
    assert!(help.contains("mark a reference"), "{help}");
}

/// A baseline whose p50 is half of what `app` shows (the rest as shown).
fn half_p50_baseline(app: &super::app::App) -> crate::config::Baseline {
    let live =
        synapse_stats::Summary::from_stats(app.client.live.total(), std::time::Duration::ZERO);
    let rtt = live.rtt_ns.unwrap();
    crate::config::Baseline {
        date: "2026-11-21T10:00:00Z".into(),
        p50_ns: rtt.p50 / 2,
        p99_ns: rtt.p99,
        p999_ns: rtt.p999,
        loss_percent: 0.0,
        timestamp_source: "user".into(),
        kind: None,
    }
}

#[test]
fn the_floor_ratio_is_drawn_under_the_figures_when_it_fits() {
    let mut app = client_app();
    let live =
        synapse_stats::Summary::from_stats(app.client.live.total(), std::time::Duration::ZERO);
    let p50 = live.rtt_ns.unwrap().p50 as f64;
    let floor = |blocking: f64| {
        synapse_engine::floor::Calibration::fixture(synapse_engine::floor::Figures {
            udp_blocking_rtt_ns: Some(blocking),
            ..Default::default()
        })
    };
    app.floor = Some(floor(p50 / 4.0));
    let rows = rows(&frame(&app, 120, 36));
    assert!(
        rows[14].starts_with("└") && rows[14].contains(" 4.0× floor ┘"),
        "{}",
        rows[14]
    );
    // No busy-poll floor measured: a busy-poll run claims none; nor does
    // a TCP run against a calibration without a TCP floor.
    for mode in [
        crate::report::RunMode::BusyPoll,
        crate::report::RunMode::TcpBlocking,
    ] {
        app.client.info.floor_kind.mode = mode;
        let rows = super::fixtures::rows(&frame(&app, 120, 36));
        assert!(!rows[14].contains("floor"), "{mode:?}: {}", rows[14]);
    }
    // Beside a baseline's change, only if both fit.
    app.client.info.floor_kind.mode = crate::report::RunMode::Blocking;
    app.baseline = Some(half_p50_baseline(&app));
    let rows = super::fixtures::rows(&frame(&app, 120, 36));
    assert!(
        rows[14].starts_with("└ vs base p50 +100% p99 0% "),
        "{}",
        rows[14]
    );
    assert!(
        !rows[14].contains("floor"),
        "no room for both in 32 columns: {}",
        rows[14]
    );
}

/// The real display loop, on a `TestBackend`, fed scripted keys, against
/// the real in-process reflector: start, stop, switch to the server role
/// and back, quit. Numbers differ from run to run, so the snapshot holds
/// each step's header and footer with digits masked; the rest is asserted.
#[test]
fn the_real_loop_measures_stops_switches_and_quits_on_scripted_keys() {
    use super::station::Station;
    use super::{drive, initial_app};
    use crate::plan::{Plan, counterpart_server, plan};
    use clap::FromArgMatches;
    use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use std::time::Duration;

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let argv = [
        "synapse",
        "--config",
        config.to_str().unwrap(),
        "--warmup",
        "10",
    ];
    let m = crate::cli::command().try_get_matches_from(argv).unwrap();
    let cli = crate::cli::Cli::from_arg_matches(&m).unwrap();
    let Plan::Client(mut c) = plan(cli, &m).unwrap() else {
        panic!("a client plan")
    };
    c.packets = None;
    let s = counterpart_server(&c);
    let mut station = Station::new(c.clone(), s.clone(), false);
    let mut app = initial_app(&c, &s, &station, super::app::Role::Client);
    app.theme = Theme::new(false);
    let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    station.start(&mut app);
    let key = |c: char| Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    let mut steps = Vec::new();
    // Each step: wait, press a key (or nothing), then look at the frame.
    for (wait_ms, pressed) in [
        (700, None),
        (0, Some(' ')),
        (300, Some('r')),
        (300, Some('r')),
    ] {
        let script = futures_util::stream::unfold(Some(pressed), move |next| async move {
            let pressed = next?;
            tokio::time::sleep(Duration::from_millis(wait_ms)).await;
            let ev = pressed.map_or(Event::FocusGained, key);
            Some((Ok(ev), None))
        });
        let never = std::future::pending::<i32>();
        runtime
            .block_on(drive(
                &mut terminal,
                Box::pin(script),
                never,
                &mut station,
                &mut app,
            ))
            .unwrap();
        // One more frame after the key, as the next tick would draw it.
        terminal.draw(|f| super::draw::draw(f, &app)).unwrap();
        let rows = rows(&terminal);
        steps.push((pressed, rows));
    }
    let screen = |i: usize| steps[i].1.join("\n");
    assert!(screen(0).contains("● MEASURING"), "{}", screen(0));
    let measured = app.client.live.total().counters().sent;
    assert!(measured > 0, "the loopback run measured nothing");
    assert!(screen(1).contains("■ STOPPED"), "{}", screen(1));
    assert!(screen(2).contains("server on 127.0.0.1:"), "{}", screen(2));
    assert!(screen(2).contains("● REFLECTING"), "{}", screen(2));
    assert!(screen(3).contains("● MEASURING"), "{}", screen(3));
    let quit = futures_util::stream::iter([Ok(key('q'))]);
    runtime
        .block_on(drive(
            &mut terminal,
            quit,
            std::future::pending::<i32>(),
            &mut station,
            &mut app,
        ))
        .unwrap();
    let finale = station.finish(&mut app, None);
    let report = finale.report.expect("a report of what was measured");
    assert!(report.summary.packets.sent >= measured);
    let shown: Vec<String> = steps
        .iter()
        .map(|(pressed, rows)| {
            let first = &rows[0];
            let last = &rows[rows.len() - 1];
            format!("after {pressed:?}:\n{first}\n{last}")
        })
        .collect();
    insta::with_settings!({filters => vec![(r"\d+", "#")]}, {
        insta::assert_snapshot!(shown.join("\n"));
    });
}
