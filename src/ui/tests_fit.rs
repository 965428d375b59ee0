//! The display at its smallest and in its corners: 80×24 keeps every pane
//! readable, clearing agrees with the totals, the client table scrolls, and
//! the keys that would touch a profile ask first or say why not.

use super::app::{App, Role, ServerView};
use super::fixtures::{client_app, frame, rows, server_app};
use super::keys::{After, on_key};
use super::station::Station;
use crate::plan::{ClientPlan, Plan, counterpart_server, plan};
use clap::FromArgMatches;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::net::SocketAddr;
use synapse_engine::SessionInfo;
use synapse_stats::{Record, RecordKind};

fn press(c: char, app: &mut App, station: &mut Station) -> After {
    on_key(
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
        app,
        station,
    )
}

fn session(port: u16, packets: u64) -> SessionInfo {
    SessionInfo {
        peer: SocketAddr::from(([192, 0, 2, 7], port)),
        packets,
        bytes: packets * 8,
        last_seen_ns: 0,
        refused: Default::default(),
    }
}

/// A client plan from a command line, with `config` as its file.
fn client_plan(args: &[&str], config: &std::path::Path) -> ClientPlan {
    let mut argv = vec!["synapse"];
    argv.extend(args);
    argv.extend(["--config", config.to_str().unwrap()]);
    let m = crate::cli::command().try_get_matches_from(argv).unwrap();
    let cli = crate::cli::Cli::from_arg_matches(&m).unwrap();
    match plan(cli, &m).unwrap() {
        Plan::Client(c) => c,
        Plan::Server(_) => panic!("a client plan"),
    }
}

/// Item 20: at 80×24 all three percentile rows have their sparkline, the
/// titles are whole, and a large loss fits its line.
#[test]
fn the_smallest_frame_keeps_every_pane_readable() {
    let mut app = client_app();
    for seq in 0..227_000 {
        app.client
            .live
            .ingest(&Record::event(RecordKind::Lost, 20_000 + seq, 0, false));
    }
    let screen = rows(&frame(&app, 80, 24));
    let title = screen
        .iter()
        .position(|l| l.contains("Percentiles"))
        .unwrap();
    // The percentile pane: the right-hand part of the rows under its title.
    let pane: Vec<String> = screen[title + 1..]
        .iter()
        .filter_map(|l| l.split("││").nth(1).map(str::to_string))
        .collect();
    for name in ["p50 ", "p99 ", "p99.9 "] {
        // Each label has its chart on the row under it.
        let at = pane.iter().position(|l| l.starts_with(name)).unwrap();
        let chart = &pane[at + 1];
        assert!(
            chart.chars().any(|c| "▁▂▃▄▅▆▇█".contains(c)),
            "{name} has no sparkline: {chart}"
        );
    }
    let titles = screen.iter().find(|l| l.contains("RTT histogram")).unwrap();
    assert!(
        titles.contains("┌ RTT histogram · 10 s · min–max · log ─"),
        "{titles}"
    );
    assert!(titles.contains("┌ Percentiles per 250 ms ─"), "{titles}");
    let lost = screen.iter().find(|l| l.contains(" Lost ")).unwrap();
    assert!(lost.contains("│ Lost    227.0k (95."), "{lost}");
}

/// Item 20: zoomed in, the histogram still spreads over its whole width.
#[test]
fn a_zoomed_histogram_fills_its_width() {
    let mut app = client_app();
    app.zoom = 4;
    let screen = rows(&frame(&app, 120, 36));
    let title = screen
        .iter()
        .position(|l| l.contains("RTT histogram"))
        .unwrap();
    let axis = title
        + screen[title..]
            .iter()
            .position(|l| l.contains("timeout"))
            .unwrap();
    let plot: Vec<&String> = screen[title + 1..axis].iter().collect();
    let widest = plot
        .iter()
        .map(|l| {
            let left = l.split("││").next().unwrap();
            let cells: Vec<char> = left.chars().collect();
            cells
                .iter()
                .rposition(|c| "▁▂▃▄▅▆▇█".contains(*c))
                .unwrap_or(0)
        })
        .max()
        .unwrap();
    assert!(widest > 45, "bars stop at column {widest} of about 58");
}

