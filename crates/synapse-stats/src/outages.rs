//! Outages: runs of consecutive requests that got no timely reply (lost, or
//! answered only after their timeout). One lost packet is loss; two or more
//! in a row are an outage, however short the timeout made it.

use serde::Serialize;

/// Requests in a row without a timely reply that make an outage.
pub const MIN_PACKETS: u64 = 2;

/// Finds outages in requests resolved in sequence order. The engine feeds
/// it; it allocates nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct OutageDetector {
    /// The first request of the current run: its number and send time.
    start: Option<(u64, u64)>,
    packets: u64,
}

/// One outage, as the detector reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    /// Its first request.
    pub seq: u64,
    /// Requests without a timely reply.
    pub packets: u64,
    /// From the first of them leaving to the next timely reply (or the
    /// end of the run), ns.
    pub length_ns: u64,
}

impl OutageDetector {
    /// Request `seq`, sent at `sent_ns`, got no timely reply.
    #[inline]
    pub fn missed(&mut self, seq: u64, sent_ns: u64) {
        self.start.get_or_insert((seq, sent_ns));
        self.packets += 1;
    }

    /// A timely reply arrived at `now_ns`: ends the run, if any.
    #[inline]
    pub fn answered(&mut self, now_ns: u64) -> Option<Outage> {
        self.end(now_ns)
    }

    /// The run is over at `now_ns` (the measurement ended, or warm-up did):
    /// an open run ends here.
    pub fn end(&mut self, now_ns: u64) -> Option<Outage> {
        let (seq, since) = self.start.take()?;
        let packets = std::mem::take(&mut self.packets);
        (packets >= MIN_PACKETS).then(|| Outage {
            seq,
            packets,
            length_ns: now_ns.saturating_sub(since),
        })
    }

    /// When the current run of requests without a timely reply began (its
    /// first request's send time), if one is open.
    #[inline]
    pub fn since_ns(&self) -> Option<u64> {
        self.start.map(|(_, since)| since)
    }

    /// Forgets the current run (warm-up ended).
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}

/// Outages over a run, for reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Outages {
    /// How many.
    pub count: u64,
    /// The longest, in ms.
    pub longest_ms: f64,
    /// Requests in the longest.
    pub longest_packets: u64,
    /// All of them together, in ms: the time without replies.
    pub total_ms: f64,
}

impl Outages {
    /// Accounts for one outage.
    pub fn add(&mut self, packets: u64, length_ns: u64) {
        let ms = length_ns as f64 / 1e6;
        self.count += 1;
        self.total_ms += ms;
        if ms > self.longest_ms {
            self.longest_ms = ms;
            self.longest_packets = packets;
        }
    }

    /// Adds another run's outages.
    pub fn merge(&mut self, o: &Outages) {
        self.count += o.count;
        self.total_ms += o.total_ms;
        if o.longest_ms > self.longest_ms {
            self.longest_ms = o.longest_ms;
            self.longest_packets = o.longest_packets;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_miss_is_loss_and_two_in_a_row_are_an_outage() {
        let mut d = OutageDetector::default();
        d.missed(3, 1_000);
        assert_eq!(d.answered(2_000), None, "one lost packet is not an outage");
        d.missed(7, 10_000);
        d.missed(8, 20_000);
        d.missed(9, 30_000);
        assert_eq!(
            d.answered(45_000),
            Some(Outage {
                seq: 7,
                packets: 3,
                length_ns: 35_000
            })
        );
        assert_eq!(d.answered(50_000), None, "a run ends once");
        d.missed(20, 100_000);
        d.missed(21, 110_000);
        assert_eq!(d.end(500_000).map(|o| o.length_ns), Some(400_000));
    }

    #[test]
    fn figures_keep_the_longest_and_add_the_rest() {
        let mut a = Outages::default();
        a.add(15, 1_500_000_000);
        a.add(2, 200_000_000);
        let mut b = Outages::default();
        b.add(20, 2_000_000_000);
        a.merge(&b);
        assert_eq!(a.count, 3);
        assert_eq!((a.longest_ms, a.longest_packets), (2_000.0, 20));
        assert!((a.total_ms - 3_700.0).abs() < 1e-9);
    }
}
