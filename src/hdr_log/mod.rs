//! `--hdr-log FILE`: an HdrHistogram interval log, the text format
//! HdrHistogram's own tools and libraries read (Java's
//! `HistogramLogReader` and `HistogramLogProcessor`, Python's `hdrh`, the
//! Rust crate's `IntervalLogIterator`): one line per interval and series,
//! `Tag=rtt,START,LENGTH,MAX,HISTFAAA…`, the histogram in the compressed V2
//! encoding, base64.
//!
//! Intervals come from a consumer of the measurement ring (see
//! [`synapse_stats::intervals`]); a thread of its own encodes and writes
//! them, so neither the measurement thread nor the consumer waits for the
//! disk. Each batch of lines is handed to the file whole, and a failed
//! write is cut back to the last whole line, so the file always reads.

mod read;

pub use read::{LoggedRun, read, read_text};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use synapse_stats::intervals::Interval;

/// The log format version the header names (HdrHistogram's current one).
pub const FORMAT_VERSION: &str = "1.3";
/// Interval maxima are written in milliseconds, as Java's writer does.
const MAX_DIVISOR: f64 = 1_000_000.0;

/// The first lines of every interval log Synapse writes.
pub fn header(what: &str) -> Vec<String> {
    vec![
        format!(
            "[Synapse {} interval log: {what}; values in nanoseconds]",
            env!("CARGO_PKG_VERSION")
        ),
        "[Series: rtt = application-to-application round trip; send_path, network, \
         server_dwell, receive_path, nic_round_trip = its segments (from the packets with \
         kernel stamps); forward, backward = STAMP one-way delays as the two clocks read them \
         (negative readings left out); unanswered = requests without a timely reply, each \
         recorded as its timeout; outage = each outage's length; response, dwell = a \
         server's T3 driver - T2 driver and T3 user - T2 driver]"
            .into(),
    ]
}

/// Why an interval log could not be written.
#[derive(Debug, thiserror::Error)]
pub enum HdrLogError {
    /// The file exists; a measurement cannot be repeated, so it is kept.
    #[error("--hdr-log {}: the file exists (remove it, or choose another name)", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// The file could not be created or written.
    #[error("--hdr-log {}: {}", path.display(), crate::files::cause(source))]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A log to read could not be read.
    #[error("{}: {}", path.display(), crate::files::cause(source))]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A log being read is not an interval log Synapse can use.
    #[error("{}: {why}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
}

/// What a finished log holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HdrLogOutcome {
    /// The file.
    pub path: PathBuf,
    /// Intervals written whole.
    pub intervals: u64,
    /// Why writing stopped, if it did.
    pub error: Option<String>,
}

enum Message {
    /// Intervals of the run's grid: counted.
    Intervals(Vec<Interval>),
    /// Outages, each a line spanning it: not intervals of the grid.
    Spans(Vec<Interval>),
    Comment(String),
}

/// An interval log being written.
#[derive(Debug)]
pub struct HdrLogWriter {
    path: PathBuf,
    /// When the log's time 0 is (its BaseTime).
    base: SystemTime,
    tx: Option<mpsc::Sender<Message>>,
    failure: Arc<Mutex<Option<String>>>,
    handle: Option<JoinHandle<HdrLogOutcome>>,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Message")
    }
}

/// Seconds since the epoch, as the log's header writes them.
fn epoch_seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl HdrLogWriter {
    /// Creates `path` (an existing file is refused), writes the header with
    /// `base` as the StartTime and BaseTime (interval times count from it)
    /// and `about` as comment lines, and starts the writer thread.
    pub fn create(path: &Path, base: SystemTime, about: &[String]) -> Result<Self, HdrLogError> {
        let io_err = |source| HdrLogError::Io {
            path: path.to_path_buf(),
            source,
        };
        let existed = std::fs::symlink_metadata(path).is_ok();
        if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0) {
            return Err(HdrLogError::Exists {
                path: path.to_path_buf(),
            });
        }
        let mut file = File::create(path).map_err(io_err)?;
        // A header that cannot be written (a full disk) leaves no empty file.
        let abandon = |e| {
            crate::files::remove_if_empty(path, !existed);
            io_err(e)
        };
        let mut head = Vec::new();
        for line in about {
            let _ = writeln!(head, "#{line}");
        }
        let secs = epoch_seconds(base);
        let _ = writeln!(head, "#[Histogram log format version {FORMAT_VERSION}]");
        let _ = writeln!(head, "#[StartTime: {secs:.3} (seconds since epoch)]");
        let _ = writeln!(head, "#[BaseTime: {secs:.3} (seconds since epoch)]");
        let _ = writeln!(head, "#[MaxValueDivisor: {MAX_DIVISOR:.3}]");
        let _ = writeln!(
            head,
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        );
        file.write_all(&head).map_err(abandon)?;
        let (tx, rx) = mpsc::channel();
        let failure = Arc::new(Mutex::new(None));
        let told = Arc::clone(&failure);
        let at = path.to_path_buf();
        let good = head.len() as u64;
        let handle = std::thread::Builder::new()
            .name("synapse-hdr-log".into())
            .spawn(move || write_loop(file, at, good, &rx, &told))
            .map_err(io_err)?;
        Ok(Self {
            path: path.to_path_buf(),
            base,
            tx: Some(tx),
            failure,
            handle: Some(handle),
        })
    }

    /// The log's time 0.
    pub fn base(&self) -> SystemTime {
        self.base
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Hands intervals to the writer.
    pub fn write(&self, intervals: Vec<Interval>) {
        if let Some(tx) = &self.tx
            && !intervals.is_empty()
        {
            let _ = tx.send(Message::Intervals(intervals));
        }
    }

    /// Hands outage spans to the writer: lines of their own, which a
    /// reader places where each outage began, not counted as intervals.
    pub fn write_spans(&self, spans: Vec<Interval>) {
        if let Some(tx) = &self.tx
            && !spans.is_empty()
        {
            let _ = tx.send(Message::Spans(spans));
        }
    }

    /// A comment line (`#` and the text), after the intervals so far.
    pub fn comment(&self, text: &str) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Message::Comment(text.replace('\n', " ")));
        }
    }

    /// Why writing stopped, as soon as it has.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }

    /// Lets the writer write what it was given, and says what the file holds.
    pub fn finish(mut self) -> HdrLogOutcome {
        self.tx = None;
        let path = self.path.clone();
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(outcome)) => outcome,
            _ => HdrLogOutcome {
                path,
                intervals: 0,
                error: Some("the interval log's writer thread panicked".into()),
            },
        }
    }
}