/// Item 18: after `c` the table counts from the clear, as the totals do.
#[test]
fn clearing_makes_the_client_table_count_from_zero() {
    let mut v = ServerView::default();
    v.session_active(session(1, 100));
    v.session_ended(session(2, 40));
    v.clear();
    assert!(v.ended.is_empty() && v.active.is_empty());
    v.session_active(session(1, 150));
    assert_eq!(v.active[0].packets, 50, "what came since the clear");
    v.session_ended(session(1, 170));
    assert_eq!(v.ended[0].packets, 70);
}

/// Item 18: `c` also forgets the packet the path showed.
#[test]
fn clearing_forgets_the_last_packet_shown() {
    let mut app = client_app();
    assert!(app.anim.packet.is_some());
    app.clear();
    assert_eq!(app.anim.packet, None);
    let text = rows(&frame(&app, 120, 36)).join("\n");
    assert!(!text.contains("packet #10204"), "{text}");
}

/// Item 20: thousands of clients scroll.
#[test]
fn the_client_table_scrolls() {
    let mut app = server_app();
    for port in 0..100 {
        app.server.session_active(session(10_000 + port, 1));
    }
    app.server.scroll_by(50);
    let text = rows(&frame(&app, 120, 36)).join("\n");
    let first = text.lines().find(|l| l.contains("192.0.2.7:")).unwrap();
    // Active sessions sort by address: 10000…10099, then the fixture's two.
    assert!(first.contains("192.0.2.7:10050"), "{first}");
    assert!(text.contains(" Clients · 51–"), "{text}");
    assert!(text.contains("of 103 (↑ ↓ PgUp PgDn)"), "{text}");
    app.server.scroll_by(-1_000);
    assert_eq!(app.server.scroll, 0);
}

/// Item 19: an idle server on the wildcard suggests an address a client can
/// use, not 0.0.0.0.
#[test]
fn the_empty_table_suggests_a_reachable_address() {
    let mut app = server_app();
    app.server.active.clear();
    app.server.ended.clear();
    app.server.bind = "0.0.0.0:8080".into();
    app.server.reach = vec!["192.0.2.1:8080".into(), "127.0.0.1:8080".into()];
    let text = rows(&frame(&app, 120, 36)).join("\n");
    assert!(
        text.contains("none yet: synapse client 192.0.2.1:8080"),
        "{text}"
    );
    assert!(!text.contains("synapse client 0.0.0.0"));
}

/// The header names the profile and the file it came from, when it has room.
#[test]
fn the_header_shows_the_profile_and_config_file() {
    let mut app = client_app();
    app.profile = Some("lab".into());
    app.config_file = Some("/home/u/.config/synapse/config.toml".into());
    let wide = rows(&frame(&app, 160, 36));
    assert!(
        wide[0].contains("profile lab  /home/u/.config/synapse/config.toml"),
        "{}",
        wide[0]
    );
    let narrow = rows(&frame(&app, 80, 24));
    assert!(
        narrow[0].contains("● MEASURING"),
        "the state always fits: {}",
        narrow[0]
    );
}

/// Item 17: in loopback mode `s` and `b` say at once why they cannot work.
#[test]
fn loopback_refuses_profile_keys_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let c = client_plan(&[], &config);
    let s = counterpart_server(&c);
    let mut station = Station::new(c.clone(), s.clone(), false);
    let mut app = super::initial_app(&c, &s, &station, Role::Client);
    for key in ['s', 'b'] {
        press(key, &mut app, &mut station);
        assert!(app.prompt.is_none(), "{key}: no name asked for");
        let status = app.status.take().unwrap();
        assert!(status.contains("loopback has none"), "{key}: {status}");
    }
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "",
        "nothing written"
    );
}

