//! The packet that travels the OSI panes. It is driven by real packets: it
//! advances one step per `--update` packets measured, at most one step per
//! frame (so it stays visible at 100 k packets/s), and it stops when
//! measuring stops.

/// Layers per stack, top to bottom: L7, L4, L3, L2, L1.
pub const LAYERS: usize = 5;
/// Down the client, across, up the server, down it, back, up the client.
pub const STEPS: u8 = 4 * LAYERS as u8 + 2;

/// Where the highlighted packet is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// In the client's stack at layer row `0..5` (0 = L7).
    Client(usize),
    /// In the server's stack.
    Server(usize),
    /// On the wire, towards the server (`true`) or back.
    Wire(bool),
}

/// Animation state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Animation {
    /// Current step, `0..STEPS`.
    pub step: u8,
    pending: u64,
    /// The packet being shown: its sequence number and RTT.
    pub packet: Option<(u64, u64)>,
}

impl Animation {
    /// Called once per frame with the packets measured since the last frame
    /// and the newest sample. `every` is `--update`.
    pub fn on_frame(&mut self, new_packets: u64, every: u64, newest: Option<(u64, u64)>) {
        let every = every.max(1);
        // Cap the backlog: a burst must not make the packet race for seconds.
        self.pending = (self.pending + new_packets).min(every * 2);
        if self.pending >= every {
            self.pending -= every;
            self.step = (self.step + 1) % STEPS;
            if self.step == 0 || self.packet.is_none() {
                self.packet = newest;
            }
        }
    }

    /// Where the packet is at the current step.
    pub fn position(&self) -> Position {
        let l = LAYERS as u8;
        match self.step {
            s if s < l => Position::Client(s as usize),
            s if s == l => Position::Wire(true),
            s if s <= 2 * l => Position::Server((2 * l - s) as usize),
            s if s <= 3 * l => Position::Server((s - 2 * l - 1) as usize),
            s if s == 3 * l + 1 => Position::Wire(false),
            s => Position::Client((STEPS - 1 - s) as usize),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_goes_down_across_up_down_back_up() {
        let mut a = Animation::default();
        let mut path = vec![a.position()];
        for _ in 1..STEPS {
            a.on_frame(1, 1, Some((1, 2)));
            path.push(a.position());
        }
        use Position::*;
        assert_eq!(
            path,
            vec![
                Client(0),
                Client(1),
                Client(2),
                Client(3),
                Client(4),
                Wire(true),
                Server(4),
                Server(3),
                Server(2),
                Server(1),
                Server(0),
                Server(0),
                Server(1),
                Server(2),
                Server(3),
                Server(4),
                Wire(false),
                Client(4),
                Client(3),
                Client(2),
                Client(1),
                Client(0),
            ]
        );
    }

    #[test]
    fn it_needs_update_packets_per_step_and_at_most_one_step_per_frame() {
        let mut a = Animation::default();
        a.on_frame(99, 100, None);
        assert_eq!(a.step, 0);
        a.on_frame(1, 100, None);
        assert_eq!(a.step, 1);
        a.on_frame(100_000, 100, None);
        assert_eq!(a.step, 2, "one step per frame however fast packets come");
    }

    #[test]
    fn it_stops_when_no_packets_arrive() {
        let mut a = Animation::default();
        a.on_frame(1_000, 100, None);
        let s = a.step;
        for _ in 0..10 {
            a.on_frame(0, 100, None);
        }
        assert!(a.step <= s + 2, "only the capped backlog may drain");
        let s = a.step;
        a.on_frame(0, 100, None);
        assert_eq!(a.step, s);
    }

    #[test]
    fn it_shows_the_newest_packet_at_each_new_round_trip() {
        let mut a = Animation::default();
        a.on_frame(1, 1, Some((7, 70)));
        assert_eq!(a.packet, Some((7, 70)));
        for i in 2..STEPS as u64 {
            a.on_frame(1, 1, Some((i, i)));
        }
        assert_eq!(a.packet, Some((7, 70)), "kept for the whole trip");
        a.on_frame(1, 1, Some((99, 990)));
        assert_eq!(a.step, 0);
        assert_eq!(a.packet, Some((99, 990)));
    }
}
