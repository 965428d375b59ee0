//! `--log FILE`: one CSV row per measured packet (client) or answered
//! datagram (server), written by a thread of its own from bounded rings, so
//! the measurement threads never touch the file. The writer drains the
//! rings until their threads have finished and flushes, so a Ctrl-C loses
//! no row; it writes whole rows only, and when the disk says no it cuts
//! the file back to its last whole row and says so at once.

mod responder;
mod response;

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use synapse_engine::Points;

/// The client's columns as a literal, so that a log with more columns
/// (a load run's phase, a multicast run's responder) extends it by
/// `concat!`.
macro_rules! client_columns {
    () => {
        "SEQ,STATUS,T1_SW,T1_SCHED,T1_DRV,T1_HW,T2_HW,T2_SW,T3_SW,T3_HW,T4_HW,T4_DRV,T4_SW,RTT,SCHED,REFLECTOR_SEQ,T3_DRV,FWD_DSCP,FWD_ECN,REV_DSCP,REV_ECN,T1_ACK,ACK_ON_REPLY,T0_SW,CONNECTED_SW,T1_WIRE,REFLECTOR_ERROR,CLIENT_ERROR,PATH_ERROR,PATH_ERROR_FROM"
    };
}
pub(crate) use client_columns;

/// The client's header: the sequence number and what became of the packet
/// (`ok`, `lost`, `late`, `duplicate`; a late or duplicate reply gets a row
/// of its own, with the times it arrived), the rant columns, T1 scheduler
/// and the kernel's driver-level software stamps, the RTT, then (paced
/// runs) the time the request was scheduled to leave and (STAMP) the
/// reflector's own sequence number, the reflector's measured T3 and the
/// DSCP and ECN marks each leg arrived with; then TCP's: when the far kernel's ACK
/// of the request came back and whether it rode on the reply, and (with
/// `--connect-each`) when the connection was begun and when it was open.
pub const HEADER: &str = client_columns!();

/// What the writer can put in a log: one CSV row per item.
pub trait LogRow: Send + 'static {
    /// The file's first line.
    const HEADER: &'static str;
    /// The item as one line.
    fn write_row(&self, out: &mut impl Write) -> io::Result<()>;
}

impl LogRow for Points {
    const HEADER: &'static str = HEADER;
    fn write_row(&self, out: &mut impl Write) -> io::Result<()> {
        write_row(out, self)
    }
}

/// Why a log could not be written.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The file could not be created or opened.
    #[error("--log {}: {}", path.display(), crate::files::cause(source))]
    Open {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// Writing rows failed during the run.
    #[error("packet log {}: {}", path.display(), crate::files::cause(source))]
    Write {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The file exists and would be replaced.
    #[error(
        "the log {} exists: --log-append adds to it, --force replaces it",
        path.display()
    )]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// The writer thread died.
    #[error("packet log {}: the writer thread panicked", path.display())]
    Panicked {
        /// The file.
        path: PathBuf,
    },
}

impl LogError {
    /// The rows went to a pipe whose reader has closed it.
    pub fn is_reader_closed(&self) -> bool {
        matches!(self, LogError::Write { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}

/// What sees each item the writer takes (see [`PacketLog::start_teed`]).
pub type Tee<R> = Box<dyn FnMut(&R) + Send>;

/// How long the writer sleeps when the ring is empty.
const IDLE: Duration = Duration::from_millis(20);

/// Rows are handed to the file in chunks of about this many bytes, always
/// whole rows.
const CHUNK: usize = 1 << 16;

/// Where rows go: a file, or standard output (`--log -`).
#[derive(Debug)]
enum Sink {
    File(File),
    Stdout,
    /// Nowhere: the rows are only seen (the server's `--hdr-log` without
    /// `--log`).
    Null,
}

impl Sink {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Sink::File(f) => f.write_all(bytes),
            Sink::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(bytes).and_then(|()| out.flush())
            }
            Sink::Null => Ok(()),
        }
    }

