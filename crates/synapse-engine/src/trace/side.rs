//! A trace run inside a prober, on the socket whose measurement goes on:
//! the agent hands a [`Tracer`] (made on its own thread, so the prober's
//! allocates nothing) through a lock-free ring; the prober's loop sends its
//! probes between its own (TTL and "no TX stamp" in each probe's control
//! messages, so the socket's settings and its stamps' numbering stay its
//! measurement's), gives it the reports and echoes that are its own, and
//! hands it back when done. Everything else the error queue holds goes on
//! to the prober as before: a trace's time-exceeded are never the
//! reflector's failure, and a TX stamp is never taken for an ICMP report.

use super::tracer::{Probe, Tracer};
use crate::sys::addr::RawAddr;
use crate::sys::cmsg::ControlBuf;
use crate::sys::errno::is_pending_icmp;
use crate::sys::errqueue::{ErrQueue, TxPoint, read_error_queue_into};
use crate::sys::hop_limit::{ProbeSend, send_probe};
use crate::sys::icmp_error::IcmpReport;
use crate::sys::timestamping::Stamps;
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// Room for a whole quote and its extensions.
const QUOTE_ROOM: usize = 1024;

/// A trace asked of a prober: of the path to its peer `probe`.
#[derive(Debug)]
pub struct TraceJob {
    /// The peer (index into the prober's peers).
    pub probe: usize,
    /// The trace, planned (one flow: the prober's own port).
    pub tracer: Box<Tracer>,
}

/// A trace handed back.
#[derive(Debug)]
pub struct TraceDone {
    /// The peer.
    pub probe: usize,
    /// The trace, with its tallies.
    pub tracer: Box<Tracer>,
    /// Ended before it was complete (the prober stopped).
    pub interrupted: bool,
}

/// The agent's end: asks for traces, takes them back.
#[derive(Debug)]
pub struct TraceHandle {
    requests: rtrb::Producer<TraceJob>,
    results: rtrb::Consumer<TraceDone>,
}

impl TraceHandle {
    /// Asks for `job`; gives it back if one is already waiting.
    pub fn start(&mut self, job: TraceJob) -> Result<(), TraceJob> {
        self.requests
            .push(job)
            .map_err(|rtrb::PushError::Full(j)| j)
    }

    /// A trace that has ended, if one has.
    pub fn finished(&mut self) -> Option<TraceDone> {
        self.results.pop().ok()
    }
}

/// The prober's end.
#[derive(Debug)]
pub struct TraceSlot {
    requests: rtrb::Consumer<TraceJob>,
    results: rtrb::Producer<TraceDone>,
    active: Option<Active>,
    /// A probe whose send an earlier ICMP error failed (pending on the
    /// socket): sent again once the caller has read the queue.
    retry: Option<Probe>,
    control: ControlBuf,
    quote: Box<[u8; QUOTE_ROOM]>,
}

/// The trace under way.
#[derive(Debug)]
struct Active {
    job: TraceJob,
    /// The prober's clock when it started: the tracer counts from 0.
    started_ns: u64,
    to: RawAddr,
    ipv6: bool,
}

/// A trace ring between an agent and a prober: one trace at a time.
pub fn trace_channel() -> (TraceHandle, TraceSlot) {
    let (req_tx, req_rx) = rtrb::RingBuffer::new(1);
    let (res_tx, res_rx) = rtrb::RingBuffer::new(2);
    (
        TraceHandle {
            requests: req_tx,
            results: res_rx,
        },
        TraceSlot {
            requests: req_rx,
            results: res_tx,
            active: None,
            retry: None,
            control: ControlBuf::default(),
            quote: Box::new([0; QUOTE_ROOM]),
        },
    )
}

impl TraceSlot {
    /// Whether a trace is under way.
    #[inline]
    pub fn active(&self) -> bool {
        self.active.is_some()
    }