impl Drop for HdrLogWriter {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The lines of some intervals: one per series, tags as they are.
pub fn encode(intervals: &[Interval], out: &mut Vec<u8>) -> io::Result<()> {
    let mut serializer = V2DeflateSerializer::new();
    let mut log = IntervalLogWriterBuilder::new()
        .with_max_value_divisor(MAX_DIVISOR)
        .begin_log_with(out, &mut serializer)?;
    for i in intervals {
        let start = Duration::from_nanos(i.start_ns);
        let length = Duration::from_nanos(i.length_ns);
        for (tag, h) in &i.series {
            log.write_histogram(h, start, length, Tag::new(tag))
                .map_err(|e| io::Error::other(e.to_string()))?;
        }
    }
    Ok(())
}

fn write_loop(
    mut file: File,
    path: PathBuf,
    mut good_len: u64,
    rx: &mpsc::Receiver<Message>,
    failure: &Mutex<Option<String>>,
) -> HdrLogOutcome {
    let mut outcome = HdrLogOutcome {
        path,
        intervals: 0,
        error: None,
    };
    let mut buf = Vec::new();
    for msg in rx {
        if outcome.error.is_some() {
            continue;
        }
        buf.clear();
        let count = match &msg {
            Message::Intervals(iv) | Message::Spans(iv) => {
                // The divisor's header line is written once, above.
                let skip = buf.len();
                let r = encode(iv, &mut buf);
                strip_divisor_line(&mut buf, skip);
                let counted = matches!(msg, Message::Intervals(_));
                r.map(|()| if counted { iv.len() as u64 } else { 0 })
            }
            Message::Comment(c) => writeln!(buf, "#{c}").map(|()| 0),
        };
        let written = count.and_then(|n| file.write_all(&buf).map(|()| n));
        match written {
            Ok(n) => {
                good_len += buf.len() as u64;
                outcome.intervals += n;
            }
            Err(e) => {
                let _ = file.set_len(good_len);
                let why = format!("--hdr-log {}: {e}", outcome.path.display());
                if let Ok(mut f) = failure.lock() {
                    *f = Some(why.clone());
                }
                outcome.error = Some(why);
            }
        }
    }
    if outcome.error.is_none()
        && let Err(e) = file.sync_data()
    {
        outcome.error = Some(format!("--hdr-log {}: {e}", outcome.path.display()));
    }
    outcome
}

/// The crate's writer opens every batch with the divisor's comment; the
/// file has it once, in its header.
fn strip_divisor_line(buf: &mut Vec<u8>, from: usize) {
    if buf[from..].starts_with(b"#[MaxValueDivisor") {
        let end = buf[from..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(buf.len(), |p| from + p + 1);
        buf.drain(from..end);
    }
}

/// One histogram in HdrHistogram's compressed V2 encoding, base64: what an
/// interval log's line carries, for a JSON report's slices.
pub fn encode_histogram(h: &hdrhistogram::Histogram<u64>) -> String {
    use base64::Engine;
    let mut raw = Vec::new();
    // Serializing into a Vec cannot fail for a valid histogram.
    let _ = V2DeflateSerializer::new().serialize(h, &mut raw);
    base64::engine::general_purpose::STANDARD.encode(raw)
}

/// The histogram of [`encode_histogram`]'s text.
pub fn decode_histogram(text: &str) -> Result<hdrhistogram::Histogram<u64>, String> {
    use base64::Engine;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("bad base64: {e}"))?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut raw.as_slice())
        .map_err(|e| format!("not a histogram: {e:?}"))
}

/// A name as a tag: HdrHistogram tags hold no `,`, space or line break.
pub fn tag_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if matches!(c, ',' | ' ' | '\r' | '\n') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// A peer's series prefix in an agent's log: `NAME/`, the name tag-safe.
pub fn peer_prefix(name: &str) -> String {
    format!("{}/", tag_safe(name))
}

#[cfg(test)]
mod tests;