    /// Cuts a file back to `len` bytes, so a failed write leaves no part
    /// of a row behind. (A pipe keeps what it was given.)
    fn cut_to(&mut self, len: u64) {
        if let Sink::File(f) = self
            && f.metadata().is_ok_and(|m| m.is_file())
        {
            let _ = f.set_len(len);
        }
    }

    /// On disk before the report says so; pipes and devices have nothing
    /// to sync.
    fn sync(&mut self) -> io::Result<()> {
        match self {
            Sink::File(f) if f.metadata()?.is_file() => f.sync_data(),
            _ => Ok(()),
        }
    }
}

/// A log file, opened before the run so a bad path fails at once.
#[derive(Debug)]
pub struct PacketLog {
    path: PathBuf,
    sink: Sink,
    /// Bytes already in the file (rows of earlier runs, when appending).
    start_len: u64,
    /// This run made the file (it was not there before).
    created: bool,
}

/// What the writer did.
#[derive(Debug)]
struct Written {
    rows: u64,
    /// Rows it was handed but could not write (after a failure).
    unwritten: u64,
    error: Option<io::Error>,
}

/// A log being written.
#[derive(Debug)]
pub struct RunningLog {
    path: PathBuf,
    created: bool,
    failure: Arc<Mutex<Option<String>>>,
    handle: JoinHandle<Written>,
}

/// What a finished log holds.
#[derive(Debug)]
pub struct LogResult {
    /// Whole rows in the file.
    pub rows: u64,
    /// Rows handed to the writer that are not in it (after a failure).
    pub unwritten: u64,
    /// Why writing stopped, if it did.
    pub error: Option<LogError>,
}

/// The standard-output log's name.
pub const STDOUT: &str = "-";

/// How a log file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// A new file; an existing one is refused (a measurement cannot be
    /// repeated, so its rows must not vanish by a mistyped name).
    New,
    /// A new file, replacing an existing one (`--force`).
    Replace,
    /// After the rows already there (`--log-append`).
    Append,
}

impl PacketLog {
    /// Creates (or truncates) the file.
    pub fn create(path: &Path) -> Result<Self, LogError> {
        Self::open(path, Opening::Replace)
    }

    /// Opens the file to add rows after earlier runs' (the live display
    /// logs each run it starts into one file); the header is written only
    /// into an empty file.
    pub fn append(path: &Path) -> Result<Self, LogError> {
        Self::open(path, Opening::Append)
    }

