//! Deterministic display states for render tests and snapshots: no clocks,
//! no sockets, the same frame every time.

use super::app::{App, ClientInfo, Role, ServerView};
use super::theme::Theme;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::Duration;
use synapse_engine::capabilities::Source;
use synapse_engine::{Points, ReflectorTotals, Refusals, SessionInfo, StampingInfo};
use synapse_stats::{Record, RecordKind, SegmentSet, Shape, Split};
use synapse_units::Every;

/// A client that measured 40 windows of traffic around 80 µs, with a
/// spike, a few losses and one of everything else.
pub fn client_app() -> App {
    let info = ClientInfo {
        target: "127.0.0.1:8080".into(),
        local: "127.0.0.1:50000".into(),
        mode: "loopback",
        cpu: 1,
        busy_poll: false,
        floor_kind: crate::report::FloorKind {
            mode: crate::report::RunMode::Blocking,
            paced: false,
            placement: crate::report::Placement::CrossCpu,
            remote_peer: false,
        },
        warmup: 200,
        packets: Some(100_000),
        duration: None,
        size: 8,
        pace: None,
        transport: synapse_engine::Transport::Udp,
    };
    let server = ServerView {
        bind: "127.0.0.1:8080".into(),
        cpu: 0,
        session_idle: Duration::from_millis(1500),
        ..ServerView::default()
    };
    let mut app = App::new(
        Role::Client,
        info,
        server,
        Theme::new(true),
        Every::Packets(100),
        30,
    );
    let stamping = StampingInfo {
        source: Source::Software,
        interface: Some("lo".into()),
        stamp: true,
        segments: SegmentSet::for_run(true, true, false),
        ..StampingInfo::default()
    };
    app.client.live.use_shape(Shape {
        segments: stamping.segments,
        ..Shape::default()
    });
    app.client.stamping = Some(stamping);
    let live = &mut app.client.live;
    let mut seq = 0u64;
    for _ in 0..200 {
        live.ingest(&Record::sample(seq, 0, 90_000, true));
        seq += 1;
    }
    for w in 0..40u64 {
        for i in 0..250u64 {
            // A spread around 80 µs, and a slow patch in windows 20..22.
            let base = if (20..22).contains(&w) {
                400_000
            } else {
                60_000
            };
            let rtt = base + (i * 7919 % 50) * 1_000;
            live.ingest(&Record::sample(seq, 0, rtt, false).with_split(split_of(rtt)));
            seq += 1;
        }
        if w % 10 == 3 {
            live.ingest(&Record::event(RecordKind::Lost, seq, 0, false));
            seq += 1;
        }
        live.close_window();
    }
    live.ingest(&Record::event(
        RecordKind::Late { reordered: true },
        5,
        0,
        false,
    ));
    live.ingest(&Record::event(RecordKind::Duplicate, 6, 0, false));
    live.ingest(&Record::event(RecordKind::Stray, 0, 0, false));
    live.ingest(&Record::sample(seq, 0, 72_500, false));
    app.client.run_done = 10_005;
    app.client.run_elapsed = Duration::from_secs(10);
    app.running = true;
    for _ in 0..3 {
        app.anim.on_frame(100, 100, Some((seq, 72_500)));
    }
    app
}

/// A paced STAMP client, every 1 ms: send errors of a few µs with one
/// missed slot, one-way delays read on one clock, one loss forward (the
/// reflector's count skips it) and one backward.
pub fn paced_client_app() -> App {
    let mut app = client_app();
    let pace = synapse_engine::Schedule {
        pattern: synapse_stats::Pattern::Periodic,
        interval: Duration::from_millis(1),
    };
    app.client.info.pace = Some(pace);
    app.client.live = synapse_stats::LiveStats::new();
    app.client.live.use_shape(Shape {
        segments: SegmentSet::for_run(true, true, false),
        schedule: Some((pace.pattern, pace.interval_ns())),
        one_way: Some(true),
        cos: None,
    });
    let live = &mut app.client.live;
    let mut reflector_seq = 0u32;
    for seq in 0..2_000u64 {
        let far_lost = seq == 700;
        let back_lost = seq == 1_400;
        if far_lost || back_lost {
            reflector_seq += u32::from(back_lost);
            live.ingest(&Record::event(RecordKind::Lost, seq, 0, false).with_send_lag(2_000));
            continue;
        }
        let rtt = 60_000 + (seq * 7919 % 40) * 1_000;
        let forward = 25_000 + (seq * 31 % 7) as i64 * 1_000;
        let back = rtt as i64 - forward - 3_000;
        let far = synapse_stats::FarSide::new(reflector_seq)
            .with_application(Some(forward), Some(back))
            .with_kernel(Some(forward - 2_000), Some(back - 2_000));
        reflector_seq += 1;
        let r = Record::sample(seq, seq * 1_000_000, rtt, false)
            .with_split(split_of(rtt))
            .with_send_lag(1_000 + seq % 5 * 500)
            .with_far(far);
        live.ingest(&r);
        if seq % 250 == 0 {
            live.close_window();
        }
    }
    live.ingest(&Record::event(RecordKind::Missed, 2_000, 0, false));
    app
}

