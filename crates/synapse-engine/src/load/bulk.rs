//! The bulk streams themselves: a loop that writes as fast as TCP takes
//! it, or reads as fast as it comes, counting bytes, within a session's
//! rate cap, until told to stop. Both ends run these, each on a thread of
//! its own, never on a measurement thread.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Bytes a loop moves per call.
pub const CHUNK: usize = 64 * 1024;
/// How often a blocked loop looks at its stop flag.
pub const POLL: Duration = Duration::from_millis(200);

/// How a stream's loop ended.
#[derive(Debug)]
pub enum StreamEnd {
    /// Told to stop (the phase ended, or its time ran out).
    Stopped,
    /// The peer closed the connection (FIN).
    Closed,
    /// The peer reset it (RST).
    Reset,
    /// Anything else the kernel said.
    Failed(io::Error),
}

impl StreamEnd {
    fn of(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => StreamEnd::Reset,
            _ => StreamEnd::Failed(e),
        }
    }

    /// In a sentence, when it is not a plain stop.
    pub fn problem(&self) -> Option<String> {
        match self {
            StreamEnd::Stopped => None,
            StreamEnd::Closed => Some("the peer closed a load connection".into()),
            StreamEnd::Reset => Some("a load connection was reset".into()),
            StreamEnd::Failed(e) => Some(format!("a load connection failed: {e}")),
        }
    }
}

/// A session's rate cap, shared by its streams: a token bucket of bytes
/// per second, deep enough for a tenth of a second.
#[derive(Debug)]
pub struct RateCap {
    bytes_per_s: f64,
    depth: f64,
    state: Mutex<(f64, Instant)>,
}

impl RateCap {
    /// At most `bits_per_s` (0: no cap).
    pub fn new(bits_per_s: u64) -> Self {
        let bytes_per_s = bits_per_s as f64 / 8.0;
        let depth = (bytes_per_s / 10.0).max(4.0 * CHUNK as f64);
        Self {
            bytes_per_s,
            depth,
            state: Mutex::new((depth, Instant::now())),
        }
    }

    /// Accounts for `n` bytes, and how long to wait before moving more
    /// (zero when within the cap).
    fn take(&self, n: usize) -> Duration {
        if self.bytes_per_s <= 0.0 {
            return Duration::ZERO;
        }
        let Ok(mut s) = self.state.lock() else {
            return Duration::ZERO;
        };
        let now = Instant::now();
        let (tokens, last) = *s;
        let refilled = (tokens + now.duration_since(last).as_secs_f64() * self.bytes_per_s)
            .min(self.depth)
            - n as f64;
        *s = (refilled, now);
        if refilled >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-refilled / self.bytes_per_s)
        }
    }

    /// Waits out what `n` bytes cost, looking at `stop` at least every
    /// [`POLL`].
    fn pay(&self, n: usize, stop: Stop) {
        let mut wait = self.take(n);
        while !wait.is_zero() && !stop() {
            let step = wait.min(POLL);
            std::thread::sleep(step);
            wait -= step;
        }
    }
}

/// Whether a loop is to stop now.
pub type Stop<'a> = &'a dyn Fn() -> bool;

/// Whether an error is a timeout of a blocking call (`SO_RCVTIMEO`,
/// `SO_SNDTIMEO`): look at the stop flag and go on.
fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Sets the blocking calls' timeouts so a loop sees its stop flag.
pub fn arm(stream: &TcpStream) -> io::Result<()> {
    stream.set_read_timeout(Some(POLL))?;
    stream.set_write_timeout(Some(POLL))
}

/// Writes until `stop` (or `until`), counting bytes into `sent`.
pub fn send(
    mut stream: &TcpStream,
    cap: &RateCap,
    stop: Stop,
    until: Option<Instant>,
    sent: &AtomicU64,
) -> StreamEnd {
    let buf = vec![0x5au8; CHUNK];
    loop {
        if stop() || until.is_some_and(|u| Instant::now() >= u) {
            return StreamEnd::Stopped;
        }
        match stream.write(&buf) {
            Ok(0) => return StreamEnd::Closed,
            Ok(n) => {
                sent.fetch_add(n as u64, Ordering::Relaxed);
                cap.pay(n, stop);
            }
            Err(e) if timed_out(&e) => {}
            Err(e) => return StreamEnd::of(e),
        }
    }
}

/// Reads until `stop` (or `until`), counting bytes into `received`.
pub fn receive(
    mut stream: &TcpStream,
    cap: &RateCap,
    stop: Stop,
    until: Option<Instant>,
    received: &AtomicU64,
) -> StreamEnd {
    let mut buf = vec![0u8; CHUNK];
    loop {
        if stop() || until.is_some_and(|u| Instant::now() >= u) {
            return StreamEnd::Stopped;
        }
        match stream.read(&mut buf) {
            Ok(0) => return StreamEnd::Closed,
            Ok(n) => {
                received.fetch_add(n as u64, Ordering::Relaxed);
                cap.pay(n, stop);
            }
            Err(e) if timed_out(&e) => {}
            Err(e) => return StreamEnd::of(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn a_cap_holds_the_rate_and_none_waits_for_nothing() {
        let none = RateCap::new(0);
        assert_eq!(none.take(1 << 30), Duration::ZERO);
        let cap = RateCap::new(8_000_000); // 1 MB/s, 100 kB deep at most
        let mut waited = Duration::ZERO;
        for _ in 0..10 {
            waited += cap.take(CHUNK);
        }
        // 655 kB against 262 kB in the bucket: the rest costs ~0.39 s.
        let secs = waited.as_secs_f64();
        assert!(secs > 0.5 && secs < 3.0, "{secs}");
    }

    #[test]
    fn a_stream_moves_bytes_until_stopped_and_sees_a_close() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        arm(&c).unwrap();
        arm(&s).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (sent, got) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let cap = Arc::new(RateCap::new(0));
        let sender = {
            let (stop, sent, cap) = (stop.clone(), sent.clone(), cap.clone());
            std::thread::spawn(move || {
                send(&c, &cap, &|| stop.load(Ordering::Relaxed), None, &sent)
            })
        };
        let reader = {
            let (got, cap) = (got.clone(), cap.clone());
            std::thread::spawn(move || receive(&s, &cap, &|| false, None, &got))
        };
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, Ordering::Relaxed);
        assert!(matches!(sender.join().unwrap(), StreamEnd::Stopped));
        // The sender's socket is dropped with its thread: a FIN.
        assert!(matches!(reader.join().unwrap(), StreamEnd::Closed));
        let (sent, got) = (sent.load(Ordering::Relaxed), got.load(Ordering::Relaxed));
        assert!(sent > 0 && got == sent, "{got} of {sent}");
    }
}
