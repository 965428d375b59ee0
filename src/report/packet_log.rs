//! `--log FILE`: one CSV row per measured packet (client) or answered
//! datagram (server), written by a thread of its own from bounded rings, so
//! the measurement threads never touch the file. The writer drains the
//! rings until their threads have finished and flushes, so a Ctrl-C loses
//! no row.

use crate::engine::Points;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Duration;

/// The client's header: the rant columns, T1 scheduler and the kernel's
/// driver-level software stamps, then the RTT.
pub const HEADER: &str =
    "SEQ,T1_SW,T1_SCHED,T1_DRV,T1_HW,T2_HW,T2_SW,T3_SW,T3_HW,T4_HW,T4_DRV,T4_SW,RTT";

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
    #[error("cannot write the packet log {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// Writing rows failed during the run.
    #[error("packet log {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The writer thread died.
    #[error("packet log {}: the writer thread panicked", path.display())]
    Panicked {
        /// The file.
        path: PathBuf,
    },
}

/// How long the writer sleeps when the ring is empty.
const IDLE: Duration = Duration::from_millis(20);

/// A log file, opened before the run so a bad path fails at once.
#[derive(Debug)]
pub struct PacketLog {
    path: PathBuf,
    out: BufWriter<File>,
    header: bool,
}

/// A log being written.
#[derive(Debug)]
pub struct RunningLog {
    path: PathBuf,
    handle: JoinHandle<io::Result<u64>>,
}

impl PacketLog {
    /// Creates (or truncates) the file.
    pub fn create(path: &Path) -> Result<Self, LogError> {
        Self::open(path, false)
    }

    /// Opens the file to add rows after earlier runs' (the live display
    /// logs each run it starts into one file); the header is written only
    /// into an empty file.
    pub fn append(path: &Path) -> Result<Self, LogError> {
        Self::open(path, true)
    }

    fn open(path: &Path, append: bool) -> Result<Self, LogError> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .append(append)
            .truncate(!append)
            .open(path)
            .map_err(|source| LogError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        let header = file.metadata().map(|m| m.len() == 0).unwrap_or(true);
        Ok(Self {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 16, file),
            header,
        })
    }

    /// Starts the writer thread on the measurement threads' rings.
    pub fn start<R: LogRow>(mut self, mut rings: Vec<rtrb::Consumer<R>>) -> io::Result<RunningLog> {
        let path = self.path.clone();
        let handle = std::thread::Builder::new()
            .name("synapse-log".into())
            .spawn(move || {
                if self.header {
                    writeln!(self.out, "{}", R::HEADER)?;
                }
                let mut rows = 0u64;
                loop {
                    let mut done = true;
                    for ring in &mut rings {
                        // Seen before draining: once abandoned, the ring
                        // holds everything there will ever be.
                        done &= ring.is_abandoned();
                        while let Ok(item) = ring.pop() {
                            item.write_row(&mut self.out)?;
                            rows += 1;
                        }
                    }
                    if done {
                        break;
                    }
                    std::thread::sleep(IDLE);
                }
                self.out.flush()?;
                // On disk before the report says so; pipes and devices
                // (`--log /dev/stdout`, `>(gzip …)`) have nothing to sync.
                let file = self.out.get_ref();
                if file.metadata()?.is_file() {
                    file.sync_data()?;
                }
                Ok(rows)
            })?;
        Ok(RunningLog { path, handle })
    }
}

impl RunningLog {
    /// Waits for the writer (it ends once its threads have) and returns the
    /// rows written.
    pub fn finish(self) -> Result<u64, LogError> {
        match self.handle.join() {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(source)) => Err(LogError::Write {
                path: self.path,
                source,
            }),
            Err(_) => Err(LogError::Panicked { path: self.path }),
        }
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
    write!(out, "{}", p.seq)?;
    for ns in [
        p.t1_user,
        p.t1_sched,
        p.t1_driver,
        p.t1_hw,
        None, // T2_HW: STAMP carries one receive time; it goes in T2_SW.
        p.t2,
        p.t3,
        None, // T3_HW: likewise.
        p.t4_hw,
        p.t4_driver,
        p.t4_user,
    ] {
        stamp(out, ns)?;
    }
    match p.rtt_ns {
        Some(rtt) => writeln!(out, ",{rtt}"),
        None => writeln!(out, ","),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_have_every_column_and_leave_absent_ones_empty() {
        let mut out = Vec::new();
        let p = Points {
            seq: 3,
            t1_user: Some(1_771_555_281_293_181_657),
            t1_driver: Some(1_771_555_281_293_210_998),
            t4_user: Some(1_771_555_281_293_287_981),
            rtt_ns: Some(54_769),
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
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "3,1771555281.293181657,,1771555281.293210998,,,,,,,,1771555281.293287981,54769"
        );
        assert_eq!(lines[1], "4,,,,,,,,,,,,", "a lost packet has no RTT");
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
        assert_eq!(log.finish().unwrap(), 1000);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().next(), Some(HEADER));
        assert_eq!(text.lines().count(), 1001);
        assert!(text.ends_with(",999\n"));
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
            assert_eq!(log.finish().unwrap(), 1);
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{HEADER}\n0,,,,,,,,,,,,\n1,,,,,,,,,,,,\n"));
    }

    #[test]
    fn an_unwritable_path_is_one_clear_line() {
        let e = PacketLog::create(Path::new("/nonexistent-dir/x.csv")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot write the packet log /nonexistent-dir/x.csv: No such file or directory (os error 2)"
        );
    }
}