/// A paced STAMP client under load: an idle phase at 1 ms, then a
/// download whose queue grows to 100 ms on the way back, four streams,
/// goodput stable.
pub fn load_client_app() -> App {
    use crate::session::load_live::{LivePoint, LoadLive};
    use synapse_stats::load::{Goodput, PhaseKind, Stage};
    let mut app = paced_client_app();
    let mut l = LoadLive {
        phase: Some((2, 7, PhaseKind::Download, 3.0)),
        streams: (4, 0),
        goodput: Goodput {
            down: Some(9.48e6),
            up: None,
        },
        stages: vec![
            (Stage::SendPath, 1_200.0),
            (Stage::SendQueue, -300.0),
            (Stage::Forward, 15_000.0),
            (Stage::FarSide, 4_000.0),
            (Stage::Backward, 97_600_000.0),
            (Stage::ReceivePath, 22_000.0),
        ],
        stable: true,
        ..LoadLive::default()
    };
    for i in 0..900u32 {
        let t_s = f64::from(i) * 0.01;
        let (phase, rtt) = if t_s < 3.0 {
            (PhaseKind::Idle, 1_000_000)
        } else {
            let grown = ((t_s - 3.0) / 2.0).min(1.0);
            (PhaseKind::Download, 1_000_000 + (grown * 99e6) as u64)
        };
        l.push(LivePoint {
            t_s,
            rtt_ns: Some(rtt),
            phase,
        });
    }
    app.client.load = Some(l);
    app
}

/// A TCP client on loopback with kernel stamps: the far kernel's ACK of
/// one stamped request in four came on its own (the kernel RTT and the
/// far side's share measured), the others rode on the reply.
pub fn tcp_client_app() -> App {
    let mut app = client_app();
    app.client.info.transport = synapse_engine::Transport::Tcp;
    app.client.info.floor_kind.mode = crate::report::RunMode::of(true, false, false);
    let stamping = StampingInfo {
        source: Source::Software,
        interface: Some("lo".into()),
        segments: SegmentSet::for_run(true, false, false).with_tcp(),
        ..StampingInfo::default()
    };
    app.client.live = synapse_stats::LiveStats::new();
    app.client.live.use_shape(Shape {
        segments: stamping.segments,
        ..Shape::default()
    });
    app.client.stamping = Some(stamping);
    let live = &mut app.client.live;
    for seq in 0..2_000u64 {
        let rtt = 40_000 + (seq * 7919 % 30) * 1_000;
        let t1 = 1_000_000;
        let split = Points {
            t1_user: Some(t1),
            t1_sched: Some(t1 + 1_500),
            t1_driver: Some(t1 + 2_500),
            t1_ack: Some(t1 + 2_500 + 9_000),
            ack_with_reply: Some(seq % 4 != 0),
            t4_driver: Some(t1 + rtt - 8_000),
            t4_user: Some(t1 + rtt),
            rtt_ns: Some(rtt),
            ..Points::default()
        }
        .split();
        live.ingest(&Record::sample(seq, 0, rtt, false).with_split(split));
        if seq % 250 == 249 {
            live.close_window();
        }
    }
    app
}

/// A round trip of `rtt` ns split as a loopback STAMP run would: fixed
/// send path and dwell, a receive path of a fifth, the network the rest.
fn split_of(rtt: u64) -> Split {
    let t1 = 1_000_000;
    let receive = rtt / 5;
    Points {
        t1_user: Some(t1),
        t1_sched: Some(t1 + 1_500),
        t1_driver: Some(t1 + 2_500),
        t2: Some(5_000_000),
        t3: Some(5_003_000),
        t4_driver: Some(t1 + rtt - receive),
        t4_user: Some(t1 + rtt),
        rtt_ns: Some(rtt),
        ..Points::default()
    }
    .split()
}

/// A reflector with two active clients and one that has left.
pub fn server_app() -> App {
    let mut app = client_app();
    app.role = Role::Server;
    app.anim = Default::default();
    let s = &mut app.server;
    let session = |port: u16, packets: u64, last: u64| SessionInfo {
        peer: std::net::SocketAddr::from(([192, 0, 2, 7], port)),
        packets,
        bytes: packets * 8,
        last_seen_ns: last,
        refused: Refusals::default(),
    };
    s.session_active(session(40_112, 12_000, 9_900_000_000));
    s.session_active(SessionInfo {
        refused: Refusals {
            rate: 1_200,
            ..Refusals::default()
        },
        ..session(40_100, 3_000, 9_950_000_000)
    });
    s.session_ended(session(39_000, 10_200, 2_000_000_000));
    s.totals = ReflectorTotals {
        packets: 25_200,
        bytes: 201_600,
        sessions: 3,
        send_errors: 0,
        oversized: 1,
        refused: Refusals {
            rate: 1_200,
            ..Refusals::default()
        },
        ..ReflectorTotals::default()
    };
    s.pps = 15_300.0;
    // Forty windows of answers, about 15,000 a second.
    let window = synapse_stats::WINDOW.as_nanos() as u64;
    for w in 0..40u64 {
        s.answered_between(w * window, (w + 1) * window, 3_600 + (w * 7919 % 7) * 100);
    }
    s.stamp = Some(Ok("0.0.0.0:862".into()));
    s.stamp_totals.refused.malformed = 2;
    s.now_ns = 10_000_000_000;
    for _ in 0..8 {
        app.anim.on_frame(100, 100, None);
    }
    app
}

/// Renders a whole frame at the given size.
pub fn frame(app: &App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(width, height)).unwrap();
    t.draw(|f| super::draw::draw(f, app)).unwrap();
    t
}

/// The frame's text, one string per row.
pub fn rows(t: &Terminal<TestBackend>) -> Vec<String> {
    let buf = t.backend().buffer();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect()
}
