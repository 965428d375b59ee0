//! The live display end to end: the real binary in a real terminal (tmux),
//! driven by key presses and read back from the screen.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux session on a server of its own (`-S`), killed with its socket when
/// the test ends however it ends. Its own server: tests starting sessions at once on one
/// default server raced to start it, and one `new-session` failed (fresh
/// clone at 166d737); nor does a user's tmux see them.
struct Tmux {
    session: String,
    socket: std::path::PathBuf,
}

static SERVERS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Tmux {
    fn start(test: &str, command: &str) -> Self {
        let n = SERVERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmux = Tmux {
            session: format!("synapse-e2e-{}-{test}", std::process::id()),
            socket: std::env::temp_dir()
                .join(format!("synapse-e2e-{}-{n}.tmux", std::process::id())),
        };
        let ok = tmux
            .tmux()
            .args([
                "new-session",
                "-d",
                "-s",
                &tmux.session,
                "-x",
                "120",
                "-y",
                "36",
            ])
            // No calibration of this machine in the frames under test.
            .args(["-e", "XDG_STATE_HOME=/tmp/synapse-tests-no-state"])
            .arg(command)
            .env("TERM", "xterm-256color")
            .status()
            .expect("tmux must be installed (.ci/run installs it)");
        assert!(ok.success());
        tmux
    }

    /// A tmux command to this session's server.
    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket);
        c
    }

    fn screen(&self) -> String {
        self.capture(&[])
    }

    /// The screen plus what scrolled off it (the printed summary is taller
    /// than the terminal).
    fn screen_and_scrollback(&self) -> String {
        self.capture(&["-S", "-200"])
    }

    fn capture(&self, extra: &[&str]) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", &self.session])
            .args(extra)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &str) {
        assert!(
            self.tmux()
                .args(["send-keys", "-t", &self.session, keys])
                .status()
                .unwrap()
                .success()
        );
    }

    fn alternate_screen(&self) -> bool {
        let out = self
            .tmux()
            .args([
                "display-message",
                "-p",
                "-t",
                &self.session,
                "#{alternate_on}",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    /// Waits until `pred` holds for the screen, or fails showing it.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // The server is this session's alone.
        let _ = self.tmux().arg("kill-server").status();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Packets done, from the progress line ("12,345 packets  [00:00:01] …"
/// or "10,005/100,000 packets  […]").
fn packet_count(screen: &str) -> Option<u64> {
    let line = screen.lines().find(|l| l.contains(" packets  ["))?;
    let token = line[..line.find(" packets  [")?]
        .split_whitespace()
        .last()?;
    let done = token.split('/').next()?;
    done.chars()
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()
}

#[test]
fn live_display_measures_stops_switches_role_and_restores_the_terminal() {
    let bin = assert_cmd::cargo::cargo_bin!("synapse");
    // After the program: its exit status and the terminal's line discipline,
    // then linger so the screen can be read.
    let script = format!(
        "{} --threshold 1s; echo EXIT=$?; stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon; sleep 60",
        bin.display()
    );
    let tmux = Tmux::start("live", &script);

    // Live figures appear and the count moves.
    let first = tmux.wait_for("live figures", |s| {
        s.contains("RTT · ping-pong") && packet_count(s).is_some_and(|n| n > 0)
    });
    assert!(first.contains("MEASURING"), "{first}");
    assert!(
        tmux.alternate_screen(),
        "the display uses the alternate screen"
    );
    let n1 = packet_count(&first).unwrap();
    tmux.wait_for("the count to grow", |s| {
        packet_count(s).is_some_and(|n| n > n1)
    });
    // The default source on loopback is kernel software stamps: the stacks
    // and the table under them show the measured split.
    let split = tmux.wait_for("the round-trip split", |s| {
        s.contains("software stamps") && s.contains("↓ send ") && s.contains("↑ receive ")
    });
    let p50 = split.lines().find(|l| l.contains(" p50 ")).unwrap_or("");
    assert!(p50.matches(" µs").count() >= 3, "{split}");

    // Space stops measuring: the count stays put.
    tmux.keys("Space");
    let stopped = tmux.wait_for("the stopped state", |s| s.contains("STOPPED"));
    let c1 = packet_count(&stopped).unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let c2 = packet_count(&tmux.screen()).unwrap();
    assert_eq!(c1, c2, "the count moved after stopping");

    // r switches to the server view.
    tmux.keys("r");
    let server = tmux.wait_for("the server view", |s| {
        s.contains("REFLECTING") && s.contains("Clients")
    });
    assert!(server.contains("Reflector"), "{server}");
    assert!(server.contains("SERVER (here)"), "{server}");

    // q quits, the terminal is restored, and the summary is printed on the normal screen.
    tmux.keys("q");
    tmux.wait_for("the program to exit", |s| s.contains("EXIT="));
    let after = tmux.screen_and_scrollback();
    assert!(after.contains("EXIT=0"), "{after}");
    assert!(
        after.contains("Synapse Results"),
        "summary missing:\n{after}"
    );
    assert!(after.contains("✓ PASS"), "{after}");
    assert!(after.contains("Reflector: "), "{after}");
    assert!(!tmux.alternate_screen(), "left the alternate screen");
    let mode = tmux.wait_for("stty", |s| {
        s.lines().any(|l| l == "icanon" || l == "-icanon")
    });
    assert!(
        mode.lines().any(|l| l == "icanon"),
        "raw mode left on:\n{mode}"
    );
}

/// Paced, with STAMP: the display says the mode and shows the schedule,
/// jitter, one-way delays and loss by direction; the summary has them too.
#[test]
fn the_paced_live_display_shows_the_schedule_jitter_and_one_way_delay() {
    let bin = assert_cmd::cargo::cargo_bin!("synapse");
    let script = format!(
        "{} --interval 1ms --stamp --threshold 1s; echo EXIT=$?; sleep 60",
        bin.display()
    );
    let tmux = Tmux::start("paced", &script);
    let screen = tmux.wait_for("paced figures", |s| {
        s.contains("RTT · every 1.00 ms") && s.contains("1-way   →") && s.contains(" →0 ←0 ?0")
    });
    assert!(
        screen.contains("every 1.00 ms  CPU"),
        "header says the mode: {screen}"
    );
    let row = |label: &str| {
        screen
            .lines()
            .find(|l| l.contains(label))
            .unwrap_or_else(|| panic!("no {label} row: {screen}"))
            .to_string()
    };
    assert!(row("|IPDV|").contains(" µs"), "{screen}");
    assert!(row("Sched   p99 +").contains("miss "), "{screen}");
    tmux.keys("q");
    tmux.wait_for("the program to exit", |s| s.contains("EXIT="));
    let after = tmux.screen_and_scrollback();
    // This test checks the display and the summary. A loaded machine can
    // starve the reflector into late replies or an outage, and then
    // --max-loss or --max-outage rightly fails the run (exit 3, with its
    // reason); any other exit is a fault.
    assert!(
        after.contains("EXIT=0")
            || (after.contains("EXIT=3")
                && (after.contains("✗ FAIL: loss") || after.contains("✗ FAIL: outage"))),
        "{after}"
    );
    assert!(
        after.contains("Mode:     paced, periodic every 1.00 ms"),
        "{after}"
    );
    assert!(
        after.contains("Schedule (periodic, every 1.00 ms):"),
        "{after}"
    );
    assert!(after.contains("One-way delay (STAMP"), "{after}");
    assert!(
        after.contains("Loss by direction (stateful reflector)"),
        "{after}"
    );
}

#[test]
fn sigterm_restores_the_terminal_too() {
    let bin = assert_cmd::cargo::cargo_bin!("synapse");
    let script = format!(
        "{} --threshold 1s & pid=$!; sleep 3; kill -TERM $pid; wait $pid; echo EXIT=$?; \
         stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon; sleep 60",
        bin.display()
    );
    let tmux = Tmux::start("sigterm", &script);
    tmux.wait_for("the program to exit", |s| s.contains("EXIT="));
    let after = tmux.screen_and_scrollback();
    assert!(
        after.contains("EXIT=143"),
        "interrupted, never a pass: {after}"
    );
    assert!(after.contains("Synapse Results"), "{after}");
    assert!(after.contains("■ INTERRUPTED by SIGTERM after "), "{after}");
    assert!(!tmux.alternate_screen());
    let mode = tmux.wait_for("stty", |s| {
        s.lines().any(|l| l == "icanon" || l == "-icanon")
    });
    assert!(
        mode.lines().any(|l| l == "icanon"),
        "raw mode left on:\n{mode}"
    );
}

#[test]
fn packet_count_reads_the_progress_line() {
    assert_eq!(
        packet_count("x\n██ 12,345 packets  [00:00:01]  runs"),
        Some(12_345)
    );
    assert_eq!(
        packet_count("██   10,005/100,000 packets  [00:00:10]"),
        Some(10_005)
    );
    assert_eq!(packet_count("nothing here"), None);
}

/// `synapse server --log FILE` in the live display: every answer a client
/// got is in the file when the display quits, and the summary says so.
#[test]
fn the_live_server_writes_its_answer_log() {
    let bin = assert_cmd::cargo::cargo_bin!("synapse");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("answers.csv");
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = format!(
        "{} server --bind 127.0.0.1:{port} --stamp-port 0 --log {}; echo EXIT=$?; sleep 60",
        bin.display(),
        log.display()
    );
    let t = Tmux::start("server-log", &script);
    t.wait_for("the server view with its log", |s| {
        s.contains("REFLECTING") && s.contains("answers.csv")
    });
    let out = Command::new(bin)
        .args([
            "client",
            &format!("127.0.0.1:{port}"),
            "--json",
            "--packets",
            "300",
        ])
        .args(["--warmup", "20", "--timestamps", "user"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    t.wait_for("the client's session", |s| s.contains("320"));
    t.keys("q");
    let summary = t.wait_for("the summary", |s| s.contains("EXIT="));
    assert!(summary.contains("EXIT=0"), "{summary}");
    assert!(
        summary.contains("Server log: 320 answers written to"),
        "{summary}"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 321, "header and one row per answer");
    assert!(text.starts_with("PROTO,PEER,SEQ,"));
}

/// Item 13: a live display that could not reach its peer measured nothing
/// and exits 2, as a headless run does, saying why.
#[test]
fn an_unreachable_peer_exits_2_from_the_live_display_too() {
    let bin = assert_cmd::cargo::cargo_bin!("synapse");
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = format!(
        "{} client 127.0.0.1:{port}; echo EXIT=$?; sleep 60",
        bin.display()
    );
    let t = Tmux::start("unreachable", &script);
    t.wait_for("the reason on the status line", |s| {
        s.contains("refused the datagrams")
    });
    t.keys("q");
    let after = t.wait_for("the exit status", |s| s.contains("EXIT="));
    assert!(after.contains("EXIT=2"), "{after}");
    assert!(after.contains("Nothing was measured."), "{after}");
    assert!(
        after.contains(&format!(
            "synapse: error: 127.0.0.1:{port} refused the datagrams (ICMP port unreachable)"
        )),
        "{after}"
    );
}

/// The client's live display, its reflector killed mid-run (issue 50): the
/// silence shows while it lasts (NO REPLY, how long and what the path
/// said), and quitting a run before its --duration is INTERRUPTED, exit
/// 130, as headless.
#[test]
fn a_dead_reflector_shows_in_the_live_display_and_quitting_early_is_interrupted() {
    let bin = assert_cmd::cargo::cargo_bin!("synapse");
    let port = crate::common::free_udp_port();
    let mut server = crate::common::start_server_on(port);
    let script = format!(
        "{} client 127.0.0.1:{port} --duration 60s; echo EXIT=$?; sleep 60",
        bin.display()
    );
    let t = Tmux::start("dead", &script);
    t.wait_for("measuring", |s| s.contains("● MEASURING"));
    server.guard.0.kill().unwrap();
    let _ = server.guard.0.wait();
    let s = t.wait_for("the silence", |s| s.contains("▲ NO REPLY"));
    assert!(s.contains("⚠ no reply for"), "{s}");
    assert!(s.contains("(port unreachable from 127.0.0.1)"), "{s}");
    assert!(!s.contains("● MEASURING"), "{s}");
    t.keys("q");
    let after = t.wait_for("the exit status", |s| s.contains("EXIT="));
    assert!(after.contains("EXIT=130"), "{after}");
    assert!(after.contains("■ INTERRUPTED"), "{after}");
}

/// The agent's live table (issue 50): `?` shows the keys, `r` says what
/// the reload came to, a closed port's row says why it fails, and `q`
/// leaves a summary of every peer on the terminal.
#[test]
fn the_agents_table_helps_reloads_aloud_and_sums_up_on_quitting() {
    let bin = assert_cmd::cargo::cargo_bin!("synapse");
    let closed = crate::common::free_udp_port();
    let script = format!(
        "{} agent --peer shut=127.0.0.1:{closed} --reflect 127.0.0.1:0 --stamp-port 0 \
         --metrics-listen 127.0.0.1:0 --report-every 1s; echo EXIT=$?; sleep 60",
        bin.display()
    );
    let t = Tmux::start("agent", &script);
    let s = t.wait_for("the reason", |s| s.contains("port unreachable"));
    assert!(s.contains("✗ port unreachable"), "{s}");
    t.keys("?");
    let s = t.wait_for("the help", |s| s.contains("┌ keys"));
    assert!(s.contains("reload the configuration"), "{s}");
    t.keys("x");
    t.wait_for("the help closed", |s| !s.contains("┌ keys"));
    t.keys("r");
    t.wait_for("the reload's news", |s| s.contains("reloaded: 1 peer"));
    t.keys("q");
    let after = t.wait_for("the exit status", |s| s.contains("EXIT="));
    assert!(after.contains("EXIT=0"), "{after}");
    assert!(
        after.contains("DOWN: unreachable: port unreachable from 127.0.0.1"),
        "{after}"
    );
}
