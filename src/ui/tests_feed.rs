//! The station driven by recorded client runs (a [`ClientStarter`] that
//! hands out scripts): no thread, socket or sleep, and every figure known
//! before the run, so the display's and the summary's can be checked
//! exactly.

use super::app::Role;
use super::fixtures::{frame, rows};
use super::station::Station;
use crate::error::AppError;
use crate::plan::{ClientPlan, Plan, counterpart_server, plan};
use crate::session::{ClientFeed, ClientFinish, ClientStarter};
use clap::FromArgMatches;
use std::cell::Cell;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};
use synapse_engine::{ClientOutcome, Placement, StampingInfo};
use synapse_stats::{Record, RecordKind, Shape, Stats};

/// A client run played back: one batch of records a poll, then finished.
#[derive(Debug)]
struct Recorded {
    /// What each poll drains.
    batches: VecDeque<Vec<Record>>,
    /// Every record of the run, as the engine's own statistics count them
    /// (those the live view was not handed too).
    all: Vec<Record>,
    /// Records the live view's ring could not hold.
    overflow: u64,
    stopped: Cell<bool>,
    stamping: StampingInfo,
}

impl Recorded {
    fn new(batches: Vec<Vec<Record>>) -> Self {
        let all = batches.concat();
        Self {
            batches: batches.into(),
            all,
            overflow: 0,
            stopped: Cell::new(false),
            stamping: StampingInfo::default(),
        }
    }

    /// The same run, `missed` more records measured that never reached
    /// the live view (its ring was full).
    fn missing(mut self, missed: Vec<Record>) -> Self {
        self.overflow = missed.len() as u64;
        self.all.extend(missed);
        self
    }
}

impl ClientFeed for Recorded {
    fn server(&self) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 10], 8080))
    }

    fn local(&self) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 1], 40_000))
    }

    fn stamping(&self) -> &StampingInfo {
        &self.stamping
    }

    fn shape(&self) -> Shape {
        Shape::default()
    }

    fn drain(&mut self, each: &mut dyn FnMut(&Record)) {
        for r in self.batches.pop_front().unwrap_or_default() {
            each(&r);
        }
    }

    fn ring_overflow(&self) -> u64 {
        self.overflow
    }

    fn is_finished(&self) -> bool {
        self.stopped.get() || self.batches.is_empty()
    }

    fn log_failure(&self) -> Option<String> {
        None
    }

    fn stop(&self) {
        self.stopped.set(true);
    }

    fn finish(mut self: Box<Self>, each: &mut dyn FnMut(&Record)) -> ClientFinish {
        while !self.batches.is_empty() {
            self.drain(each);
        }
        let mut stats = Stats::new();
        for r in &self.all {
            stats.record(r);
        }
        ClientFinish {
            outcome: Ok(ClientOutcome {
                stats,
                measured: Duration::from_secs(1),
                placement: Placement::plain(1, true),
                interrupted: false,
                ring_overflow: self.overflow,
                log_overflow: 0,
                stale_stamps: 0,
                unauthenticated: 0,
                stamping: self.stamping.clone(),
                tcp: None,
                extensions: None,
                nic_clock: None,
                gave_up: None,
                group: None,
            }),
            server: self.server(),
            local: self.local(),
            log: None,
            load: None,
            responders: None,
        }
    }
}

/// A starter that hands out `runs` in turn and counts the starts; one
/// more start than there are runs fails as the engine's would.
fn starter(runs: Vec<Recorded>) -> (ClientStarter, Rc<Cell<usize>>) {
    let started = Rc::new(Cell::new(0));
    let count = Rc::clone(&started);
    let mut runs: VecDeque<Recorded> = runs.into();
    let start = ClientStarter::new(move |_, _, _| {
        count.set(count.get() + 1);
        match runs.pop_front() {
            Some(r) => Ok(Box::new(r) as Box<dyn ClientFeed>),
            None => Err(AppError::Usage(
                "no reflector answers at 192.0.2.10:8080".into(),
            )),
        }
    });
    (start, started)
}

/// A plan against a remote address: the station starts no reflector of
/// its own, and nothing is sent anywhere (the runs are recorded).
fn remote_plan(dir: &tempfile::TempDir) -> ClientPlan {
    remote_plan_with(dir, &[])
}

