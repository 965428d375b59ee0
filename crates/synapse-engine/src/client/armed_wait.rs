//! The one wait for a reply, shared by UDP and TCP ping-pong. Busy-polling
//! spins on the non-blocking receive. Blocking, the receive itself is the
//! wait: `SO_RCVTIMEO` is armed once (see `recv_timeout.rs`), so a reply
//! that comes in time costs one system call; only what is left of a wait
//! too short for the armed timeout is waited in `ppoll`, to the
//! nanosecond. No wait sleeps past [`STOP_CHECK`] without looking at the
//! stop flag.
//!
//! Generic over the transport ([`Receive`]), so each loop gets its own
//! copy, inlined: no indirection per packet.

use super::stop::STOP_CHECK;
use crate::StopFlag;
use crate::mono::Mono;
use crate::sys;
use crate::sys::errno::is_again;
use crate::sys::poll::Readiness;
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// One transport's receive, as the wait drives it.
pub(super) trait Receive {
    /// What one receive gives.
    type Got;

    /// One receive on `fd`; `now`: never wait, even on a blocking socket
    /// (`ppoll` said something is there, and a bad checksum could still
    /// empty the queue).
    fn recv_one(&mut self, fd: RawFd, now: bool) -> io::Result<Self::Got>;

    /// Only the error queue woke the wait (TX stamps, an ICMP report):
    /// what the wait returns, or `None` to wait on.
    fn on_error_queue(&mut self, fd: RawFd) -> Option<io::Result<Self::Got>>;
}

/// How the socket is waited on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Waiting {
    /// The socket.
    pub fd: RawFd,
    /// Spin on the non-blocking receive instead of sleeping.
    pub busy_poll: bool,
    /// The `SO_RCVTIMEO` armed on it; `None`: waits are all `ppoll`.
    pub armed: Option<Duration>,
}

/// `EAGAIN`: nothing came before the deadline, or stop was raised.
pub(super) fn nothing<T>() -> io::Result<T> {
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

/// Receives once something arrives, the deadline passes or `stop` is
/// raised (then `EAGAIN`). `fresh`: the request was just sent, so the whole
/// timeout is ahead and the armed receive goes first.
#[inline]
pub(super) fn receive<R: Receive>(
    r: &mut R,
    how: Waiting,
    deadline: Mono,
    fresh: bool,
    stop: &StopFlag,
) -> io::Result<R::Got> {
    if how.busy_poll {
        return spin(r, how.fd, deadline, stop);
    }
    if fresh && how.armed.is_some() && !stop.is_raised() {
        match r.recv_one(how.fd, false) {
            Err(e) if is_again(&e) => {}
            other => return other,
        }
    }
    loop {
        let now = Mono::now();
        if now >= deadline || stop.is_raised() {
            return nothing();
        }
        let left = deadline - now;
        if how.armed.is_some_and(|a| left >= a) {
            match r.recv_one(how.fd, false) {
                Err(e) if is_again(&e) => continue,
                other => return other,
            }
        }
        match sys::poll::wait_readable(how.fd, left.min(STOP_CHECK))? {
            Readiness::TimedOut => {}
            Readiness::Readable => return r.recv_one(how.fd, true),
            Readiness::ErrorQueue => {
                if let Some(got) = r.on_error_queue(how.fd) {
                    return got;
                }
            }
        }
    }
}

/// Busy-polling: spins on the non-blocking receive until something
/// arrives, the deadline passes or `stop` is raised.
#[inline]
fn spin<R: Receive>(r: &mut R, fd: RawFd, deadline: Mono, stop: &StopFlag) -> io::Result<R::Got> {
    loop {
        match r.recv_one(fd, false) {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                if stop.is_raised() || Mono::now() >= deadline {
                    return Err(e);
                }
                std::hint::spin_loop();
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted transport: the answers its receives give, in order.
    struct Script {
        answers: Vec<io::Result<u32>>,
        calls: Vec<bool>,
    }

    impl Receive for Script {
        type Got = u32;
        fn recv_one(&mut self, _fd: RawFd, now: bool) -> io::Result<u32> {
            self.calls.push(now);
            if self.answers.is_empty() {
                nothing()
            } else {
                self.answers.remove(0)
            }
        }
        fn on_error_queue(&mut self, _fd: RawFd) -> Option<io::Result<u32>> {
            None
        }
    }

    #[test]
    fn an_armed_wait_returns_what_the_first_receive_gets() {
        let mut s = Script {
            answers: vec![Ok(7)],
            calls: vec![],
        };
        let how = Waiting {
            fd: -1,
            busy_poll: false,
            armed: Some(Duration::from_millis(1)),
        };
        let deadline = Mono::now() + Duration::from_secs(5);
        let got = receive(&mut s, how, deadline, true, &StopFlag::new());
        assert_eq!(got.unwrap(), 7);
        assert_eq!(s.calls, [false], "one receive, allowed to block");
    }

    #[test]
    fn a_raised_stop_ends_the_wait_with_eagain() {
        let mut s = Script {
            answers: vec![],
            calls: vec![],
        };
        let stop = StopFlag::new();
        stop.raise();
        for busy_poll in [false, true] {
            let how = Waiting {
                fd: -1,
                busy_poll,
                armed: Some(Duration::from_millis(1)),
            };
            let deadline = Mono::now() + Duration::from_secs(60);
            let e = receive(&mut s, how, deadline, true, &stop).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EAGAIN));
        }
    }

    #[test]
    fn a_passed_deadline_ends_the_wait_with_eagain() {
        let mut s = Script {
            answers: vec![],
            calls: vec![],
        };
        let how = Waiting {
            fd: -1,
            busy_poll: false,
            armed: None,
        };
        let e = receive(&mut s, how, Mono::now(), false, &StopFlag::new()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EAGAIN));
        assert!(s.calls.is_empty(), "nothing received after the deadline");
    }
}
