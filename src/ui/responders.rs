//! A multicast run's responders as the live display keeps them: one row
//! each, fed by its own records (tagged with its index), named when the
//! engine says who it is. Each row counts its answers and losses, keeps
//! its round trips since the last clear for its percentiles, the median of
//! each 250 ms window for a sparkline, and how many requests in a row it
//! left unanswered: two or more and it is shown silent.

use hdrhistogram::Histogram;
use std::collections::VecDeque;
use std::net::SocketAddr;
use synapse_engine::ResponderEntry;
use synapse_stats::{HISTORY, MAX_TRACKABLE_NS, Record, RecordKind};

/// Requests in a row without an answer that make a responder silent (an
/// outage's least, as the reports count one).
pub const SILENT_AFTER: u64 = synapse_stats::outages::MIN_PACKETS;

/// One responder's row.
#[derive(Debug, Clone)]
pub struct ResponderRow {
    /// Its name, when its answers tell one.
    pub name: Option<String>,
    /// The address its answers come from (`None` until the engine says).
    pub address: Option<SocketAddr>,
    /// Answers in time, since the last clear.
    pub answered: u64,
    /// Requests it never answered.
    pub lost: u64,
    /// Answers after their deadline.
    pub late: u64,
    /// Second answers to one request.
    pub duplicate: u64,
    /// Requests unanswered since its last answer.
    pub unanswered_run: u64,
    /// When it last answered (ns since the run started).
    pub last_answer_ns: Option<u64>,
    rtt: Histogram<u32>,
    window: Histogram<u32>,
    /// Past windows' medians, oldest first (`None`: no answer in it).
    pub history: VecDeque<Option<u64>>,
}

impl ResponderRow {
    fn new() -> Self {
        // Two significant digits (1 %) in u32 counts, as the agent's rows.
        #[allow(clippy::expect_used)]
        let h = || {
            Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, 2)
                .expect("constant histogram bounds are valid")
        };
        Self {
            name: None,
            address: None,
            answered: 0,
            lost: 0,
            late: 0,
            duplicate: 0,
            unanswered_run: 0,
            last_answer_ns: None,
            rtt: h(),
            window: h(),
            history: VecDeque::with_capacity(HISTORY),
        }
    }

    /// How the row is labelled: `r2 10.0.0.2:8080`, the address alone, or
    /// `#3` before the engine said who it is.
    pub fn label(&self, index: usize) -> String {
        match (&self.name, self.address) {
            (Some(n), Some(a)) => format!("{n} {a}"),
            (None, Some(a)) => a.to_string(),
            (Some(n), None) => n.clone(),
            (None, None) => format!("#{index}"),
        }
    }

    /// Its round trips' median and 99th percentile since the last clear.
    pub fn percentiles(&self) -> Option<(u64, u64)> {
        (!self.rtt.is_empty()).then(|| {
            (
                self.rtt.value_at_quantile(0.5),
                self.rtt.value_at_quantile(0.99),
            )
        })
    }

    /// Lost and late, percent of the requests it was asked.
    pub fn loss_percent(&self) -> Option<f64> {
        let asked = self.answered + self.lost + self.late;
        (asked > 0).then(|| 100.0 * (self.lost + self.late) as f64 / asked as f64)
    }

    /// It left the last requests unanswered: it is silent.
    pub fn silent(&self) -> bool {
        self.unanswered_run >= SILENT_AFTER
    }

    fn ingest(&mut self, r: &Record) {
        if r.warmup {
            return;
        }
        match r.kind {
            RecordKind::Sample => {
                self.answered += 1;
                self.unanswered_run = 0;
                self.last_answer_ns = Some(r.at_ns);
                let v = r.rtt_ns.clamp(1, MAX_TRACKABLE_NS);
                self.rtt.saturating_record(v);
                self.window.saturating_record(v);
            }
            RecordKind::Lost => {
                self.lost += 1;
                self.unanswered_run += 1;
            }
            RecordKind::Late { .. } => {
                // First counted lost at its deadline.
                self.lost = self.lost.saturating_sub(1);
                self.late += 1;
            }
            RecordKind::Duplicate => self.duplicate += 1,
            _ => {}
        }
    }

    fn close_window(&mut self) {
        let median = (!self.window.is_empty()).then(|| self.window.value_at_quantile(0.5));
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(median);
        self.window.reset();
    }
}