/// [`remote_plan`] with more options.
fn remote_plan_with(dir: &tempfile::TempDir, extra: &[&str]) -> ClientPlan {
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let mut argv = vec![
        "synapse",
        "client",
        "192.0.2.10:8080",
        "--config",
        config.to_str().unwrap(),
    ];
    argv.extend(extra);
    let m = crate::cli::command().try_get_matches_from(argv).unwrap();
    let cli = crate::cli::Cli::from_arg_matches(&m).unwrap();
    match plan(cli, &m).unwrap() {
        Plan::Client(c) => c,
        Plan::Server(_) => panic!("a client plan"),
    }
}

fn samples(seqs: std::ops::Range<u64>, rtt_ns: u64, warmup: bool) -> Vec<Record> {
    seqs.map(|s| Record::sample(s, s * 1_000_000, rtt_ns, warmup))
        .collect()
}

/// A station over `runs` with its app, started in the client role.
fn started(c: &ClientPlan, runs: Vec<Recorded>) -> (Station, super::app::App, Rc<Cell<usize>>) {
    let s = counterpart_server(c);
    let (start, count) = starter(runs);
    let mut station = Station::new(c.clone(), s.clone(), false).with_client_starter(start);
    let mut app = super::initial_app(c, &s, &station, Role::Client);
    station.start(&mut app);
    (station, app, count)
}

/// Warm-up, then two batches (one with losses): the live view shows each
/// batch as it is polled, the run ends itself when the script does, and
/// the summary holds exactly what was recorded.
#[test]
fn a_recorded_run_is_shown_as_it_arrives_and_summed_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let c = remote_plan(&dir);
    let mut lossy = samples(5..105, 40_000, false);
    for seq in 105..108 {
        lossy.push(Record::event(RecordKind::Lost, seq, seq * 1_000_000, false));
    }
    let run = Recorded::new(vec![
        samples(0..5, 900_000, true),
        lossy,
        samples(108..158, 60_000, false),
    ]);
    let (mut station, mut app, count) = started(&c, vec![run]);
    assert!(app.running, "{:?}", app.status);
    assert_eq!(app.client.info.target, "192.0.2.10:8080");
    let t0 = Instant::now();
    station.poll(&mut app, t0);
    assert_eq!(app.client.run_done, 0, "warm-up is not counted");
    assert_eq!(app.client.live.total().counters().sent, 0);
    station.poll(&mut app, t0 + Duration::from_millis(100));
    let live = app.client.live.total().counters();
    assert_eq!((live.sent, live.received, live.lost), (103, 100, 3));
    assert_eq!(app.client.run_done, 103);
    assert!(app.running);
    station.poll(&mut app, t0 + Duration::from_millis(200));
    assert_eq!(app.client.live.total().counters().sent, 153);
    // The script is over: the run ends as a finished engine run does.
    station.poll(&mut app, t0 + Duration::from_millis(300));
    assert!(!app.running);
    let status = app.status.clone().unwrap_or_default();
    assert!(status.starts_with("run complete"), "{status}");
    let report = station.finish(&mut app, None).report.unwrap();
    let p = &report.summary.packets;
    assert_eq!((p.sent, p.received, p.lost), (153, 150, 3));
    let rtt = report.summary.rtt_ns.unwrap();
    // Kept to three significant digits: the highest of 60 µs's bucket.
    assert_eq!(rtt.min, 40_000);
    assert!(
        (60_000..60_060).contains(&rtt.max),
        "warm-up left out: {}",
        rtt.max
    );
    assert_eq!(count.get(), 1);
}

/// Records the live view's ring dropped are named on the screen, and the
/// summary, from the engine's own statistics, still counts them.
#[test]
fn records_the_live_view_missed_are_named_and_the_summary_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let c = remote_plan(&dir);
    let run = Recorded::new(vec![
        samples(0..40, 50_000, false),
        samples(100..110, 50_000, false),
    ])
    .missing(samples(40..100, 50_000, false));
    let (mut station, mut app, _) = started(&c, vec![run]);
    station.poll(&mut app, Instant::now());
    assert_eq!(app.client.live.total().counters().sent, 40);
    assert_eq!(app.client.ring_overflow, 60);
    // Beside the state, at the smallest size too.
    for (w, h) in [(80, 24), (120, 36)] {
        let header = &rows(&frame(&app, w, h))[0];
        assert!(header.contains("⚠ 60 not shown  ● MEASURING"), "{header}");
        assert_eq!(header.chars().count(), usize::from(w), "{header}");
    }
    let report = station.finish(&mut app, None).report.unwrap();
    assert_eq!(report.summary.packets.sent, 110);
}

