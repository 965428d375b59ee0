//! `--json-stream`: a run as it goes, one JSON object a line on stdout,
//! each flushed as written, for dashboards and long runs (iperf3's
//! `--json-stream` is the model). Every line has an `event` and the
//! `schema` it follows:
//!
//! - `start`: whom the run measures and how the stream is cut;
//! - `interval`: one slice of the run (see
//!   [`synapse_stats::stream_slices`]): its figures under the final
//!   report's names (`rtt_ns`, `packets`, `duration_s`, `rate_pps`), its
//!   loss and whether that is still provisional, and its RTT histogram in
//!   HdrHistogram's compressed encoding, as an interval log's lines carry
//!   it (percentiles cannot be averaged; histograms add up);
//! - `settled`: a slice written provisionally, complete now that its
//!   timeout has passed;
//! - `report`: the final report (what `--json` prints), always the last
//!   line, also when the run was stopped early.

use super::Report;
use crate::hdr_log::encode_histogram;
use serde::Serialize;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use synapse_stats::stream_slices::{Cut, Ready, StreamSlice, StreamSlicer};
use synapse_stats::{Record, RttFigures};
use synapse_units::Every;

/// The version of the lines' layout: a consumer checks it.
pub const SCHEMA: u32 = 1;

/// How the stream is cut when `--update` does not say: every second.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(1);

/// What the histograms are, said once in the `start` line.
const HISTOGRAM_ENCODING: &str = "HdrHistogram V2, compressed, base64 (as an --hdr-log line's): round trips in ns, 3 significant digits";

/// One line: its event, the schema, and what it carries.
#[derive(Serialize)]
struct Line<T: Serialize> {
    event: &'static str,
    schema: u32,
    #[serde(flatten)]
    body: T,
}

#[derive(Serialize)]
struct Start {
    synapse_version: &'static str,
    server: SocketAddr,
    local: SocketAddr,
    /// `{"every_s": 1.0}` or `{"every_requests": 100}`.
    cut: serde_json::Value,
    timeout_ms: f64,
    histogram_encoding: &'static str,
}

#[derive(Serialize)]
struct Packets {
    sent: u64,
    received: u64,
    lost: u64,
    late: u64,
}

#[derive(Serialize)]
struct Slice {
    index: u64,
    /// Its bounds, seconds after the run's start.
    start_s: f64,
    end_s: f64,
    duration_s: f64,
    rate_pps: f64,
    /// `null` when no timely reply came in it.
    rtt_ns: Option<RttFigures>,
    packets: Packets,
    /// Lost and late (no timely reply, RFC 7680) over sent; `null` when
    /// nothing was sent in it.
    loss_percent: Option<f64>,
    /// More of its requests may still time out: a `settled` line follows.
    loss_provisional: bool,
    /// Its RTT histogram ([`HISTOGRAM_ENCODING`]); `null` without replies.
    rtt_histogram: Option<String>,
}

impl Slice {
    fn of(s: &StreamSlice) -> Self {
        let secs = |ns: u64| ns as f64 / 1e9;
        let duration_s = secs(s.end_ns.saturating_sub(s.start_ns));
        Self {
            index: s.index,
            start_s: secs(s.start_ns),
            end_s: secs(s.end_ns),
            duration_s,
            rate_pps: if duration_s > 0.0 {
                s.sent as f64 / duration_s
            } else {
                0.0
            },
            rtt_ns: RttFigures::of(&s.rtt),
            packets: Packets {
                sent: s.sent,
                received: s.received,
                lost: s.lost,
                late: s.late,
            },
            loss_percent: s.loss_percent(),
            loss_provisional: s.provisional,
            rtt_histogram: (!s.rtt.is_empty()).then(|| encode_histogram(&s.rtt)),
        }
    }
}

/// The cut `--update` asks for: a duration, or a count of requests; the
/// stream's own second when it is not given.
pub fn cut_of(update: Option<Every>) -> Cut {
    match update {
        Some(Every::Packets(n)) => Cut::Requests(n),
        Some(Every::Time(d)) => Cut::Time(d),
        None => Cut::Time(DEFAULT_EVERY),
    }
}

/// A stream being written.
#[derive(Debug)]
pub struct JsonStream<W: Write> {
    out: W,
    slicer: StreamSlicer,
    cut: Cut,
    timeout: Duration,
    /// Taken before the run starts, so the run's clock is never ahead.
    started: Instant,
    failure: Option<io::Error>,
}

impl<W: Write> JsonStream<W> {
    /// A stream to `out`, cut by `cut`, of requests that wait `timeout`.
    /// Make it before the run starts: its clock starts now.
    pub fn new(out: W, cut: Cut, timeout: Duration) -> Self {
        Self {
            out,
            slicer: StreamSlicer::new(cut, timeout),
            cut,
            timeout,
            started: Instant::now(),
            failure: None,
        }
    }

