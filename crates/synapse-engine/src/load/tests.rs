//! A load server and clients on loopback: a session granted and its bytes
//! moved each way, and every refusal said in its own words.

use super::*;
use crate::StopFlag;
use crate::protocol::stamp_key::StampKey;
use crate::reflector::admission::{AllowList, Cidr};
use std::time::Duration;

fn server(adjust: impl FnOnce(&mut LoadServerConfig)) -> (LoadServerRun, StopFlag) {
    let mut cfg = LoadServerConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.echo_port = Some(7);
    adjust(&mut cfg);
    let stop = StopFlag::new();
    (start_load_server(cfg, stop.clone()).unwrap(), stop)
}

fn client_cfg(run: &LoadServerRun) -> LoadClientConfig {
    LoadClientConfig {
        server: run.local,
        bind: None,
        key: None,
        seconds: 4,
        streams: 2,
        cc: None,
        avoid_cpu: None,
    }
}

fn refusal(e: crate::EngineError) -> String {
    match e {
        crate::EngineError::LoadRefused { reason, .. } => reason,
        other => panic!("not a refusal: {other}"),
    }
}

fn stop_server(mut run: LoadServerRun, stop: &StopFlag) -> Vec<LoadEvent> {
    stop.raise();
    run.join().unwrap();
    run.events.try_iter().collect()
}

#[test]
fn a_session_moves_bytes_each_way_and_reports_its_senders() {
    let (run, stop) = server(|c| c.rate_bps = 200_000_000);
    let mut c = LoadClient::connect(client_cfg(&run)).unwrap();
    assert_eq!(c.grant.echo, Some(7));
    assert_eq!(c.grant.stamp, None);
    assert!(!c.grant.cc.is_empty());
    c.begin(PhaseKind::Bidirectional, 2).unwrap();
    c.add_stream(Way::Down).unwrap();
    c.add_stream(Way::Up).unwrap();
    // The phase asks for the reflector's side twice a second.
    std::thread::sleep(Duration::from_millis(1_200));
    let s = c.sample();
    let remote = c.remote().expect("the reflector's side, asked for");
    let last = c.end().unwrap();
    assert!(s.down_bytes > 100_000, "{s:?}");
    assert!(s.up_bytes > 100_000, "{s:?}");
    assert_eq!(
        (s.streams_down, s.streams_up, s.problem.as_deref()),
        (1, 1, None)
    );
    assert_eq!(s.up_rtt_us.len(), 1);
    assert_eq!(remote.streams, 2, "{remote:?}");
    assert_eq!(remote.rtt_us.len(), 1, "one sender on the reflector");
    assert!(last.sent >= s.down_bytes && last.received > 0, "{last:?}");
    // 1.2 s at 200 Mbit/s is 30 MB each way at most (and the depth).
    assert!(s.down_bytes < 36_000_000, "the cap holds: {s:?}");
    c.close();
    std::thread::sleep(Duration::from_millis(100));
    let events = stop_server(run, &stop);
    assert!(matches!(events[0], LoadEvent::Started { .. }), "{events:?}");
    assert!(
        matches!(
            &events[1],
            LoadEvent::Ended {
                phases: 1,
                problem: None,
                ..
            }
        ),
        "{events:?}"
    );
}

#[test]
fn too_many_sessions_too_many_seconds_and_a_bad_key_are_refused() {
    let key = StampKey::from_hex("000102030405060708090a0b0c0d0e0f").unwrap();
    let (run, stop) = server(|c| {
        c.max_sessions = 1;
        c.max_seconds = 10;
        c.key = Some(key.clone());
    });
    let keyed = LoadClientConfig {
        key: Some(key.clone()),
        ..client_cfg(&run)
    };
    let why = refusal(LoadClient::connect(client_cfg(&run)).unwrap_err());
    assert!(why.contains("signed with its key"), "{why}");
    let other = StampKey::from_hex("ff0102030405060708090a0b0c0d0e0f").unwrap();
    let wrong = LoadClientConfig {
        key: Some(other),
        ..client_cfg(&run)
    };
    assert!(refusal(LoadClient::connect(wrong).unwrap_err()).contains("key"));
    let long = LoadClientConfig {
        seconds: 11,
        ..keyed.clone()
    };
    let why = refusal(LoadClient::connect(long).unwrap_err());
    assert!(
        why.contains("allows 10 s a session (--load-max-seconds)"),
        "{why}"
    );
    let mut first = LoadClient::connect(keyed.clone()).unwrap();
    let why = refusal(LoadClient::connect(keyed).unwrap_err());
    assert!(why.contains("--load-max-sessions 1"), "{why}");
    first.begin(PhaseKind::Download, 8).unwrap();
    let why = refusal(first.begin(PhaseKind::Upload, 8).unwrap_err());
    assert!(why.contains("2 s of this session's load left"), "{why}");
    first.close();
    let events = stop_server(run, &stop);
    let refused = events
        .iter()
        .filter(|e| matches!(e, LoadEvent::Refused { .. }))
        .count();
    assert_eq!(refused, 4, "one line in the log per refusal: {events:?}");
}

#[test]
fn a_source_not_allowed_is_told_so_and_streams_need_their_session() {
    let net: Cidr = "192.0.2.0/24".parse().unwrap();
    let (run, stop) = server(|c| c.allow = AllowList::new(vec![net]));
    let why = refusal(LoadClient::connect(client_cfg(&run)).unwrap_err());
    assert_eq!(why, "not allowed (--allow)");
    stop_server(run, &stop);

    let (run, stop) = server(|_| {});
    let mut c = LoadClient::connect(client_cfg(&run)).unwrap();
    let e = c.add_stream(Way::Down).unwrap_err().to_string();
    assert!(e.contains("a stream outside a phase"), "{e}");
    c.begin(PhaseKind::Download, 1).unwrap();
    // A stream is opened on its own thread: its refusal is the phase's
    // problem, said as the reflector said it.
    c.add_stream(Way::Up).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while c.sample().problem.is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let s = c.sample();
    let why = s.problem.expect("refused");
    assert!(
        why.ends_with("refused the load: no such load session"),
        "an upload in a download phase: {why}"
    );
    assert!(s.refused);
    c.close();
    stop_server(run, &stop);
}

#[test]
fn nothing_listening_is_said_plainly() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let cfg = LoadClientConfig {
        server: port,
        bind: None,
        key: None,
        seconds: 1,
        streams: 1,
        cc: None,
        avoid_cpu: None,
    };
    let e = LoadClient::connect(cfg).unwrap_err();
    assert!(matches!(e, crate::EngineError::LoadUnserved(_)), "{e}");
    assert!(e.to_string().contains("--load-port"));
}

#[test]
fn a_stream_reset_mid_phase_is_said_with_its_direction() {
    let (run, stop) = server(|_| {});
    let mut c = LoadClient::connect(client_cfg(&run)).unwrap();
    c.begin(PhaseKind::Download, 3).unwrap();
    c.add_stream(Way::Down).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // The reflector going away mid-phase ends the stream under the client.
    stop.raise();
    let mut run = run;
    run.join().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // Said by the stream or by the control connection, whichever saw
    // it first.
    let p = c.sample().problem.expect("a problem");
    assert!(
        p.contains("down stream") || p.contains("load session"),
        "{p}"
    );
}