/// `c` clears and restarts the client: the next recorded run starts, and
/// the summary holds only what came after the clear. A start the engine
/// refuses says why, stops, and keeps the exit status to leave with.
#[test]
fn clear_restarts_the_client_and_a_refused_start_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let c = remote_plan(&dir);
    let first = Recorded::new(vec![samples(0..10, 70_000, false); 3]);
    let second = Recorded::new(vec![samples(0..20, 30_000, false)]);
    let (mut station, mut app, count) = started(&c, vec![first, second]);
    station.poll(&mut app, Instant::now());
    assert_eq!(app.client.live.total().counters().sent, 10);
    station.clear(&mut app);
    assert_eq!(count.get(), 2, "the clear restarted the client");
    assert_eq!(app.client.live.total().counters().sent, 0);
    station.poll(&mut app, Instant::now());
    station.poll(&mut app, Instant::now());
    assert!(!app.running);
    // A third start: the starter has no run left, as an engine that
    // cannot reach its peer.
    station.start(&mut app);
    assert!(!app.running);
    let status = app.status.clone().unwrap_or_default();
    assert!(status.starts_with("cannot start: no reflector"), "{status}");
    let finale = station.finish(&mut app, None);
    let report = finale.report.unwrap();
    assert_eq!(
        report.summary.packets.sent, 20,
        "only the run after the clear"
    );
    let max = report.summary.rtt_ns.unwrap().max;
    assert!(
        (30_000..30_030).contains(&max),
        "the first run's 70 µs left out: {max}"
    );
    let (why, code) = finale.failure.unwrap();
    assert!(why.contains("no reflector"), "{why}");
    assert_eq!(code, crate::error::exit::USAGE);
}

/// At a low --fps one frame drains a second of records: each still joins
/// the window of its own time, so the percentile history has no empty
/// windows between full ones.
#[test]
fn records_drained_in_one_frame_join_the_windows_of_their_own_time() {
    let dir = tempfile::tempdir().unwrap();
    let c = remote_plan(&dir);
    let second: Vec<Record> = (0..100)
        .map(|s| Record::sample(s, s * 10_000_000, 40_000, false))
        .collect();
    let run = Recorded::new(vec![second, Vec::new()]);
    let (mut station, mut app, _) = started(&c, vec![run]);
    station.poll(&mut app, Instant::now() + Duration::from_secs(1));
    let counts: Vec<u64> = app
        .client
        .live
        .history()
        .iter()
        .map(|w| w.samples)
        .collect();
    assert_eq!(counts.len(), 4, "a second is four windows: {counts:?}");
    assert_eq!(counts.iter().sum::<u64>(), 100, "{counts:?}");
    assert!(
        counts.iter().all(|&n| n > 0),
        "no window left empty: {counts:?}"
    );
}

/// The reflector goes silent mid-run: after a second without a reply (or
/// at the path's first error) the state is no longer MEASURING and the
/// latest figure gives way to how long replies have been missing (since
/// the last reply, 99 ms into the run) and what the path said; a reply
/// ends it.
#[test]
fn a_silent_far_side_is_shown_while_it_lasts_never_a_stale_figure() {
    let dir = tempfile::tempdir().unwrap();
    let c = remote_plan(&dir);
    let s = synapse_stats::PathError {
        kind: synapse_stats::PathErrorKind::PortUnreachable,
        from: "192.0.2.10".parse().ok(),
        mtu: None,
    };
    let mut dying = samples(0..100, 40_000, false);
    dying.push(Record::event(RecordKind::Lost, 100, 200_000_000, false));
    let quiet = vec![Record::event(RecordKind::Lost, 101, 1_500_000_000, false)];
    let erring = vec![Record::path_error(102, 1_600_000_000, s, false)];
    let back: Vec<Record> = (103..110)
        .map(|s| Record::sample(s, 4_250_000_000 + s, 42_000, false))
        .collect();
    let run = Recorded::new(vec![dying, quiet, erring, back, Vec::new()]);
    let (mut station, mut app, _) = started(&c, vec![run]);
    let t0 = Instant::now();
    station.poll(&mut app, t0 + Duration::from_millis(300));
    assert_eq!(app.client.silence, None, "one lost request is no silence");
    let screen = rows(&frame(&app, 120, 36)).join("\n");
    assert!(
        screen.contains("● MEASURING") && screen.contains("→ 40.0 µs"),
        "{screen}"
    );
    station.poll(&mut app, t0 + Duration::from_millis(1500));
    let silence = app
        .client
        .silence
        .expect("a second and a half without a reply");
    assert_eq!(silence.error, None);
    station.poll(&mut app, t0 + Duration::from_millis(4_200));
    assert_eq!(app.client.silence.and_then(|s| s.error), Some(s));
    let screen = rows(&frame(&app, 120, 36)).join("\n");
    assert!(screen.contains("▲ NO REPLY"), "{screen}");
    assert!(!screen.contains("● MEASURING"), "{screen}");
    assert!(screen.contains("⚠ no reply for 4.1 s"), "{screen}");
    // The outage going on is one, not "none" until it ends.
    assert!(screen.contains("one now, 4.1 s"), "{screen}");
    assert!(
        !screen.contains("→ 40.0 µs"),
        "the stale figure is gone: {screen}"
    );
    assert!(
        screen.contains("no reply for 4.1 s (port unreachable from 192.0.2.10)"),
        "{screen}"
    );
    station.poll(&mut app, t0 + Duration::from_millis(4_300));
    assert_eq!(app.client.silence, None, "replies again");
    let screen = rows(&frame(&app, 120, 36)).join("\n");
    assert!(screen.contains("● MEASURING"), "{screen}");
}

