//! The live display's state. It holds no clocks and no sockets: the
//! controller feeds it, and the render functions read it, so every frame is
//! reproducible in tests.

use super::animation::Animation;
use super::theme::Theme;
use crate::config::Baseline;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::Duration;
use synapse_engine::{ReflectorTotals, SessionInfo, StampingInfo};
use synapse_stats::LiveStats;
use synapse_units::Every;

/// `--update` on the live display when none is given: the original
/// tool's 100 packets per step.
pub const DEFAULT_UPDATE: u64 = 100;

/// Which side of the measurement this process is playing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Measuring.
    Client,
    /// Reflecting.
    Server,
}

/// Fixed facts about the client side, for the header and panes.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientInfo {
    /// The reflector.
    pub target: String,
    /// Our address.
    pub local: String,
    /// `loopback` or `client`.
    pub mode: &'static str,
    /// Measurement CPU.
    pub cpu: usize,
    /// Spinning receive.
    pub busy_poll: bool,
    /// Which calibrated floor the run is held against.
    pub floor_kind: crate::report::FloorKind,
    /// Warm-up length.
    pub warmup: u64,
    /// Packet budget per run.
    pub packets: Option<u64>,
    /// Time budget per run.
    pub duration: Option<Duration>,
    /// Payload bytes.
    pub size: usize,
    /// Paced: the send schedule (`None`: ping-pong).
    pub pace: Option<synapse_engine::Schedule>,
    /// UDP datagrams, or request and response over TCP.
    pub transport: synapse_engine::Transport,
}

impl ClientInfo {
    /// The target is a multicast group: the view has a row per responder.
    pub fn is_group(&self) -> bool {
        self.target
            .parse::<std::net::SocketAddr>()
            .is_ok_and(|a| a.ip().is_multicast())
    }
}

/// What the client view shows.
#[derive(Debug, Clone)]
pub struct ClientView {
    /// Live statistics since the last clear.
    pub live: LiveStats,
    /// Fixed facts.
    pub info: ClientInfo,
    /// Post-warm-up packets resolved in the current run.
    pub run_done: u64,
    /// Time since the current run started (once it stopped: the time it
    /// measured, as the report counts it).
    pub run_elapsed: Duration,
    /// The runs before this one since the last clear (a stop and a start,
    /// a switch of role and back): their packets and measured time, which
    /// the report adds to this run's.
    pub earlier: (u64, Duration),
    /// Records the ring could not hold (live view only; totals are exact).
    pub ring_overflow: u64,
    /// How the current run stamps its packets (once it has started).
    pub stamping: Option<StampingInfo>,
    /// Against the reference marked with `m`: the text, and whether a
    /// difference is significant yet.
    pub versus: Option<(String, bool)>,
    /// No reply for a while (said after a second, or at the path's first
    /// error): shown while it lasts, in place of a figure gone stale.
    pub silence: Option<crate::session::far_side::Silence>,
    /// A load run's state (`--load`).
    pub load: Option<crate::session::LoadLive>,
    /// A multicast run: each responder's row (empty otherwise).
    pub responders: super::responders::ResponderBoard,
}

/// What the server view shows.
#[derive(Debug, Clone, Default)]
pub struct ServerView {
    /// Listening address.
    pub bind: String,
    /// Reflector CPU.
    pub cpu: usize,
    /// Spinning receive.
    pub busy_poll: bool,
    /// Which calibrated floor the run is held against.
    pub floor_mode: crate::report::RunMode,
    /// Sessions heard from recently.
    pub active: Vec<SessionInfo>,
    /// Sessions that went idle, newest first.
    pub ended: VecDeque<SessionInfo>,
    /// Totals since start (or since the last clear).
    pub totals: ReflectorTotals,
    /// Datagrams per second over the last tick.
    pub pps: f64,
    /// The reflector's clock at the last update (ns).
    pub now_ns: u64,
    /// Silence that ends a session.
    pub session_idle: Duration,
    /// The STAMP reflector: where it listens, or why it could not.
    pub stamp: Option<Result<String, String>>,
    /// The STAMP reflector's totals.
    pub stamp_totals: ReflectorTotals,
    /// The file every answer is logged to (`synapse server --log`).
    pub log: Option<String>,
    /// Each session's counts at the last clear: the table shows what came
    /// since, as the totals do.
    pub base: HashMap<SocketAddr, (u64, u64)>,
    /// First row of the client table shown (it scrolls).
    pub scroll: usize,
    /// Addresses a client can use to reach this reflector (the host's own,
    /// when it listens on the wildcard).
    pub reach: Vec<String>,
    /// Datagrams answered per closed window (250 ms), oldest first, over
    /// the last minute.
    pub answers: VecDeque<u64>,
    /// Answers not yet in a window: (from, to, count) on the reflector's
    /// clock, as its totals said them.
    pub answers_pending: VecDeque<(u64, u64, u64)>,
    /// Where the open window of answers ends, on the reflector's clock.
    pub answers_window_end: Option<u64>,
}

