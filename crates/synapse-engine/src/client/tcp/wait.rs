//! Waiting for a reply on the connection, as the UDP client waits for a
//! datagram: busy-polling spins on the non-blocking receive; blocking, the
//! receive itself is the wait (`SO_RCVTIMEO` armed once), and only what is
//! left of a wait after it is waited in `ppoll`, to the nanosecond. A
//! reply that comes in pieces is read on until whole, within the same
//! deadline.

use super::conn::break_of;
use super::pingpong::{TcpPinger, Wait};
use crate::EngineError;
use crate::StopFlag;
use crate::client::pingpong::STOP_CHECK;
use crate::sys::tcp as sys_tcp;
use crate::sys::timestamping::realtime_ns;
use crate::sys::{self, Readiness};
use std::io;
use std::time::Instant;
use synapse_stats::tcp::Break;

/// `EAGAIN`: nothing came before the deadline, or stop was raised.
fn nothing<T>() -> io::Result<T> {
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

fn again(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR))
}

impl TcpPinger<'_> {
    /// Waits for the reply to `seq`, sent at `t1`, classifying whatever
    /// whole replies arrive meanwhile, until it is in, its deadline passes,
    /// the connection is lost or `stop` is raised.
    pub(super) fn wait_for(
        &mut self,
        seq: u64,
        t1: Instant,
        warmup: bool,
        stop: &StopFlag,
    ) -> Result<(Wait, Instant), EngineError> {
        let deadline = t1 + self.cfg.timeout;
        let mut fresh = true;
        loop {
            let received = self.receive(deadline, fresh, stop);
            fresh = false;
            let now = Instant::now();
            match received {
                Ok(0) => return Ok((self.broke(Break::Closed, seq, t1, warmup), now)),
                Ok(_) if !self.frame.complete() => {}
                Ok(_) => {
                    let t4_user = if self.sampled { realtime_ns() } else { 0 };
                    if now > deadline {
                        let wait = self.time_out(seq, t1, warmup);
                        self.on_frame(seq, t1, now, t4_user, warmup);
                        return Ok((wait, now));
                    }
                    if self.on_frame(seq, t1, now, t4_user, warmup) {
                        return Ok((Wait::Answered, now));
                    }
                }
                Err(e) if again(&e) => {
                    if now >= deadline {
                        return Ok((self.time_out(seq, t1, warmup), now));
                    }
                    if stop.is_raised() {
                        return Ok((Wait::Stopped, now));
                    }
                }
                Err(e) => match e.raw_os_error() {
                    Some(errno) if sys_tcp::is_connection_lost(errno) => {
                        return Ok((self.broke(break_of(errno), seq, t1, warmup), now));
                    }
                    _ => return Err(EngineError::io("receive failed")(e)),
                },
            }
        }
    }

    /// Reads more of the reply: the bytes read (0: the peer closed its
    /// side), or `EAGAIN` when nothing came by `deadline` or `stop` was
    /// raised. `fresh`: the request was just sent, the whole wait ahead.
    #[inline]
    fn receive(&mut self, deadline: Instant, fresh: bool, stop: &StopFlag) -> io::Result<usize> {
        let (busy_poll, armed, fd) = match &self.link.conn {
            Some(c) => (self.link.opener().busy_poll, c.armed, c.fd),
            None => return nothing(),
        };
        if busy_poll {
            return self.spin(deadline, stop);
        }
        if fresh && armed.is_some() && !stop.is_raised() {
            match self.read(false) {
                Err(e) if again(&e) => {}
                other => return other,
            }
        }
        loop {
            let now = Instant::now();
            if now >= deadline || stop.is_raised() {
                return nothing();
            }
            let left = deadline - now;
            if armed.is_some_and(|a| left >= a) {
                match self.read(false) {
                    Err(e) if again(&e) => continue,
                    other => return other,
                }
            }
            match sys::wait_readable(fd, left.min(STOP_CHECK))? {
                Readiness::TimedOut => {}
                Readiness::Readable => return self.read(true),
                Readiness::ErrorQueue => {
                    // TX stamps woke the wait: kept for the request they
                    // are of; a failure of the socket comes from the read.
                    if let Some(s) = self.link.conn.as_mut().and_then(|c| c.stamps.as_mut()) {
                        s.absorb(fd);
                    }
                    match self.read(true) {
                        Err(e) if again(&e) => {}
                        other => return other,
                    }
                }
            }
        }
    }

    /// Busy-polling: spins on the non-blocking receive.
    #[inline]
    fn spin(&mut self, deadline: Instant, stop: &StopFlag) -> io::Result<usize> {
        loop {
            match self.read(false) {
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                    if stop.is_raised() || Instant::now() >= deadline {
                        return Err(e);
                    }
                    std::hint::spin_loop();
                }
                other => return other,
            }
        }
    }

    /// One receive into what is left of the reply; with its RX stamp when
    /// the transaction is a sample. `now`: never wait.
    #[inline]
    fn read(&mut self, now: bool) -> io::Result<usize> {
        let Some(conn) = self.link.conn.as_mut() else {
            return nothing();
        };
        let (n, rx) = conn.recv(self.frame.rest(), self.sampled, now)?;
        if n > 0 {
            self.frame.took(n, rx);
        }
        Ok(n)
    }
}
