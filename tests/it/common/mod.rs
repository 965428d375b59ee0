//! Helpers shared by the integration tests: free ports, the real binary,
//! and child processes that are always cleaned up.
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod announce;
pub mod bottleneck;
pub mod bridged;
pub mod csv_log;
pub mod ecmp_lab;
pub mod http;
pub mod netns;
pub mod proc_udp;
pub mod prometheus_ns;
pub mod routed;
pub mod steady;

use std::io::{BufRead, BufReader, Read};
use std::net::UdpSocket;
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A UDP port on 127.0.0.1 that was free a moment ago, for peers that need
/// their port chosen before they start. It is drawn below the kernel's
/// ephemeral range, so no client socket bound to port 0 by a test running
/// alongside can take it in between (a port from `bind(0)` could be).
pub fn free_udp_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768);
    let (first, span) = (10_000, low.saturating_sub(10_000).max(1));
    // Test binaries run in parallel: start each at a different place.
    let seed = std::process::id().wrapping_mul(2_654_435_761) % span;
    loop {
        let n = NEXT.fetch_add(7919, Ordering::Relaxed);
        let port = (first + (seed + n) % span) as u16;
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// One heavy or timing-sensitive test at a time in this test binary (a
/// calibration, a paced schedule, the soak's flood, a count of system
/// calls, a statistical comparison of runs): on two CPUs, two of them side
/// by side would measure each other. Held for the whole measurement.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A STAMP key file holding `key`, with file mode `mode` (600: only its
/// owner can read it, as `--hmac-key-file` demands).
pub fn key_file(key: &str, mode: u32) -> tempfile::NamedTempFile {
    use std::os::unix::fs::PermissionsExt;
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), key).unwrap();
    std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(mode)).unwrap();
    f
}

/// Whether the tests run as root (CI does).
pub fn is_root() -> bool {
    let me = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&me.stdout).trim() == "0"
}

/// The binary under test: this build's, or the one `SYNAPSE_TEST_BIN`
/// names (to show that a test fails on an older build).
/// Its state directory is one that holds nothing, so no calibration of
/// this machine finds its way into a report under test (a test that wants
/// one sets `XDG_STATE_HOME` itself). It runs in a scratch directory, so a
/// relative path (or `-` taken for a file name) never writes into the
/// working tree.
pub fn synapse() -> Command {
    let mut cmd = match std::env::var_os("SYNAPSE_TEST_BIN") {
        Some(bin) => Command::new(bin),
        None => Command::new(assert_cmd::cargo::cargo_bin!("synapse")),
    };
    cmd.env(
        "XDG_STATE_HOME",
        std::env::temp_dir().join("synapse-tests-no-state"),
    );
    cmd.current_dir(scratch_dir());
    cmd
}

/// The directory the binary under test runs in: empty at first, one per
/// test process.
pub fn scratch_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("synapse-tests-cwd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What a scripted peer does with one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    /// Echo it at once.
    Echo,
    /// Never answer it.
    Drop,
    /// Echo it after this long (the peer answers nothing meanwhile).
    After(Duration),
    /// Echo it after this long, from a thread of its own: the peer keeps
    /// answering the others meanwhile, so one slow reply delays no other.
    Later(Duration),
    /// Echo it twice.
    Twice,
}

/// A scripted echo peer on 127.0.0.1: `script(seq)` decides each request's
/// fate (the sequence number is a Synapse client's first 8 bytes). It
/// stops when dropped. `on_request` lets a test act on the way.
pub struct ScriptedPeer {
    pub port: u16,
    /// How long each `Later` answer was really held, receive to send.
    held: std::sync::Arc<std::sync::Mutex<Vec<Duration>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ScriptedPeer {
    pub fn start(script: impl Fn(u64) -> Answer + Send + 'static) -> Self {
        Self::start_with(script, |_, _| {})
    }

    pub fn start_with(
        script: impl Fn(u64) -> Answer + Send + 'static,
        on_request: impl Fn(u64, std::net::SocketAddr) + Send + 'static,
    ) -> Self {
        use std::sync::atomic::Ordering;
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let port = socket.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let held_by_peer = held.clone();
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 65_536];
            while !flag.load(Ordering::Relaxed) {
                let Ok((n, from)) = socket.recv_from(&mut buf) else {
                    continue;
                };
                let received = Instant::now();
                let seq = buf[..n.min(8)]
                    .try_into()
                    .map(u64::from_le_bytes)
                    .unwrap_or(u64::MAX);
                on_request(seq, from);
                match script(seq) {
                    Answer::Echo => {
                        let _ = socket.send_to(&buf[..n], from);
                    }
                    Answer::Drop => {}
                    Answer::Twice => {
                        let _ = socket.send_to(&buf[..n], from);
                        let _ = socket.send_to(&buf[..n], from);
                    }
                    Answer::After(d) => {
                        std::thread::sleep(d);
                        let _ = socket.send_to(&buf[..n], from);
                    }
                    Answer::Later(d) => {
                        let (late, reply) = (socket.try_clone().unwrap(), buf[..n].to_vec());
                        let due = received + d;
                        let held = held_by_peer.clone();
                        std::thread::spawn(move || {
                            // Asleep for most of it, awake for the end: on
                            // time to a few µs, not a wake-up's 50-100 µs late.
                            let nap = d.saturating_sub(Duration::from_micros(300));
                            std::thread::sleep(nap);
                            while Instant::now() < due {
                                std::hint::spin_loop();
                            }
                            held.lock().unwrap().push(received.elapsed());
                            let _ = late.send_to(&reply, from);
                        });
                    }
                }
            }
        });
        Self {
            port,
            held,
            stop,
            thread: Some(thread),
        }
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The median of how long `Later` answers were really held: the delay
    /// the peer added, a wake-up or a preemption on a loaded machine included.
    pub fn held_median(&self) -> Option<Duration> {
        let mut held = self.held.lock().unwrap().clone();
        held.sort_unstable();
        held.get(held.len() / 2).copied()
    }
}

