//! Which probe goes next, and when: one TTL at a time, paced.
//!
//! Rounds: in each, every flow (source port) in turn sends one probe to
//! each TTL from 1 to its path's end, so a router sees one probe of a flow
//! per round, never a burst. The first round climbs from TTL 1 until the
//! destination has answered (or `max_ttl`); later rounds go up to the
//! nearest TTL the destination answered, or one past the farthest hop that
//! answered when it never did. Probes leave at most at the stated rate:
//! each one at least an interval after the one before, whatever the
//! wake-ups did (late is never made up for by a burst).

/// One flow's path as the answers have drawn it.
#[derive(Debug, Clone, Copy, Default)]
struct Flow {
    /// The nearest TTL whose probe the destination (or a router that
    /// cannot forward it) answered.
    distance: Option<u8>,
    /// The farthest TTL anything answered.
    farthest: u8,
}

/// The trace's schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    flows: Vec<Flow>,
    probes: u32,
    max_ttl: u8,
    interval_ns: u64,
    next_due_ns: u64,
    /// The round under way, whose flow is sending, and its next TTL.
    round: u32,
    flow: usize,
    ttl: u8,
}

impl Schedule {
    /// `flows` flows, `probes` rounds, TTLs up to `max_ttl`, one probe
    /// every `interval_ns` at most, the first at `start_ns`.
    pub fn new(flows: usize, probes: u32, max_ttl: u8, interval_ns: u64, start_ns: u64) -> Self {
        Self {
            flows: vec![Flow::default(); flows.max(1)],
            probes,
            max_ttl: max_ttl.max(1),
            interval_ns,
            next_due_ns: start_ns,
            round: 0,
            flow: 0,
            ttl: 1,
        }
    }

    /// The highest TTL flow `f` probes in round `round`, as known now.
    fn limit(&self, f: usize, round: u32) -> u8 {
        let flow = self.flows[f];
        match flow.distance {
            Some(d) => d,
            None if round == 0 => self.max_ttl,
            None => flow.farthest.saturating_add(1).min(self.max_ttl),
        }
    }

    /// The probe due at `now_ns`, if one is: (flow, TTL). Sending it is
    /// the caller's; the next is due an interval from now.
    pub fn next(&mut self, now_ns: u64) -> Option<(usize, u8)> {
        if now_ns < self.next_due_ns {
            return None;
        }
        while self.round < self.probes {
            if self.ttl <= self.limit(self.flow, self.round) {
                let due = (self.flow, self.ttl);
                self.ttl += 1;
                self.next_due_ns = now_ns + self.interval_ns;
                return Some(due);
            }
            self.ttl = 1;
            self.flow += 1;
            if self.flow == self.flows.len() {
                self.flow = 0;
                self.round += 1;
            }
        }
        None
    }

    /// When the next probe is due (`None`: every round is sent).
    pub fn due_ns(&self) -> Option<u64> {
        (!self.sent_all()).then_some(self.next_due_ns)
    }

    /// Whether every round has been sent. Every limit is at least TTL 1,
    /// so anything is left while a later flow or round is.
    pub fn sent_all(&self) -> bool {
        self.round >= self.probes
            || (self.ttl > self.limit(self.flow, self.round)
                && self.flow + 1 == self.flows.len()
                && self.round + 1 == self.probes)
    }

    /// Flow `f`'s probe of TTL `ttl` was answered.
    pub fn answered(&mut self, f: usize, ttl: u8) {
        if let Some(flow) = self.flows.get_mut(f) {
            flow.farthest = flow.farthest.max(ttl);
        }
    }

    /// Flow `f`'s path ends at TTL `ttl` (the destination answered there,
    /// or a router that cannot forward).
    pub fn reached(&mut self, f: usize, ttl: u8) {
        if let Some(flow) = self.flows.get_mut(f) {
            flow.distance = Some(flow.distance.map_or(ttl, |d| d.min(ttl)));
        }
    }

    /// The most probes this schedule can send.
    pub fn bound(&self) -> usize {
        self.flows.len() * self.probes as usize * usize::from(self.max_ttl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends everything due, one per interval; `answer(flow, ttl)` says
    /// whether that probe ends the path (answered at once).
    fn drive(s: &mut Schedule, ends: impl Fn(usize, u8) -> bool) -> Vec<(usize, u8, u64)> {
        let mut out = Vec::new();
        let mut now = 0;
        while let Some(due) = s.due_ns() {
            now = now.max(due);
            match s.next(now) {
                Some((f, ttl)) => {
                    out.push((f, ttl, now));
                    s.answered(f, ttl);
                    if ends(f, ttl) {
                        s.reached(f, ttl);
                    }
                }
                None => break,
            }
        }
        out
    }

    /// Two flows, destination at TTL 3: the first round climbs to it, every
    /// round sends each flow's TTLs 1..3 in order, one flow after the other.
    #[test]
    fn rounds_go_flow_by_flow_up_to_the_end() {
        let mut s = Schedule::new(2, 3, 30, 10, 0);
        let sent = drive(&mut s, |_, ttl| ttl >= 3);
        let order: Vec<(usize, u8)> = sent.iter().map(|&(f, t, _)| (f, t)).collect();
        let round = [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3)];
        assert_eq!(order, round.repeat(3));
        assert!(s.sent_all());
        // One interval apart, never closer.
        assert!(sent.windows(2).all(|w| w[1].2 - w[0].2 >= 10));
    }

    /// A late answer that moves the end nearer stops the TTLs past it.
    #[test]
    fn a_nearer_end_learned_late_shortens_the_rounds() {
        let mut s = Schedule::new(1, 2, 30, 1, 0);
        let mut now = 0;
        let mut take = |s: &mut Schedule| {
            now += 1;
            s.next(now)
        };
        assert_eq!(take(&mut s), Some((0, 1)));
        assert_eq!(take(&mut s), Some((0, 2)));
        assert_eq!(take(&mut s), Some((0, 3)));
        s.reached(0, 3); // TTL 3's answer, lost… then TTL 4's comes first
        s.reached(0, 2);
        assert_eq!(take(&mut s), Some((0, 1)), "round 1");
        assert_eq!(take(&mut s), Some((0, 2)));
        assert_eq!(take(&mut s), None);
    }

    /// A destination that never answers: the first round climbs to
    /// max_ttl, later ones stop one past the farthest hop that answered.
    #[test]
    fn without_an_answer_from_the_end_rounds_stop_past_the_last_hop() {
        let mut s = Schedule::new(1, 3, 6, 1, 0);
        let mut sent = Vec::new();
        let mut now = 0;
        while let Some((_, ttl)) = {
            now += 1;
            s.next(now)
        } {
            if ttl <= 2 {
                s.answered(0, ttl);
            }
            sent.push(ttl);
        }
        assert_eq!(sent, [1, 2, 3, 4, 5, 6, 1, 2, 3, 1, 2, 3]);
        assert!(sent.len() <= s.bound());
    }

    #[test]
    fn nothing_leaves_before_its_time() {
        let mut s = Schedule::new(1, 1, 3, 100, 50);
        assert_eq!(s.next(49), None);
        assert_eq!(s.next(50), Some((0, 1)));
        assert_eq!(s.next(149), None);
        assert_eq!(s.due_ns(), Some(150));
    }
}