    /// Opens `path` as `how` says; `-` is standard output.
    pub fn open(path: &Path, how: Opening) -> Result<Self, LogError> {
        let failed = |source| LogError::Open {
            path: path.to_path_buf(),
            source,
        };
        if path.as_os_str() == STDOUT {
            return Ok(Self {
                path: path.to_path_buf(),
                sink: Sink::Stdout,
                start_len: 0,
                created: false,
            });
        }
        let exists = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0);
        if how == Opening::New && exists {
            return Err(LogError::Exists {
                path: path.to_path_buf(),
            });
        }
        let created = std::fs::symlink_metadata(path).is_err();
        let append = how == Opening::Append;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .append(append)
            .truncate(!append)
            .open(path)
            .map_err(failed)?;
        let start_len = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(Self {
            path: path.to_path_buf(),
            sink: Sink::File(file),
            start_len,
            created,
        })
    }

    /// A log that writes nowhere: its writer only hands each item to a tee.
    pub fn discard() -> Self {
        Self {
            path: PathBuf::from("(none)"),
            sink: Sink::Null,
            start_len: 0,
            created: false,
        }
    }

    /// Starts the writer thread on the measurement threads' rings.
    pub fn start<R: LogRow>(self, rings: Vec<rtrb::Consumer<R>>) -> io::Result<RunningLog> {
        self.start_teed(rings, None)
    }

    /// Starts the writer thread; `tee` sees every item it takes off the
    /// rings (on the writer's thread, never the measurement's), and is
    /// dropped when the rings are done.
    pub fn start_teed<R: LogRow>(
        self,
        rings: Vec<rtrb::Consumer<R>>,
        tee: Option<Tee<R>>,
    ) -> io::Result<RunningLog> {
        let (path, created) = (self.path.clone(), self.created);
        let failure = Arc::new(Mutex::new(None));
        let told = Arc::clone(&failure);
        let handle = std::thread::Builder::new()
            .name("synapse-log".into())
            .spawn(move || self.write(rings, tee, &told))?;
        Ok(RunningLog {
            path,
            created,
            failure,
            handle,
        })
    }

    /// The writer: drains the rings until their threads have finished,
    /// hands whole rows to the sink, and on a failure cuts the file back
    /// to its last whole row, says so at once, and counts what it drops.
    fn write<R: LogRow>(
        mut self,
        mut rings: Vec<rtrb::Consumer<R>>,
        mut tee: Option<Tee<R>>,
        failure: &Mutex<Option<String>>,
    ) -> Written {
        let mut buf = Vec::with_capacity(CHUNK + 4096);
        let mut pending = 0u64;
        let mut done = Written {
            rows: 0,
            unwritten: 0,
            error: None,
        };
        let mut good_len = self.start_len;
        if self.start_len == 0 {
            let _ = writeln!(buf, "{}", R::HEADER);
        }
        loop {
            let mut finished = true;
            for ring in &mut rings {
                // Seen before draining: once abandoned, the ring holds
                // everything there will ever be.
                finished &= ring.is_abandoned();
                while let Ok(item) = ring.pop() {
                    if let Some(t) = tee.as_mut() {
                        t(&item);
                    }
                    if done.error.is_some() {
                        done.unwritten += 1;
                        continue;
                    }
                    let _ = item.write_row(&mut buf);
                    pending += 1;
                    if buf.len() >= CHUNK {
                        self.flush(&mut buf, &mut pending, &mut good_len, &mut done, failure);
                    }
                }
            }
            // What came this round goes out now, so a failure is known
            // within a round, and a Ctrl-C loses nothing.
            self.flush(&mut buf, &mut pending, &mut good_len, &mut done, failure);
            if finished {
                break;
            }
            std::thread::sleep(IDLE);
        }
        if done.error.is_none()
            && let Err(e) = self.sink.sync()
        {
            done.error = Some(e);
        }
        done
    }

    fn flush(
        &mut self,
        buf: &mut Vec<u8>,
        pending: &mut u64,
        good_len: &mut u64,
        done: &mut Written,
        failure: &Mutex<Option<String>>,
    ) {
        if done.error.is_some() || buf.is_empty() {
            return;
        }
        match self.sink.write_all(buf) {
            Ok(()) => {
                *good_len += buf.len() as u64;
                done.rows += *pending;
            }
            Err(e) => {
                self.sink.cut_to(*good_len);
                done.unwritten += *pending;
                if let Ok(mut f) = failure.lock() {
                    let cause = crate::files::cause(&e);
                    *f = Some(format!("packet log {}: {cause}", self.path.display()));
                }
                done.error = Some(e);
            }
        }
        buf.clear();
        *pending = 0;
    }
}

impl RunningLog {
    /// Waits for the writer (it ends once its threads have) and returns
    /// what the file holds.
    pub fn finish(self) -> LogResult {
        let joined = self.handle.join();
        if joined.as_ref().is_ok_and(|w| w.error.is_some()) {
            // A first write that failed leaves no empty file behind.
            crate::files::remove_if_empty(&self.path, self.created);
        }
        match joined {
            Ok(w) => LogResult {
                rows: w.rows,
                unwritten: w.unwritten,
                error: w.error.map(|source| LogError::Write {
                    path: self.path,
                    source,
                }),
            },
            Err(_) => LogResult {
                rows: 0,
                unwritten: 0,
                error: Some(LogError::Panicked { path: self.path }),
            },
        }
    }