impl Drop for ScriptedPeer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A child process killed when dropped, so a failing test leaves nothing behind.
pub struct Guard(pub Child);

/// A running `synapse server` and the rest of its stdout.
pub struct Server {
    pub guard: Guard,
    pub stdout: BufReader<ChildStdout>,
}

impl Server {
    /// Ctrl-C, then everything it printed from then on, and its exit code.
    pub fn interrupt_and_collect(mut self) -> (String, Option<i32>) {
        self.guard.interrupt();
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        (rest, self.guard.0.wait().unwrap().code())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Guard {
    /// Sends SIGINT, as Ctrl-C would.
    pub fn interrupt(&self) {
        unsafe_free_kill(self.0.id(), "INT");
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        unsafe_free_kill(self.0.id(), "TERM");
    }
}

/// `kill -SIG pid` without unsafe code in the tests.
pub fn unsafe_free_kill(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

/// Starts `synapse server --no-ui` on 127.0.0.1:`port` (plain echo only:
/// these tests are about echo, and concurrent servers would compete for the
/// STAMP port) and waits until it says it is ready, sending it nothing.
/// The reflector binds a port the kernel picks and the test reads it from
/// the banner: a port probed free beforehand can be taken by another test's
/// client in between.
pub fn start_server(extra: &[&str]) -> (Server, u16) {
    let (server, port, _) = start_server_with_banner(extra);
    (server, port)
}

/// [`start_server`], and the banner it printed.
pub fn start_server_with_banner(extra: &[&str]) -> (Server, u16, String) {
    let child = synapse()
        .args([
            "server",
            "--no-ui",
            "--stamp-port",
            "0",
            "--bind",
            "127.0.0.1:0",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (guard, stdout, banner) = wait_until_ready(child);
    let port = banner
        .split("listening on 127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in the banner: {banner}"));
    (Server { guard, stdout }, port, banner)
}

/// A reflector on a port chosen beforehand (see [`free_udp_port`]), for
/// peers that must know it before it starts.
pub fn start_server_on(port: u16) -> Server {
    let child = synapse()
        .args(["server", "--no-ui", "--stamp-port", "0", "--bind"])
        .arg(format!("127.0.0.1:{port}"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (guard, stdout, _) = wait_until_ready(child);
    Server { guard, stdout }
}

/// Polls until something on 127.0.0.1:`port` echoes a datagram.
pub fn wait_for_echo(port: u16) {
    let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
    probe
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 16];
    while Instant::now() < deadline {
        let _ = probe.send_to(b"probe", ("127.0.0.1", port));
        if probe.recv(&mut buf).is_ok() {
            return;
        }
    }
    panic!("nothing echoed on port {port} within 10 s");
}

/// Polls until a UDP socket is bound to 127.0.0.1:`port` or 0.0.0.0:`port`,
/// without sending it anything: some echo servers lock onto the first peer.
pub fn wait_for_udp_bound(port: u16) {
    let wanted = [
        format!("0100007F:{port:04X}"),
        format!("00000000:{port:04X}"),
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let table = std::fs::read_to_string("/proc/net/udp").unwrap();
        let bound = table
            .lines()
            .skip(1)
            .filter_map(|line| line.split_whitespace().nth(1))
            .any(|local| wanted.iter().any(|w| w == local));
        if bound {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("nothing bound UDP port {port} within 10 s");
}

/// The JSON of a `--json` run that must have succeeded; its stderr if not.
pub fn success_json(out: &Output) -> serde_json::Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out.stdout)
}

/// Waits for a spawned `synapse server` to print its ready line; returns
/// the guard, the rest of its stdout, and what it printed so far.
pub fn wait_until_ready(mut child: Child) -> (Guard, BufReader<ChildStdout>, String) {
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let guard = Guard(child);
    let mut banner = String::new();
    while !banner.contains("Ready to echo") {
        assert!(
            stdout.read_line(&mut banner).unwrap() > 0,
            "server exited: {banner}"
        );
    }
    (guard, stdout, banner)
}

/// Parses the one JSON object a `--json` run printed.
pub fn json_of(stdout: &[u8]) -> serde_json::Value {
    let text = std::str::from_utf8(stdout).unwrap();
    assert_eq!(
        text.trim().lines().count(),
        1,
        "stdout must be exactly one line of JSON: {text}"
    );
    serde_json::from_str(text).unwrap()
}

/// A third-party tool the interop tests drive: on `PATH`, or where
/// `.ci/run` installs the ones that come from crates.io
/// (`$XDG_CACHE_HOME/synapse-ci/NAME/bin`, or `~/.cache/…`). `None`, with
/// the skip recorded, when it is not there (in CI the test fails instead:
/// see [`skip`]).
pub fn tool(name: &str, test: &str) -> Option<std::path::PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))
        .map(|c| c.join("synapse-ci").join(name).join("bin").join(name))
        .filter(|p| p.is_file());
    let found = on_path.or(cache);
    if found.is_none() {
        announce::skip(
            test,
            &format!("{name} is not installed (.ci/run installs it)"),
        );
    }
    found
}
