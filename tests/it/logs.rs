//! The per-packet logs when things go wrong: a full disk, an existing
//! file, stdout; and the STATUS column that tells late from lost.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use crate::common::*;
use std::io::BufRead;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A log that cannot be written ends the run with exit 1, and the report
/// says so, with what the file holds.
#[test]
fn a_log_on_a_full_device_ends_the_run_with_exit_1() {
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let out = synapse()
        .args(["client", &peer.addr(), "--json", "--packets", "5000"])
        .args([
            "--timestamps",
            "user",
            "--threshold",
            "1s",
            "--log",
            "/dev/full",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let j = json_of(&out.stdout);
    let log = &j["log"];
    assert_eq!(log["path"], "/dev/full");
    assert_eq!(log["rows"], 0);
    assert!(
        log["error"]
            .as_str()
            .unwrap()
            .contains("No space left on device"),
        "{log}"
    );
    assert!(
        j["packets"]["sent"].as_u64().unwrap() > 0,
        "what was measured is reported"
    );
    let out = synapse()
        .args(["client", &peer.addr(), "--no-ui", "--packets", "500"])
        .args(["--timestamps", "user", "--log", "/dev/full"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert!(
        report.contains(
            "✗ writing failed, so the run was ended: packet log /dev/full: No space left on device"
        ),
        "{report}"
    );
    // The last line says the run failed, never PASS; stderr says why.
    let last = report.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("✗ RUN FAILED: packet log /dev/full: No space left on device"),
        "{report}"
    );
    assert!(!report.contains("PASS"), "{report}");
    assert_eq!(
        text(&out.stderr).trim_end(),
        "synapse: error: packet log /dev/full: No space left on device: the run was ended there (exit 1)"
    );
}

/// A 1 MiB disk that fills mid-run: the file holds whole rows only, as
/// many as the report says.
#[test]
fn a_log_that_fills_its_disk_keeps_whole_rows_only() {
    if !is_root() {
        announce::skip(
            "a_log_that_fills_its_disk_keeps_whole_rows_only",
            "mounting a 1 MiB tmpfs needs root (CI runs as root)",
        );
        return;
    }
    // A busy-poll client fills a CPU: nothing else measures beside it.
    let _one = one_at_a_time();
    let disk = TinyDisk::mount("1m");
    let mount = disk.path();
    let log = mount.join("run.csv");
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let out = synapse()
        .args(["client", &peer.addr(), "--json", "--packets", "200000"])
        .args([
            "--timestamps",
            "user",
            "--threshold",
            "1s",
            "--busy-poll",
            "--log",
        ])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let j = json_of(&out.stdout);
    let file = std::fs::read_to_string(&log).unwrap();
    assert!(
        file.ends_with('\n'),
        "a row cut short: {:?}",
        &file[file.len() - 40..]
    );
    let header = file.lines().next().unwrap();
    let columns = header.split(',').count();
    assert!(file.lines().all(|l| l.split(',').count() == columns));
    let rows = file.lines().count() as u64 - 1;
    assert!(rows > 1000, "the disk held some rows: {rows}");
    assert_eq!(j["log"]["rows"], rows, "{}", j["log"]);
    assert!(
        j["log"]["error"]
            .as_str()
            .unwrap()
            .contains("No space left on device")
    );
}

/// A tmpfs of `size` mounted for a test, unmounted when dropped.
struct TinyDisk {
    _dir: tempfile::TempDir,
    mount: std::path::PathBuf,
}

impl TinyDisk {
    fn mount(size: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("tiny");
        std::fs::create_dir(&mount).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tiny"])
            .arg(&mount)
            .status()
            .unwrap();
        assert!(ok.success(), "mount tmpfs");
        Self { _dir: dir, mount }
    }

    fn path(&self) -> &std::path::Path {
        &self.mount
    }

    /// Fills the disk to its last byte.
    fn fill(&self) {
        let mut f = std::fs::File::create(self.mount.join("filler")).unwrap();
        let block = vec![0u8; 4096];
        while std::io::Write::write_all(&mut f, &block).is_ok() {}
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(&self.mount)
            .status();
    }
}

/// Issue 36: an interval log on a full disk is an I/O failure (exit 1, not
/// 2 for bad input), said in one line, and leaves no empty file; so is a
/// packet log whose first row cannot be written.
#[test]
fn a_full_disk_is_exit_1_in_one_line_and_leaves_no_empty_file() {
    if !is_root() {
        announce::skip(
            "a_full_disk_is_exit_1_in_one_line_and_leaves_no_empty_file",
            "mounting a tmpfs needs root (CI runs as root)",
        );
        return;
    }
    let disk = TinyDisk::mount("64k");
    disk.fill();
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let hlog = disk.path().join("run.hlog");
    let out = synapse()
        .args(["client", &peer.addr(), "--no-ui", "--packets", "100"])
        .arg("--hdr-log")
        .arg(&hlog)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        format!(
            "synapse: error: --hdr-log {}: No space left on device\n",
            hlog.display()
        )
    );
    assert!(!hlog.exists(), "no empty file left behind");
    let csv = disk.path().join("run.csv");
    let out = synapse()
        .args(["client", &peer.addr(), "--no-ui", "--packets", "100"])
        .args(["--timestamps", "user", "--log"])
        .arg(&csv)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!(
            "packet log {}: No space left on device",
            csv.display()
        )),
        "{}",
        text(&out.stdout)
    );
    assert!(!csv.exists(), "no empty file left behind");
    // A path where no file can be made is bad input: exit 2.
    let out = synapse()
        .args(["client", &peer.addr(), "--no-ui", "--packets", "100"])
        .args(["--hdr-log", "/nonexistent-dir/run.hlog"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "synapse: error: --hdr-log /nonexistent-dir/run.hlog: No such file or directory\n"
    );
}

/// Issue 36: a reader that closes the pipe (`| head -1`) ends the output as
/// it ends any Unix filter: exit 0, nothing said. The rows of `--log -`
/// are cut off after the first; the reports find the pipe closed before
/// they are written.
#[test]
fn a_closed_pipe_downstream_is_a_quiet_exit_0() {
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    for (args, lines_read) in [
        (vec!["--log", "-", "--packets", "200000"], 1),
        (vec!["--packets", "500"], 0),
        (vec!["--json", "--packets", "500"], 0),
    ] {
        let mut child = synapse()
            .args(["client", &peer.addr(), "--no-ui", "--timestamps", "user"])
            .args(["--threshold", "1s"])
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        for _ in 0..lines_read {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            assert!(line.starts_with("SEQ,"), "{line}");
        }
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stderr), "", "{args:?}");
    }
}