/// Ended sessions kept for display.
pub const ENDED_KEPT: usize = 50;

impl ServerView {
    /// A session's counts since the last clear.
    fn since_clear(&self, mut s: SessionInfo) -> SessionInfo {
        if let Some((packets, bytes)) = self.base.get(&s.peer) {
            s.packets = s.packets.saturating_sub(*packets);
            s.bytes = s.bytes.saturating_sub(*bytes);
        }
        s
    }

    /// `n` datagrams answered between `from_ns` and `to_ns` on the
    /// reflector's clock (between two of its totals). Windows are cut on
    /// that clock, each answer counted in the window of its time (spread
    /// evenly over its span), and a window closes once the reflector's
    /// clock has passed its end: the totals come every 100 ms, so cutting
    /// by when they arrived gave a steady 1,000/s windows of 2 and 3 ticks,
    /// 800/s and 1.2k/s.
    pub fn answered_between(&mut self, from_ns: u64, to_ns: u64, n: u64) {
        let window = synapse_stats::WINDOW.as_nanos() as u64;
        let mut end = *self.answers_window_end.get_or_insert(from_ns + window);
        if n > 0 {
            self.answers_pending
                .push_back((from_ns, to_ns.max(from_ns), n));
        }
        while to_ns >= end {
            let mut closed = 0;
            for (a, b, count) in &mut self.answers_pending {
                let before = if *b <= end {
                    *count
                } else if *a >= end {
                    0
                } else {
                    *count * (end - *a) / (*b - *a)
                };
                closed += before;
                *count -= before;
                *a = (*a).max(end.min(*b));
            }
            self.answers_pending.retain(|p| p.2 > 0);
            if self.answers.len() == synapse_stats::HISTORY {
                self.answers.pop_front();
            }
            self.answers.push_back(closed);
            end += window;
        }
        self.answers_window_end = Some(end);
    }

    /// A reflector started afresh: its clock starts again.
    pub fn restart_answer_clock(&mut self) {
        self.answers_pending.clear();
        self.answers_window_end = None;
    }

    /// Records a session that went idle.
    pub fn session_ended(&mut self, s: SessionInfo) {
        let s = self.since_clear(s);
        self.base.remove(&s.peer);
        self.active.retain(|a| a.peer != s.peer);
        self.ended.push_front(s);
        self.ended.truncate(ENDED_KEPT);
    }

    /// Forgets what was shown: sessions still active count from now.
    pub fn clear(&mut self) {
        for s in self.active.drain(..) {
            let (p, b) = self.base.get(&s.peer).copied().unwrap_or_default();
            self.base.insert(s.peer, (p + s.packets, b + s.bytes));
        }
        self.ended.clear();
        self.totals = ReflectorTotals::default();
        self.scroll = 0;
        self.answers.clear();
        self.answers_pending.clear();
    }

    /// Moves the client table by `rows` (negative: up), within its rows.
    pub fn scroll_by(&mut self, rows: isize) {
        let last = (self.active.len() + self.ended.len()).saturating_sub(1);
        self.scroll = self.scroll.saturating_add_signed(rows).min(last);
    }

    /// Records a live session's latest state.
    pub fn session_active(&mut self, s: SessionInfo) {
        let s = self.since_clear(s);
        match self.active.iter_mut().find(|a| a.peer == s.peer) {
            Some(a) => *a = s,
            None => {
                self.active.push(s);
                self.active.sort_by_key(|a| a.peer);
            }
        }
    }
}