/// Every responder heard, by index.
#[derive(Debug, Clone, Default)]
pub struct ResponderBoard {
    /// One row per responder, in the order first heard.
    pub rows: Vec<ResponderRow>,
}

impl ResponderBoard {
    fn row(&mut self, index: usize) -> &mut ResponderRow {
        while self.rows.len() <= index {
            self.rows.push(ResponderRow::new());
        }
        &mut self.rows[index]
    }

    /// Responder `index`'s record.
    pub fn ingest(&mut self, index: usize, r: &Record) {
        self.row(index).ingest(r);
    }

    /// Who responder `entry.index` is.
    pub fn name(&mut self, entry: &ResponderEntry) {
        let row = self.row(entry.index as usize);
        row.name = entry.name.map(|n| n.to_string());
        row.address = Some(entry.address);
    }

    /// A 250 ms window ended: each row's median joins its history.
    pub fn close_window(&mut self) {
        for row in &mut self.rows {
            row.close_window();
        }
    }

    /// Forgets the figures (a clear), keeping who each responder is.
    pub fn clear(&mut self) {
        for row in &mut self.rows {
            let (name, address) = (row.name.take(), row.address);
            *row = ResponderRow::new();
            row.name = name;
            row.address = address;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(seq: u64, rtt: u64) -> Record {
        Record::sample(seq, seq * 1_000, rtt, false)
    }

    #[test]
    fn a_row_counts_its_answers_and_goes_silent_after_two_unanswered() {
        let mut b = ResponderBoard::default();
        b.ingest(1, &sample(0, 20_000));
        b.ingest(1, &sample(1, 40_000));
        assert_eq!(b.rows.len(), 2, "index 0 has a row too, unnamed");
        assert_eq!(b.rows[0].label(0), "#0");
        let r = &b.rows[1];
        assert_eq!((r.answered, r.silent()), (2, false));
        assert_eq!(r.percentiles().map(|(p50, _)| p50 / 1_000), Some(20));
        b.ingest(1, &Record::event(RecordKind::Lost, 2, 3_000, false));
        assert!(!b.rows[1].silent(), "one loss is loss, not silence");
        b.ingest(1, &Record::event(RecordKind::Lost, 3, 4_000, false));
        assert!(b.rows[1].silent());
        b.ingest(
            1,
            &Record::event(RecordKind::Late { reordered: false }, 3, 5_000, false),
        );
        assert_eq!((b.rows[1].lost, b.rows[1].late), (1, 1));
        assert_eq!(b.rows[1].loss_percent(), Some(50.0));
        b.ingest(1, &sample(4, 30_000));
        assert!(!b.rows[1].silent(), "it answered again");
        assert_eq!(b.rows[1].last_answer_ns, Some(4_000));
    }

    #[test]
    fn windows_keep_medians_and_a_clear_keeps_names() {
        let mut b = ResponderBoard::default();
        b.name(&ResponderEntry {
            index: 0,
            name: Some("r1".parse().unwrap()),
            address: "10.0.0.2:8080".parse().unwrap(),
        });
        b.ingest(0, &sample(0, 10_000));
        b.close_window();
        b.close_window();
        assert_eq!(b.rows[0].history.len(), 2);
        assert!(b.rows[0].history[0].is_some() && b.rows[0].history[1].is_none());
        b.clear();
        assert_eq!(b.rows[0].answered, 0);
        assert_eq!(b.rows[0].label(0), "r1 10.0.0.2:8080");
        let mut w = Record::sample(0, 0, 5, true);
        w.warmup = true;
        b.ingest(0, &w);
        assert_eq!(b.rows[0].answered, 0, "warm-up is not counted");
    }
}