/// The server's log failing is said at once, not at Ctrl-C; the server
/// goes on answering and exits 1 at the end.
#[test]
fn the_servers_full_log_is_said_at_once() {
    let port = free_udp_port();
    let mut child = synapse()
        .args([
            "server",
            "--no-ui",
            "--stamp-port",
            "0",
            "--log",
            "/dev/full",
        ])
        .args(["--bind", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let _ = tx.send(line.unwrap());
        }
    });
    let (guard, stdout, _) = wait_until_ready(child);
    let server = Server { guard, stdout };
    let out = synapse()
        .args([
            "client",
            &format!("127.0.0.1:{port}"),
            "--json",
            "--packets",
            "300",
        ])
        .args(["--timestamps", "user", "--threshold", "1s"])
        .output()
        .unwrap();
    assert_eq!(
        json_of(&out.stdout)["packets"]["received"],
        300,
        "answering goes on"
    );
    let line = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("the failure said while running");
    assert_eq!(
        line,
        "synapse: error: packet log /dev/full: No space left on device; answering goes on without the log"
    );
    let (rest, code) = server.interrupt_and_collect();
    assert_eq!(code, Some(1), "{rest}");
    assert!(
        rest.contains("log: 0 answers written to /dev/full"),
        "{rest}"
    );
}

/// STATUS tells a late reply from a lost packet, and a duplicate from both.
#[test]
fn the_status_column_tells_late_from_lost() {
    let peer = ScriptedPeer::start(|seq| match seq {
        7 => Answer::Drop,
        12 => Answer::After(Duration::from_millis(30)),
        15 => Answer::Twice,
        _ => Answer::Echo,
    });
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.csv");
    let out = synapse()
        .args([
            "client",
            &peer.addr(),
            "--json",
            "--packets",
            "20",
            "--warmup",
            "0",
        ])
        .args(["--timeout", "20ms", "--timestamps", "user", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let file = std::fs::read_to_string(&log).unwrap();
    let status: Vec<(u64, String)> = file
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[1].to_string())
        })
        .collect();
    let of = |seq: u64| -> Vec<&str> {
        status
            .iter()
            .filter(|(s, _)| *s == seq)
            .map(|(_, st)| st.as_str())
            .collect()
    };
    assert_eq!(of(7), ["lost"]);
    assert_eq!(of(12), ["lost", "late"]);
    assert_eq!(of(15), ["ok", "duplicate"]);
    assert_eq!(of(3), ["ok"]);
    assert_eq!(
        status.len(),
        22,
        "one row per packet, one per late or extra reply"
    );
}

/// `--log -` writes the rows to stdout (the report goes to stderr); it is
/// refused with --json, which needs stdout too.
#[test]
fn a_log_on_stdout() {
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let out = synapse()
        .args([
            "client",
            &peer.addr(),
            "--no-ui",
            "--packets",
            "50",
            "--warmup",
            "0",
        ])
        .args(["--timestamps", "user", "--threshold", "1s", "--log", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let csv = text(&out.stdout);
    assert!(csv.starts_with("SEQ,STATUS,"), "{csv}");
    assert_eq!(csv.lines().count(), 51);
    assert!(text(&out.stderr).contains("✓ PASS"));
    assert!(
        !common::scratch_dir().join("-").exists(),
        "`-` is stdout, never a file named `-`"
    );
    let out = synapse()
        .args(["client", &peer.addr(), "--json", "--log", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "synapse: error: --log - and --json (or --json-stream) both want stdout: write the log to a file\n"
    );
}

/// An existing log is never replaced by accident.
#[test]
fn an_existing_log_is_refused_unless_appended_or_forced() {
    let peer = ScriptedPeer::start(|_| Answer::Echo);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.csv");
    let run = |extra: &[&str]| {
        synapse()
            .args([
                "client",
                &peer.addr(),
                "--json",
                "--packets",
                "10",
                "--warmup",
                "0",
            ])
            .args(["--timestamps", "user", "--threshold", "1s", "--log"])
            .arg(&log)
            .args(extra)
            .output()
            .unwrap()
    };
    assert_eq!(run(&[]).status.code(), Some(0));
    let first = std::fs::read_to_string(&log).unwrap();
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "synapse: error: the log {} exists: --log-append adds to it, --force replaces it\n",
            log.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        first,
        "left as it was"
    );
    assert_eq!(run(&["--log-append"]).status.code(), Some(0));
    let both = std::fs::read_to_string(&log).unwrap();
    assert_eq!(both.lines().count(), 21, "one header, two runs");
    assert_eq!(run(&["--force"]).status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 11);
    let started = Instant::now();
    assert_eq!(run(&["--log-append", "--force"]).status.code(), Some(2));
    assert!(started.elapsed() < Duration::from_secs(5));
}