/// The whole display state.
#[derive(Debug, Clone)]
pub struct App {
    /// Current role.
    pub role: Role,
    /// The measurement (or reflector) is running.
    pub running: bool,
    /// The help overlay is open.
    pub help: bool,
    /// Histogram zoom level, `0..=MAX_ZOOM`.
    pub zoom: u8,
    /// Colours.
    pub theme: Theme,
    /// Client side.
    pub client: ClientView,
    /// Server side.
    pub server: ServerView,
    /// The packet animation.
    pub anim: Animation,
    /// What a frozen display keeps showing.
    pub frozen: Option<Box<(ClientView, ServerView, Animation)>>,
    /// One line of news for the status bar (errors, warnings, hints).
    pub status: Option<String>,
    /// `--update`: packets (or time) per animation step.
    pub update_every: Every,
    /// `--fps`, shown in help.
    pub fps: u32,
    /// The profile in use, if any.
    pub profile: Option<String>,
    /// Its baseline, if it has one.
    pub baseline: Option<Baseline>,
    /// This host's calibrated floor, if `synapse calibrate` kept one.
    pub floor: Option<synapse_engine::floor::Calibration>,
    /// A profile name being typed after `s`.
    pub prompt: Option<Prompt>,
    /// A question waiting for y or n.
    pub confirm: Option<Confirm>,
    /// The configuration file in use, when there is one.
    pub config_file: Option<String>,
}

/// A name being typed. It starts with the profile's name, which the first
/// key typed replaces (as a selected field would).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The text so far.
    pub text: String,
    /// Nothing typed yet: the text is the suggestion.
    pub fresh: bool,
}

impl Prompt {
    /// A prompt suggesting `text`.
    pub fn suggesting(text: String) -> Self {
        Self { text, fresh: true }
    }

    /// One character typed.
    pub fn push(&mut self, c: char) {
        if std::mem::take(&mut self.fresh) {
            self.text.clear();
        }
        self.text.push(c);
    }

    /// Backspace: takes one character (the suggestion stays editable).
    pub fn pop(&mut self) {
        self.fresh = false;
        self.text.pop();
    }
}

/// What a y/n question is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirm {
    /// `b` with a baseline already stored: replace it?
    ReplaceBaseline {
        /// The profile.
        profile: String,
        /// When the stored baseline was taken.
        date: String,
    },
}

impl Confirm {
    /// The question, as the footer asks it.
    pub fn question(&self) -> String {
        match self {
            Confirm::ReplaceBaseline { profile, date } => format!(
                "replace the baseline of '{profile}' (taken {date}) with these figures? y / n"
            ),
        }
    }
}

/// The widest zoom level.
pub const MAX_ZOOM: u8 = 4;

impl App {
    /// A fresh display for the given role.
    pub fn new(
        role: Role,
        info: ClientInfo,
        server: ServerView,
        theme: Theme,
        update_every: Every,
        fps: u32,
    ) -> Self {
        Self {
            role,
            running: false,
            help: false,
            zoom: 0,
            theme,
            client: ClientView {
                live: LiveStats::new(),
                info,
                run_done: 0,
                run_elapsed: Duration::ZERO,
                earlier: (0, Duration::ZERO),
                ring_overflow: 0,
                versus: None,
                stamping: None,
                silence: None,
                load: None,
                responders: Default::default(),
            },
            server,
            anim: Animation::default(),
            frozen: None,
            status: None,
            update_every,
            fps,
            profile: None,
            baseline: None,
            floor: None,
            prompt: None,
            confirm: None,
            config_file: None,
        }
    }

    /// The client view to draw: the frozen copy while frozen.
    pub fn shown_client(&self) -> &ClientView {
        self.frozen.as_ref().map_or(&self.client, |f| &f.0)
    }

    /// The server view to draw.
    pub fn shown_server(&self) -> &ServerView {
        self.frozen.as_ref().map_or(&self.server, |f| &f.1)
    }

    /// The animation to draw.
    pub fn shown_anim(&self) -> &Animation {
        self.frozen.as_ref().map_or(&self.anim, |f| &f.2)
    }

    /// Freezes or thaws the display.
    pub fn toggle_freeze(&mut self) {
        self.frozen = match self.frozen.take() {
            Some(_) => None,
            None => Some(Box::new((
                self.client.clone(),
                self.server.clone(),
                self.anim,
            ))),
        };
    }

    /// Changes the histogram zoom by one level, within bounds.
    pub fn zoom_by(&mut self, inward: bool) {
        self.zoom = if inward {
            (self.zoom + 1).min(MAX_ZOOM)
        } else {
            self.zoom.saturating_sub(1)
        };
    }

    /// Forgets the client's live statistics and the server's totals, and
    /// the packet the path showed.
    pub fn clear(&mut self) {
        self.client.live = LiveStats::new();
        self.client.responders.clear();
        self.client.versus = None;
        self.client.run_done = 0;
        self.client.run_elapsed = Duration::ZERO;
        self.client.earlier = (0, Duration::ZERO);
        self.server.clear();
        self.anim = Animation::default();
        self.frozen = None;
    }
}