    /// The `start` line, once the run is under way.
    pub fn start(&mut self, server: SocketAddr, local: SocketAddr) {
        let cut = match self.cut {
            Cut::Time(d) => serde_json::json!({ "every_s": d.as_secs_f64() }),
            Cut::Requests(n) => serde_json::json!({ "every_requests": n }),
        };
        let start = Start {
            synapse_version: env!("CARGO_PKG_VERSION"),
            server,
            local,
            cut,
            timeout_ms: self.timeout.as_secs_f64() * 1e3,
            histogram_encoding: HISTOGRAM_ENCODING,
        };
        self.line("start", start);
    }

    /// Accounts for a record of the run.
    pub fn record(&mut self, r: &Record) {
        self.slicer.record(r);
    }

    /// Writes what is due now.
    pub fn tick(&mut self) {
        let now = self.started.elapsed().as_nanos() as u64;
        let ready = self.slicer.due(now);
        self.write_all(ready);
    }

    /// The run has ended and every record is in: writes what is left.
    pub fn end_run(&mut self) {
        let ready = self.slicer.finish();
        self.write_all(ready);
    }

    /// Why the stream could not be written, once it could not (the run is
    /// then ended: a stream nobody reads measures for nobody).
    pub fn failure(&self) -> Option<&io::Error> {
        self.failure.as_ref()
    }

    /// The failure, handed over.
    pub fn into_failure(self) -> Option<io::Error> {
        self.failure
    }

    fn write_all(&mut self, ready: Vec<Ready>) {
        for r in ready {
            match r {
                Ready::Slice(s) => self.line("interval", Slice::of(&s)),
                Ready::Settled(s) => self.line("settled", Slice::of(&s)),
            }
        }
    }

    fn line<T: Serialize>(&mut self, event: &'static str, body: T) {
        if self.failure.is_some() {
            return;
        }
        let line = Line {
            event,
            schema: SCHEMA,
            body,
        };
        if let Err(e) = write_line(&mut self.out, &line) {
            self.failure = Some(e);
        }
    }
}

fn write_line<T: Serialize>(out: &mut impl Write, line: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// The last line: the report `--json` prints, with its event and schema.
pub fn write_report(out: &mut impl Write, report: &Report) -> io::Result<()> {
    let line = Line {
        event: "report",
        schema: SCHEMA,
        body: super::json::document(report),
    };
    write_line(out, &line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use synapse_stats::RecordKind;

    #[test]
    fn lines_carry_their_event_schema_and_the_reports_names() {
        let mut out = Vec::new();
        let mut s = JsonStream::new(&mut out, Cut::Requests(2), Duration::from_millis(100));
        let a: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        s.start(a, a);
        s.record(&Record::sample(0, 30_000, 20_000, false));
        s.record(&Record::event(RecordKind::Lost, 1, 100_040_000, false));
        s.tick();
        s.record(&Record::sample(2, 100_090_000, 40_000, false));
        s.end_run();
        assert!(s.failure().is_none());
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
        assert_eq!(events, ["start", "interval", "interval"]);
        assert!(lines.iter().all(|l| l["schema"] == SCHEMA));
        assert_eq!(lines[0]["cut"]["every_requests"], 2);
        let first = &lines[1];
        assert_eq!(first["packets"]["sent"], 2);
        assert_eq!(first["packets"]["lost"], 1);
        assert_eq!(first["loss_percent"], 50.0);
        assert_eq!(first["loss_provisional"], false);
        let on_buckets = |ns: u64| {
            let mut h = synapse_stats::intervals::empty_histogram();
            h.record(ns).unwrap();
            h.max()
        };
        assert_eq!(first["rtt_ns"]["p50"], on_buckets(20_000));
        let h = crate::hdr_log::decode_histogram(first["rtt_histogram"].as_str().unwrap()).unwrap();
        assert_eq!((h.len(), h.max()), (1, on_buckets(20_000)));
        assert_eq!(lines[2]["rtt_ns"]["max"], on_buckets(40_000));
    }

    #[test]
    fn a_stream_that_cannot_be_written_says_why_once() {
        let mut full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let mut s = JsonStream::new(&mut full, Cut::Requests(1), Duration::from_millis(1));
        let a: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        s.start(a, a);
        s.record(&Record::sample(0, 30_000, 20_000, false));
        s.tick();
        assert_eq!(
            s.failure().map(io::Error::kind),
            Some(io::ErrorKind::StorageFull)
        );
    }
}