    /// Why writing stopped, as soon as it has (the run goes on; the front
    /// end decides what to do).
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A point in time as seconds.nanoseconds, or nothing when absent.
pub fn stamp(out: &mut impl Write, ns: Option<u64>) -> io::Result<()> {
    match ns {
        Some(ns) => write!(out, ",{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000),
        None => write!(out, ","),
    }
}

/// One packet as a CSV row.
pub fn write_row(out: &mut impl Write, p: &Points) -> io::Result<()> {
    write_fields(out, p)?;
    writeln!(out)
}

/// One packet's columns, without the row's end (a load run adds its
/// phase).
pub fn write_fields(out: &mut impl Write, p: &Points) -> io::Result<()> {
    write!(out, "{},{}", p.seq, p.status.name())?;
    for ns in [
        p.t1_user,
        p.t1_sched,
        p.t1_driver,
        p.t1_hw,
        None, // T2_HW: STAMP carries one receive time; it goes in T2_SW.
        p.t2,
        p.t3,
        p.t3_hw, // From a later reply's Follow-Up, when the NIC stamped.
        p.t4_hw,
        p.t4_driver,
        p.t4_user,
    ] {
        stamp(out, ns)?;
    }
    match p.rtt_ns {
        Some(rtt) => write!(out, ",{rtt}")?,
        None => write!(out, ",")?,
    }
    stamp(out, p.sched)?;
    match p.reflector_seq {
        Some(r) => write!(out, ",{r}")?,
        None => write!(out, ",")?,
    }
    stamp(out, p.t3_driver)?;
    let tos = |t: Option<u8>| t.map(|t| (t >> 2, synapse_stats::Ecn::from_bits(t).name()));
    for leg in [tos(p.marks.fwd_received()), tos(p.marks.rev_received())] {
        match leg {
            Some((dscp, ecn)) => write!(out, ",{dscp},{ecn}")?,
            None => write!(out, ",,")?,
        }
    }
    stamp(out, p.t1_ack)?;
    match p.ack_with_reply {
        Some(true) => write!(out, ",yes")?,
        Some(false) => write!(out, ",no")?,
        None => write!(out, ",")?,
    }
    stamp(out, p.t0_user)?;
    stamp(out, p.connected)?;
    // T1 hw on the system clock: T1_WIRE − T1_DRV is the send path to
    // the wire.
    stamp(out, p.t1_wire)?;
    // Each end's STAMP error estimate: ns when synchronised (S=1).
    for e in [p.reflector_error, p.client_error] {
        match e {
            Some(e) => match e.bound_ns() {
                Some(ns) => write!(out, ",{}", ns.ceil() as u64)?,
                None => write!(out, ",unsynchronised")?,
            },
            None => write!(out, ",")?,
        }
    }
    // What the path said about it: an ICMP error's kind (with the MTU of a
    // datagram too big) and who sent it.
    match p.path_error {
        Some(e) => {
            write!(out, ",{}", e.kind.name())?;
            if let Some(mtu) = e.mtu {
                write!(out, " mtu {mtu}")?;
            }
            match e.from {
                Some(from) => write!(out, ",{from}")?,
                None => write!(out, ",")?,
            }
        }
        None => write!(out, ",,")?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_engine::PacketStatus;

    #[test]
    fn rows_have_every_column_and_leave_absent_ones_empty() {
        let mut out = Vec::new();
        let p = Points {
            seq: 3,
            t1_user: Some(1_771_555_281_293_181_657),
            t1_driver: Some(1_771_555_281_293_210_998),
            t4_user: Some(1_771_555_281_293_287_981),
            rtt_ns: Some(54_769),
            status: PacketStatus::Ok,
            sched: Some(1_771_555_281_293_180_000),
            reflector_seq: Some(2),
            marks: synapse_stats::Marks::NONE.with_rev_received(0xbb),
            ..Points::default()
        };
        write_row(&mut out, &p).unwrap();
        write_row(
            &mut out,
            &Points {
                seq: 4,
                ..Points::default()
            },
        )
        .unwrap();
        write_row(
            &mut out,
            &Points {
                seq: 5,
                path_error: Some(synapse_stats::PathError {
                    kind: synapse_stats::PathErrorKind::TooBig,
                    from: "10.0.0.1".parse().ok(),
                    mtu: Some(1400),
                }),
                ..Points::default()
            },
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "3,ok,1771555281.293181657,,1771555281.293210998,,,,,,,,1771555281.293287981,54769,1771555281.293180000,2,,,,46,ce,,,,,,,,,"
        );
        assert_eq!(
            lines[1], "4,lost,,,,,,,,,,,,,,,,,,,,,,,,,,,,",
            "a lost packet has no RTT"
        );
        assert!(
            lines[2].ends_with(",too_big mtu 1400,10.0.0.1"),
            "the path's error and its sender: {}",
            lines[2]
        );
        let columns = HEADER.split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == columns));
    }

    #[test]
    fn the_writer_keeps_every_row_pushed_before_the_producer_went_away() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.csv");
        let (mut tx, rx) = rtrb::RingBuffer::new(8);
        let log = PacketLog::create(&path).unwrap().start(vec![rx]).unwrap();
        for seq in 0..1000u64 {
            let p = Points {
                seq,
                rtt_ns: Some(seq),
                ..Points::default()
            };
            while tx.push(p).is_err() {
                std::thread::yield_now();
            }
        }
        drop(tx);
        let done = log.finish();
        assert_eq!((done.rows, done.unwritten), (1000, 0));
        assert!(done.error.is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().next(), Some(HEADER));
        assert_eq!(text.lines().count(), 1001);
        assert!(
            text.ends_with(",999,,,,,,,,,,,,,,,,\n"),
            "RTT, then no SCHED, REFLECTOR_SEQ, T3_DRV, marks, TCP points, T1_WIRE, estimates nor path errors"
        );
    }