    /// One turn at the prober's time `now_ns` (wall `wall_ns`): a waiting
    /// trace is taken up (`addr_of` says where its peer is), a probe due is
    /// sent on `fd` (`unstamped`: the socket stamps its own datagrams), the
    /// answers' timeouts are settled, and a trace that is done is handed
    /// back. Returns whether a send failed on an ICMP error pending on the
    /// socket: the caller reads the queue (which clears it) and turns
    /// again, which sends that probe again.
    pub fn turn(
        &mut self,
        fd: RawFd,
        now_ns: u64,
        wall_ns: u64,
        unstamped: bool,
        addr_of: impl Fn(usize) -> Option<SocketAddr>,
    ) -> bool {
        if self.active.is_none() {
            let Ok(job) = self.requests.pop() else {
                return false;
            };
            let Some(to) = addr_of(job.probe) else {
                self.hand_back(job, true);
                return false;
            };
            let ipv6 = to.is_ipv6()
                && !matches!(to, SocketAddr::V6(v6) if v6.ip().to_ipv4_mapped().is_some());
            self.active = Some(Active {
                job,
                started_ns: now_ns,
                to: RawAddr::from_socket_addr(to),
                ipv6,
            });
        }
        let Some(a) = self.active.as_mut() else {
            return false;
        };
        let t = now_ns - a.started_ns;
        let tracer = &mut a.job.tracer;
        let again = self.retry.take();
        if let Some(p) = again.or_else(|| tracer.next_probe(t)) {
            let how = ProbeSend {
                ttl: p.ttl,
                ipv6: a.ipv6,
                unstamped,
            };
            match send_probe(fd, &p.bytes, Some(&a.to), how) {
                Ok(_) => tracer.sent(&p, t, wall_ns),
                Err(e) if again.is_none() && e.raw_os_error().is_some_and(is_pending_icmp) => {
                    self.retry = Some(p);
                    return true;
                }
                Err(_) => tracer.send_failed(&p),
            }
        }
        tracer.expire(t);
        if tracer.finished()
            && let Some(done) = self.active.take()
        {
            self.hand_back(done.job, false);
        }
        false
    }

    fn hand_back(&mut self, job: TraceJob, interrupted: bool) {
        let done = TraceDone {
            probe: job.probe,
            tracer: job.tracer,
            interrupted,
        };
        // The agent takes results as they come; a full ring drops this one.
        let _ = self.results.push(done);
    }

    /// When the trace next needs a turn (prober's clock).
    pub fn due_ns(&self) -> Option<u64> {
        let a = self.active.as_ref()?;
        Some(a.job.tracer.due_ns()? + a.started_ns)
    }

    /// A datagram from `from`: whether it was the trace's echo.
    #[inline]
    pub fn take_echo(&mut self, from: &RawAddr, datagram: &[u8], wall_ns: u64) -> bool {
        match self.active.as_mut() {
            Some(a) if a.to.same_as(from) => a.job.tracer.on_echo(0, datagram, wall_ns),
            _ => false,
        }
    }

    /// A report read by the prober (its stamp reader's batch): whether it
    /// was the trace's.
    pub fn take_report(&mut self, report: &IcmpReport, wall_ns: u64) -> bool {
        match self.active.as_mut() {
            Some(a) => a
                .job
                .tracer
                .on_report(0, report, report.quoted.bytes(), wall_ns),
            None => false,
        }
    }

    /// Reads the error queue one message at a time, each whole: TX stamps
    /// to `stamp`, the trace's reports to the trace; returns the last
    /// report that was not the trace's (the prober's to judge).
    pub fn absorb(
        &mut self,
        fd: RawFd,
        stamp_type: i32,
        wall_ns: u64,
        mut stamp: impl FnMut(u32, TxPoint, Stamps),
    ) -> Option<IcmpReport> {
        let mut other = None;
        let quote = &mut self.quote[..];
        while let Ok(m) = read_error_queue_into(fd, &mut self.control, stamp_type, quote) {
            match m {
                ErrQueue::Stamp { id, point, stamps } => stamp(id, point, stamps),
                ErrQueue::Error(r) => {
                    let read = r.quoted.read_len().min(QUOTE_ROOM);
                    let ours = self
                        .active
                        .as_mut()
                        .is_some_and(|a| a.job.tracer.on_report(0, &r, &quote[..read], wall_ns));
                    if !ours {
                        other = Some(r);
                    }
                }
                ErrQueue::Other => {}
                ErrQueue::Empty => break,
            }
        }
        other
    }
}

impl Drop for TraceSlot {
    /// A prober that stops mid-trace hands what it has back.
    fn drop(&mut self) {
        if let Some(a) = self.active.take() {
            self.hand_back(a.job, true);
        }
    }
}