/// One rule with the headless run: quitting before the length asked is
/// INTERRUPTED (not judged, exit 130); a run asked for no length ends
/// normally when the user quits; a run that reached its length is judged.
#[test]
fn quitting_before_the_length_asked_is_interrupted_and_without_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let busy = || Recorded::new(vec![samples(0..50, 40_000, false); 5]);
    for (extra, interrupted) in [
        (&["--duration", "30s"][..], true),
        (&["--packets", "1000"][..], true),
        (&[][..], false),
    ] {
        let mut c = remote_plan_with(&dir, extra);
        if extra.is_empty() {
            // As the live display plans it (on a terminal): no length
            // unless one is asked (a headless plan's default is a count).
            c.packets = None;
        }
        let (mut station, mut app, _) = started(&c, vec![busy()]);
        station.poll(&mut app, Instant::now());
        assert!(app.running, "{extra:?}");
        let report = station.finish(&mut app, None).report.unwrap();
        assert_eq!(report.interrupted, interrupted, "{extra:?}");
        let code = report.exit_status();
        assert_eq!(
            code == crate::error::exit::INTERRUPTED,
            interrupted,
            "{extra:?}: {code}"
        );
    }
    // Its length reached (the engine ended it), quitting judges it.
    let c = remote_plan_with(&dir, &["--packets", "50"]);
    let (mut station, mut app, _) =
        started(&c, vec![Recorded::new(vec![samples(0..50, 40_000, false)])]);
    station.poll(&mut app, Instant::now());
    station.poll(&mut app, Instant::now());
    assert!(!app.running);
    let report = station.finish(&mut app, None).report.unwrap();
    assert!(!report.interrupted);
    assert_eq!(report.exit_status(), crate::error::exit::PASS);
}

/// Issue 51: a run, a switch to the server role and back, a second run
/// whose sequence numbers start again: the display counts what the report
/// counts (both runs, their measured time, no reordering), and once
/// stopped it names the last reply as the last, not as a current figure.
#[test]
fn the_display_and_the_report_agree_after_a_switch_of_role_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let c = remote_plan(&dir);
    let first = Recorded::new(vec![samples(0..300, 50_000, false), vec![]]);
    let second = Recorded::new(vec![samples(0..200, 60_000, false), vec![]]);
    let (mut station, mut app, _) = started(&c, vec![first, second]);
    station.poll(&mut app, Instant::now());
    station.switch_role(&mut app);
    assert_eq!(app.role, Role::Server);
    station.switch_role(&mut app);
    assert_eq!(app.role, Role::Client);
    station.poll(&mut app, Instant::now());
    station.stop(&mut app);
    let live = *app.client.live.total().counters();
    let (_, label) = super::panes::progress::label(&app.client, app.running);
    let screen = rows(&frame(&app, 120, 36)).join("\n");
    let report = station.finish(&mut app, None).report.unwrap();
    let p = &report.summary.packets;
    assert_eq!((live.sent, live.reordered), (p.sent, p.reordered));
    assert_eq!(
        (p.sent, p.reordered),
        (500, 0),
        "the second run's numbers start again"
    );
    let all = format!(
        "since clear: 500 packets, {:.2} s",
        report.summary.duration_s.unwrap()
    );
    assert!(label.contains(&all), "{label} (the report: {all})");
    assert!(screen.contains("■ last 60.0 µs"), "{screen}");
    assert!(
        screen.contains("stopped · last reply #199: 60.0 µs"),
        "{screen}"
    );
    assert!(
        !screen.contains("→ 60.0 µs"),
        "no current figure once stopped"
    );
}