/// Item 17: `b` over a stored baseline asks first; only `y` replaces it.
#[test]
fn replacing_a_baseline_asks_first() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    let stored = "[profiles.lab]\nserver = \"192.0.2.10:8080\"\n\n[profiles.lab.baseline]\n\
        date = \"2026-11-01T00:00:00Z\"\np50_ns = 1\np99_ns = 2\np999_ns = 3\n\
        loss_percent = 0.0\ntimestamp_source = \"user\"\n";
    std::fs::write(&config, stored).unwrap();
    let c = client_plan(&["client", "--profile", "lab"], &config);
    let s = counterpart_server(&c);
    let mut station = Station::new(c.clone(), s.clone(), false);
    let mut app = super::initial_app(&c, &s, &station, Role::Client);
    for seq in 0..100 {
        app.client
            .live
            .ingest(&Record::sample(seq, 0, 50_000, false));
    }
    press('b', &mut app, &mut station);
    let question = app.confirm.as_ref().unwrap().question();
    assert_eq!(
        question,
        "replace the baseline of 'lab' (taken 2026-11-01T00:00:00Z) with these figures? y / n"
    );
    press('n', &mut app, &mut station);
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        stored,
        "n keeps it"
    );
    assert_eq!(app.status.as_deref(), Some("kept as it was"));
    press('b', &mut app, &mut station);
    press('y', &mut app, &mut station);
    let after = std::fs::read_to_string(&config).unwrap();
    assert!(after.contains("p50_ns = 50"), "{after}");
    assert!(app.confirm.is_none());
}

/// Item 20: large server figures fit the pane at 80×24.
#[test]
fn large_server_figures_fit_their_pane() {
    let mut app = server_app();
    app.server.totals.sessions = 3_000;
    app.server.totals.packets = 123_456_789;
    app.server.totals.bytes = 9_876_543_210;
    let screen = rows(&frame(&app, 80, 24));
    // The Reflector pane: the first 34 cells of the rows under its title.
    let pane: Vec<String> = screen[2..11]
        .iter()
        .map(|l| l.chars().take(34).collect())
        .collect();
    let text = pane.join("\n");
    assert!(text.contains("│ Clients 2 active · 3,000 in all"), "{text}");
    assert!(text.contains("│ Echoed  123.46M packets"), "{text}");
    assert!(text.contains("│ Bytes   9.88G"), "{text}");
    assert!(
        pane.iter().all(|l| l.ends_with('│')),
        "a line ran over: {text}"
    );
}

/// At 80, 120 and 200 columns, the server's client table and the client's
/// segment table keep every column whole and apart (headers too).
#[test]
fn tables_keep_their_columns_apart_at_every_width() {
    use super::layout_check::columns_apart;
    let find = |screen: &[String], text: &str| {
        screen
            .iter()
            .find(|l| l.contains(text))
            .unwrap_or_else(|| panic!("no {text:?} in\n{}", screen.join("\n")))
            .clone()
    };
    for width in [80u16, 120, 200] {
        let screen = rows(&frame(&server_app(), width, 30));
        let check = |line: String, cells: &[&str]| {
            columns_apart(&line, cells).unwrap_or_else(|e| panic!("{width}: {e}"));
        };
        check(
            find(&screen, "last seen"),
            &[
                "client",
                "packets",
                "bytes",
                "refused",
                "last seen",
                "state",
            ],
        );
        check(
            find(&screen, "192.0.2.7:40100"),
            &[
                "192.0.2.7:40100",
                "3,000",
                "24,000",
                "1,200 rate",
                "0.1 s ago",
                "active",
            ],
        );
        let screen = rows(&frame(&client_app(), width, 30));
        let notes = width >= 120;
        let with = |cells: &[&'static str], note: &'static str| {
            let mut v = cells.to_vec();
            if notes {
                v.push(note);
            }
            v
        };
        let head = with(&["send", "network", "dwell", "receive"], "software stamps");
        check(find(&screen, "dwell   receive"), &head);
        let p50 = with(
            &["p50", "2.5 µs", "63.3 µs", "3.0 µs", "17.2 µs"],
            "since start or clear",
        );
        check(find(&screen, " p50 "), &p50);
    }
}
