//! Waiting for a reply on the connection: the receive is the client's one
//! armed wait (`client/armed_wait.rs`), as for a UDP datagram. A reply
//! that comes in pieces is read on until whole, within the same deadline.

use super::conn::break_of;
use super::pingpong::{TcpPinger, Wait};
use crate::EngineError;
use crate::StopFlag;
use crate::client::armed_wait::{self, Receive, Waiting, nothing};
use crate::mono::Mono;
use crate::sys::clock::realtime_ns;
use crate::sys::errno::is_again as again;
use std::io;
use std::os::fd::RawFd;
use synapse_stats::tcp::Break;

impl TcpPinger<'_> {
    /// Waits for the reply to `seq`, sent at `t1`, classifying whatever
    /// whole replies arrive meanwhile, until it is in, its deadline passes,
    /// the connection is lost or `stop` is raised.
    pub(super) fn wait_for(
        &mut self,
        seq: u64,
        t1: Mono,
        warmup: bool,
        stop: &StopFlag,
    ) -> Result<(Wait, Mono), EngineError> {
        let deadline = t1 + self.cfg.timeout;
        let mut fresh = true;
        loop {
            let received = self.receive(deadline, fresh, stop);
            fresh = false;
            let now = Mono::now();
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
                    Some(errno) if crate::sys::errno::is_connection_lost(errno) => {
                        return Ok((self.broke(break_of(errno), seq, t1, warmup), now));
                    }
                    _ => return Err(EngineError::io("receive failed")(e)),
                },
            }
        }
    }

    /// Reads more of the reply, by the one armed wait (`armed_wait.rs`):
    /// the bytes read (0: the peer closed its side), or `EAGAIN` when
    /// nothing came by `deadline` or `stop` was raised. `fresh`: the
    /// request was just sent, the whole wait ahead.
    #[inline]
    fn receive(&mut self, deadline: Mono, fresh: bool, stop: &StopFlag) -> io::Result<usize> {
        let how = match &self.link.conn {
            Some(c) => Waiting {
                fd: c.fd,
                busy_poll: self.link.opener().busy_poll,
                armed: c.armed,
            },
            None => return nothing(),
        };
        armed_wait::receive(self, how, deadline, fresh, stop)
    }
}

impl Receive for TcpPinger<'_> {
    type Got = usize;

    /// One receive into what is left of the reply; with its RX stamp when
    /// the transaction is a sample. `now`: never wait.
    #[inline]
    fn recv_one(&mut self, _fd: RawFd, now: bool) -> io::Result<usize> {
        let Some(conn) = self.link.conn.as_mut() else {
            return nothing();
        };
        let (n, rx) = conn.recv(self.frame.rest(), self.sampled, now)?;
        if n > 0 {
            self.frame.took(n, rx);
        }
        Ok(n)
    }

    /// TX stamps woke the wait: kept for the request they are of; a
    /// failure of the socket comes from the read.
    fn on_error_queue(&mut self, fd: RawFd) -> Option<io::Result<usize>> {
        if let Some(s) = self.link.conn.as_mut().and_then(|c| c.stamps.as_mut()) {
            s.absorb(fd);
        }
        match self.recv_one(fd, true) {
            Err(e) if again(&e) => None,
            other => Some(other),
        }
    }
}