    #[test]
    fn appending_runs_share_one_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.csv");
        for (i, open) in [PacketLog::create, PacketLog::append].iter().enumerate() {
            let (mut tx, rx) = rtrb::RingBuffer::new(4);
            let log = open(&path).unwrap().start(vec![rx]).unwrap();
            tx.push(Points {
                seq: i as u64,
                ..Points::default()
            })
            .unwrap();
            drop(tx);
            assert_eq!(log.finish().rows, 1);
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            format!(
                "{HEADER}\n0,lost,,,,,,,,,,,,,,,,,,,,,,,,,,,,\n1,lost,,,,,,,,,,,,,,,,,,,,,,,,,,,,\n"
            )
        );
    }

    #[test]
    fn an_existing_log_is_kept_unless_asked_to_add_or_replace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.csv");
        std::fs::write(&path, "SEQ\n1\n").unwrap();
        let e = PacketLog::open(&path, Opening::New)
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("exists: --log-append adds to it, --force replaces it"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "SEQ\n1\n");
        assert!(PacketLog::open(&path, Opening::Append).is_ok());
        assert!(PacketLog::open(&path, Opening::Replace).is_ok());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        let empty = dir.path().join("empty.csv");
        std::fs::write(&empty, "").unwrap();
        assert!(
            PacketLog::open(&empty, Opening::New).is_ok(),
            "nothing to lose"
        );
    }

    /// A full device: the writer says so at once, keeps nothing of a row
    /// it could not finish, and counts what it could not write.
    #[test]
    fn a_full_device_is_said_at_once_and_rows_are_counted() {
        let (mut tx, rx) = rtrb::RingBuffer::new(4096);
        let log = PacketLog::create(Path::new("/dev/full"))
            .unwrap()
            .start(vec![rx])
            .unwrap();
        for seq in 0..3000u64 {
            tx.push(Points {
                seq,
                ..Points::default()
            })
            .unwrap();
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while log.failure().is_none() {
            assert!(std::time::Instant::now() < deadline, "no failure reported");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(log.failure().unwrap().contains("No space left on device"));
        drop(tx);
        let done = log.finish();
        assert_eq!((done.rows, done.unwritten), (0, 3000));
        assert!(done.error.is_some());
    }

    #[test]
    fn an_unwritable_path_is_one_clear_line() {
        let e = PacketLog::create(Path::new("/nonexistent-dir/x.csv")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--log /nonexistent-dir/x.csv: No such file or directory"
        );
    }
}
