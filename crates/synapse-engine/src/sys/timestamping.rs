//! Linux `SO_TIMESTAMPING`: switching it on, RX stamps from `recvmsg`
//! control data, TX stamps from the socket's error queue, and the
//! `CLOCK_REALTIME` reads that user-space stamps must share a clock with.
//!
//! See the kernel's `Documentation/networking/timestamping.rst`.

use super::{RawAddr, Received, received};
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::RawFd;

/// `SO_TIMESTAMPING_NEW` (64-bit time on every ABI; asm-generic/socket.h).
const SO_TIMESTAMPING_NEW: i32 = 65;
/// The original option, for kernels before 5.1.
const SO_TIMESTAMPING_OLD: i32 = 37;
/// `ee_info` of a stamp taken when the driver handed the packet on.
const SCM_TSTAMP_SND: u32 = 0;
/// `ee_info` of a stamp taken on entering the packet scheduler.
const SCM_TSTAMP_SCHED: u32 = 1;
/// `ee_info` of a stamp taken when the peer's ACK covered the bytes (TCP).
const SCM_TSTAMP_ACK: u32 = 2;

/// `SOF_TIMESTAMPING_*` flag sets.
pub mod flags {
    /// TX stamps: on entering the qdisc, and in the driver (software).
    pub const TX_SOFTWARE: u32 =
        libc::SOF_TIMESTAMPING_TX_SCHED | libc::SOF_TIMESTAMPING_TX_SOFTWARE;
    /// The TX stamp the NIC takes.
    pub const TX_HARDWARE: u32 = libc::SOF_TIMESTAMPING_TX_HARDWARE;
    /// RX stamps in software.
    pub const RX_SOFTWARE: u32 = libc::SOF_TIMESTAMPING_RX_SOFTWARE;
    /// Report software stamps.
    pub const REPORT_SOFTWARE: u32 = libc::SOF_TIMESTAMPING_SOFTWARE;
    /// NIC stamps in both directions, reported raw (PHC clock).
    pub const HARDWARE: u32 = libc::SOF_TIMESTAMPING_TX_HARDWARE
        | libc::SOF_TIMESTAMPING_RX_HARDWARE
        | libc::SOF_TIMESTAMPING_RAW_HARDWARE;
    /// Number TX stamps per packet, and return no payload with them.
    pub const OPTIONS: u32 = libc::SOF_TIMESTAMPING_OPT_ID
        | libc::SOF_TIMESTAMPING_OPT_TSONLY
        | libc::SOF_TIMESTAMPING_OPT_TX_SWHW;
}

/// Nanoseconds since the Unix epoch, `CLOCK_REALTIME`: the clock software
/// stamps use, so user-space points can be subtracted from them. (vDSO: no
/// syscall.)
pub fn realtime_ns() -> u64 {
    // SAFETY: timespec is plain old data; all-zero is valid.
    let mut ts: libc::timespec = unsafe { zeroed() };
    // SAFETY: ts is a live timespec; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &raw mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Switches timestamping on with `flags`. Returns the control-message type
/// the stamps will arrive as (it depends on which option the kernel took).
pub fn enable(fd: RawFd, flags: u32) -> io::Result<i32> {
    let value = flags as libc::c_int;
    match super::set_int_option(fd, libc::SOL_SOCKET, SO_TIMESTAMPING_NEW, value) {
        Ok(()) => Ok(SO_TIMESTAMPING_NEW),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOPROTOOPT | libc::EINVAL)) => {
            super::set_int_option(fd, libc::SOL_SOCKET, SO_TIMESTAMPING_OLD, value)?;
            Ok(SO_TIMESTAMPING_OLD)
        }
        Err(e) => Err(e),
    }
}

/// Waits (up to `max`) until the kernel stamps received packets. RX
/// stamping is switched on system-wide by deferred work after the first
/// socket asks for it, so packets in the meantime arrive unstamped. Probes
/// over loopback with a throwaway pair of sockets; returns whether a stamp
/// was seen.
pub fn wait_for_rx_stamping(max: std::time::Duration) -> bool {
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    let pair = || -> io::Result<(UdpSocket, UdpSocket, i32)> {
        let rx = UdpSocket::bind("127.0.0.1:0")?;
        let tx = UdpSocket::bind("127.0.0.1:0")?;
        tx.connect(rx.local_addr()?)?;
        rx.set_read_timeout(Some(std::time::Duration::from_millis(50)))?;
        let kind = enable(rx.as_raw_fd(), flags::RX_SOFTWARE | flags::REPORT_SOFTWARE)?;
        Ok((tx, rx, kind))
    };
    let Ok((tx, rx, kind)) = pair() else {
        return false;
    };
    let deadline = std::time::Instant::now() + max;
    let mut control = ControlBuf::default();
    let mut buf = [0u8; 8];
    while std::time::Instant::now() < deadline {
        if tx.send(b"probe").is_err() {
            return false;
        }
        if let Ok(got) = recv_stamped(rx.as_raw_fd(), &mut buf, None, &mut control, kind)
            && got.stamps.software.is_some()
        {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    false
}

/// Asks for the TTL (hop limit) of received datagrams, for STAMP.
pub fn enable_ttl(fd: RawFd, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        super::set_int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT, 1)?;
    }
    // Dual-stack sockets see IPv4 too.
    super::set_int_option(fd, libc::IPPROTO_IP, libc::IP_RECVTTL, 1)
        .or_else(|e| if ipv6 { Ok(()) } else { Err(e) })
}

/// Stamps of one event: software (`CLOCK_REALTIME`) and hardware (the
/// NIC's clock). Never mixed: each is reported as what it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamps {
    /// Software stamp, ns since the epoch.
    pub software: Option<u64>,
    /// Raw hardware stamp, ns in the NIC's clock.
    pub hardware: Option<u64>,
}

/// Room for control messages, aligned for `cmsghdr`.
#[derive(Debug)]
#[repr(C, align(8))]
pub struct ControlBuf([u8; 512]);

impl Default for ControlBuf {
    fn default() -> Self {
        Self([0; 512])
    }
}

/// A datagram with what the kernel said about it.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecvMeta {
    /// Length and truncation.
    pub received: Received,
    /// RX stamps.
    pub stamps: Stamps,
    /// TTL or hop limit, when asked for.
    pub ttl: Option<u8>,
    /// The local address it came to, when asked for (`IP_PKTINFO`).
    pub arrival: Option<super::pktinfo::Arrival>,
    /// Its TOS (Traffic Class) byte, when asked for (`IP_RECVTOS`).
    pub tos: Option<u8>,
}

fn timespec_ns(data: &[u8], i: usize) -> Option<u64> {
    // struct __kernel_timespec { s64 tv_sec; s64 tv_nsec; } (16 bytes, also
    // the layout of the old struct timespec on 64-bit targets).
    let at = i * 16;
    let sec = i64::from_ne_bytes(data.get(at..at + 8)?.try_into().ok()?);
    let nsec = i64::from_ne_bytes(data.get(at + 8..at + 16)?.try_into().ok()?);
    (sec != 0 || nsec != 0).then(|| sec as u64 * 1_000_000_000 + nsec as u64)
}

/// What the control messages of one `recvmsg` carried.
#[derive(Debug, Default)]
struct Parsed {
    stamps: Stamps,
    ttl: Option<u8>,
    error: Option<libc::sock_extended_err>,
    arrival: Option<super::pktinfo::Arrival>,
    tos: Option<u8>,
}

fn parse_control(msg: &libc::msghdr, stamp_type: i32) -> Parsed {
    let mut out = Parsed::default();
    // SAFETY: msg came back from recvmsg with msg_control/msg_controllen
    // describing the caller's live buffer; CMSG_* walk only within it.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !cmsg.is_null() {
        // SAFETY: cmsg is non-null and points into the control buffer.
        let hdr = unsafe { &*cmsg };
        let header_len = (hdr.cmsg_len as usize).saturating_sub(size_of::<libc::cmsghdr>());
        // SAFETY: CMSG_DATA points just past the header, inside the buffer,
        // and the kernel wrote cmsg_len bytes for this message.
        let data = unsafe { std::slice::from_raw_parts(libc::CMSG_DATA(cmsg), header_len) };
        match (hdr.cmsg_level, hdr.cmsg_type) {
            (libc::SOL_SOCKET, t) if t == stamp_type => {
                out.stamps = Stamps {
                    software: timespec_ns(data, 0),
                    hardware: timespec_ns(data, 2),
                };
            }
            (libc::IPPROTO_IP, libc::IP_TTL) | (libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT) => {
                out.ttl = data
                    .get(..4)
                    .and_then(|b| b.try_into().ok())
                    .map(|b| i32::from_ne_bytes(b) as u8);
            }
            (libc::IPPROTO_IP, libc::IP_PKTINFO) | (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO) => {
                out.arrival = super::pktinfo::parse(hdr.cmsg_level, hdr.cmsg_type, data);
            }
            (libc::IPPROTO_IP, libc::IP_TOS) | (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) => {
                out.tos = super::marks::parse_tos(hdr.cmsg_level, hdr.cmsg_type, data);
            }
            (libc::IPPROTO_IP, libc::IP_RECVERR) | (libc::IPPROTO_IPV6, libc::IPV6_RECVERR)
                if data.len() >= size_of::<libc::sock_extended_err>() =>
            {
                // SAFETY: the kernel put a sock_extended_err here (length
                // checked); read_unaligned copes with any alignment.
                out.error = Some(unsafe { std::ptr::read_unaligned(data.as_ptr().cast()) });
            }
            _ => {}
        }
        // SAFETY: as for CMSG_FIRSTHDR; NXTHDR returns null past the end.
        cmsg = unsafe { libc::CMSG_NXTHDR(msg, cmsg) };
    }
    out
}

/// Where a datagram came to, from the control messages of `msg` (filled by
/// `recvmsg` on a socket with [`super::pktinfo::enable`]).
pub(crate) fn arrival_of(msg: &libc::msghdr) -> Option<super::pktinfo::Arrival> {
    parse_control(msg, -1).arrival
}

/// One `recvmsg` into `buf`, with control data into `control` and the
/// sender into `from` when given.
pub(super) fn recvmsg(
    fd: RawFd,
    buf: &mut [u8],
    mut from: Option<&mut RawAddr>,
    control: &mut ControlBuf,
    flags: i32,
) -> io::Result<(usize, libc::msghdr)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain old data; all-zero is valid.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = control.0.len() as _;
    if let Some(f) = from.as_deref_mut() {
        msg.msg_name = f.storage_ptr().cast();
        msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    }
    // SAFETY: every pointer in msg refers to a live buffer of the stated
    // length (buf, control, and the address storage).
    let n = unsafe { libc::recvmsg(fd, &raw mut msg, flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if let Some(f) = from {
        f.set_len(msg.msg_namelen);
    }
    Ok((n as usize, msg))
}

/// Sends one datagram on a connected socket asking, for it alone, for the
/// TX stamps in `tx_flags` (`SOF_TIMESTAMPING_TX_*`: Linux takes them per
/// `sendmsg` as an `SO_TIMESTAMPING` control message). One `sendmsg`.
pub fn send_stamped(fd: RawFd, buf: &[u8], tx_flags: u32) -> io::Result<usize> {
    send_stamped_flags(fd, buf, tx_flags, 0)
}

/// [`send_stamped`] with `sendmsg` flags (`MSG_NOSIGNAL`, `MSG_DONTWAIT`).
pub(super) fn send_stamped_flags(
    fd: RawFd,
    buf: &[u8],
    tx_flags: u32,
    flags: i32,
) -> io::Result<usize> {
    // Room for one cmsg holding a u32, aligned as the kernel wants.
    #[repr(C, align(8))]
    struct Control([u8; 32]);
    let mut control = Control([0; 32]);
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr().cast_mut().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain old data; all-zero is valid.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a size.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<u32>() as u32) } as _;
    // SAFETY: msg's control buffer is 32 bytes, more than CMSG_SPACE(4), so
    // the first header and its data lie inside it.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SO_TIMESTAMPING;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<u32>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u32>(), tx_flags);
    }
    // SAFETY: every pointer in msg refers to a live buffer of the stated
    // length (the payload and the control data); the kernel only reads.
    let n = unsafe { libc::sendmsg(fd, &raw const msg, flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Receives one datagram with its RX stamps (and TTL, when enabled).
/// `stamp_type` is what [`enable`] returned. One `recvmsg` syscall.
pub fn recv_stamped(
    fd: RawFd,
    buf: &mut [u8],
    from: Option<&mut RawAddr>,
    control: &mut ControlBuf,
    stamp_type: i32,
) -> io::Result<RecvMeta> {
    recv_stamped_flags(fd, buf, from, control, stamp_type, libc::MSG_TRUNC)
}

/// [`recv_stamped`] that never waits, even on a blocking socket.
pub fn recv_stamped_now(
    fd: RawFd,
    buf: &mut [u8],
    control: &mut ControlBuf,
    stamp_type: i32,
) -> io::Result<RecvMeta> {
    let flags = libc::MSG_TRUNC | libc::MSG_DONTWAIT;
    recv_stamped_flags(fd, buf, None, control, stamp_type, flags)
}

pub(super) fn recv_stamped_flags(
    fd: RawFd,
    buf: &mut [u8],
    from: Option<&mut RawAddr>,
    control: &mut ControlBuf,
    stamp_type: i32,
    flags: i32,
) -> io::Result<RecvMeta> {
    let capacity = buf.len();
    let (n, msg) = recvmsg(fd, buf, from, control, flags)?;
    let parsed = parse_control(&msg, stamp_type);
    Ok(RecvMeta {
        received: received(n, capacity),
        stamps: parsed.stamps,
        ttl: parsed.ttl,
        arrival: parsed.arrival,
        tos: parsed.tos,
    })
}

/// Which moment a TX stamp records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxPoint {
    /// Entering the packet scheduler (qdisc).
    Sched,
    /// Handed to the device (software stamp) or sent by it (hardware).
    Sent,
    /// TCP: the peer's cumulative ACK moved past the last byte
    /// (`SOF_TIMESTAMPING_TX_ACK`).
    Acked,
}

/// What one read of the error queue found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrQueue {
    /// A TX stamp for packet `id` (counted from 0 since enabling).
    Stamp {
        /// Which packet (`SOF_TIMESTAMPING_OPT_ID` counter).
        id: u32,
        /// Which moment.
        point: TxPoint,
        /// The stamps.
        stamps: Stamps,
    },
    /// An ICMP error (port unreachable, no route, too big…): its errno.
    Error(i32),
    /// Another kind of report; nothing to time.
    Other,
    /// Nothing queued.
    Empty,
}

/// Reads one message from the error queue. Never blocks.
pub fn read_error_queue(
    fd: RawFd,
    control: &mut ControlBuf,
    stamp_type: i32,
) -> io::Result<ErrQueue> {
    let mut scratch = [0u8; 64];
    let msg = match recvmsg(
        fd,
        &mut scratch,
        None,
        control,
        libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
    ) {
        Ok((_, msg)) => msg,
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => return Ok(ErrQueue::Empty),
        Err(e) => return Err(e),
    };
    Ok(classify(&parse_control(&msg, stamp_type)))
}

/// What one error-queue message is.
fn classify(parsed: &Parsed) -> ErrQueue {
    match parsed.error {
        Some(ee)
            if ee.ee_errno == libc::ENOMSG as u32
                && ee.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING =>
        {
            let point = match ee.ee_info {
                SCM_TSTAMP_SCHED => TxPoint::Sched,
                SCM_TSTAMP_SND => TxPoint::Sent,
                SCM_TSTAMP_ACK => TxPoint::Acked,
                _ => return ErrQueue::Other,
            };
            ErrQueue::Stamp {
                id: ee.ee_data,
                point,
                stamps: parsed.stamps,
            }
        }
        Some(ee) if ee.ee_errno != 0 => ErrQueue::Error(ee.ee_errno as i32),
        _ => ErrQueue::Other,
    }
}

/// Error-queue messages one [`ErrQueueBatch::fill`] reads at most.
pub const ERRQUEUE_BATCH: usize = 16;

/// Reads the error queue up to [`ERRQUEUE_BATCH`] messages per
/// `recvmmsg`: a paced run's burst of sends leaves two stamps each, and
/// one syscall for all of them (and none to learn that the queue is
/// empty, when it returns fewer) costs a fraction of one each.
/// Allocation-free after `new`.
#[derive(Debug)]
pub struct ErrQueueBatch {
    controls: Box<[ControlBuf; ERRQUEUE_BATCH]>,
    read: [ErrQueue; ERRQUEUE_BATCH],
    filled: usize,
}

impl Default for ErrQueueBatch {
    fn default() -> Self {
        Self {
            controls: Box::new(std::array::from_fn(|_| ControlBuf::default())),
            read: [ErrQueue::Empty; ERRQUEUE_BATCH],
            filled: 0,
        }
    }
}

impl ErrQueueBatch {
    /// Reads what the queue holds, up to a batch, never blocking. Returns
    /// the messages read (none: the queue was empty, or unreadable).
    pub fn fill(&mut self, fd: RawFd, stamp_type: i32) -> &[ErrQueue] {
        // Payloads are not wanted (stamps come without, OPT_TSONLY; an
        // ICMP report's quoted datagram is cut short): one scratch buffer
        // serves every message.
        let mut scratch = [0u8; 64];
        let mut iov = libc::iovec {
            iov_base: scratch.as_mut_ptr().cast(),
            iov_len: scratch.len(),
        };
        // SAFETY: mmsghdr is plain old data; all-zero is valid.
        let mut msgs: [libc::mmsghdr; ERRQUEUE_BATCH] = unsafe { zeroed() };
        for (m, control) in msgs.iter_mut().zip(self.controls.iter_mut()) {
            m.msg_hdr.msg_iov = &raw mut iov;
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_control = control.0.as_mut_ptr().cast();
            m.msg_hdr.msg_controllen = control.0.len() as _;
        }
        // SAFETY: every msghdr points at live buffers of the stated
        // lengths (the shared scratch iovec, its own control buffer); the
        // count is the array's length; no timeout.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                ERRQUEUE_BATCH as libc::c_uint,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        self.filled = usize::try_from(n).unwrap_or(0).min(ERRQUEUE_BATCH);
        for (slot, m) in self.read.iter_mut().zip(&msgs[..self.filled]) {
            *slot = classify(&parse_control(&m.msg_hdr, stamp_type));
        }
        &self.read[..self.filled]
    }

    /// Message `i` of the last [`ErrQueueBatch::fill`] (`Empty` past it).
    pub fn fill_result(&self, i: usize) -> ErrQueue {
        self.read[..self.filled]
            .get(i)
            .copied()
            .unwrap_or(ErrQueue::Empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    /// Three sends, six stamps, one `recvmmsg`: SCHED then SND for each,
    /// numbered; the queue is empty after them.
    #[test]
    fn a_batch_reads_every_waiting_stamp_in_one_call() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let kind = enable(
            tx.as_raw_fd(),
            flags::TX_SOFTWARE | flags::REPORT_SOFTWARE | flags::OPTIONS,
        )
        .unwrap();
        for _ in 0..3 {
            tx.send(b"stamp me").unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut batch = ErrQueueBatch::default();
        let got: Vec<(u32, TxPoint)> = batch
            .fill(tx.as_raw_fd(), kind)
            .iter()
            .map(|m| match *m {
                ErrQueue::Stamp { id, point, stamps } => {
                    assert!(stamps.software.is_some(), "a software stamp");
                    (id, point)
                }
                other => panic!("not a stamp: {other:?}"),
            })
            .collect();
        let want: Vec<(u32, TxPoint)> = (0..3)
            .flat_map(|id| [(id, TxPoint::Sched), (id, TxPoint::Sent)])
            .collect();
        assert_eq!(got, want);
        assert!(batch.fill(tx.as_raw_fd(), kind).is_empty(), "drained");
        assert_eq!(batch.fill_result(0), ErrQueue::Empty);
    }

    /// The ordering the guide describes on loopback: user send ≤ SCHED ≤
    /// SND ≤ RX software ≤ user receive, all in CLOCK_REALTIME, each TX stamp
    /// numbered by OPT_ID.
    #[test]
    fn loopback_stamps_arrive_in_order_and_numbered() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let tx_type = enable(
            tx.as_raw_fd(),
            flags::TX_SOFTWARE | flags::REPORT_SOFTWARE | flags::OPTIONS,
        )
        .unwrap();
        let rx_type = enable(rx.as_raw_fd(), flags::RX_SOFTWARE | flags::REPORT_SOFTWARE).unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let mut control = ControlBuf::default();
        // The kernel switches RX stamping on asynchronously (a deferred
        // static key), so the first packets may go unstamped: warm up.
        let mut buf = [0u8; 64];
        let mut warmup = 0u32;
        loop {
            tx.send(b"warm-up").unwrap();
            warmup += 1;
            let got = recv_stamped(rx.as_raw_fd(), &mut buf, None, &mut control, rx_type).unwrap();
            if got.stamps.software.is_some() {
                break;
            }
            assert!(warmup < 200, "RX stamping never came on");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
        while read_error_queue(tx.as_raw_fd(), &mut control, tx_type).unwrap() != ErrQueue::Empty {}
        for id in warmup..warmup + 3 {
            let t1 = realtime_ns();
            tx.send(b"stamp me").unwrap();
            let got = recv_stamped(rx.as_raw_fd(), &mut buf, None, &mut control, rx_type).unwrap();
            let t4 = realtime_ns();
            assert_eq!(&buf[..got.received.len], b"stamp me");
            let rx_sw = got.stamps.software.expect("RX software stamp");
            assert_eq!(got.stamps.hardware, None, "no NIC clock on loopback");
            let mut sched = None;
            let mut sent = None;
            for _ in 0..100 {
                match read_error_queue(tx.as_raw_fd(), &mut control, tx_type).unwrap() {
                    ErrQueue::Stamp {
                        id: got_id,
                        point,
                        stamps,
                    } => {
                        assert_eq!(got_id, id, "OPT_ID numbers packets from 0");
                        match point {
                            TxPoint::Sched => sched = stamps.software,
                            TxPoint::Sent => sent = stamps.software,
                            TxPoint::Acked => panic!("a UDP datagram is never acknowledged"),
                        }
                    }
                    ErrQueue::Other | ErrQueue::Error(_) => {
                        panic!("unexpected error-queue message")
                    }
                    ErrQueue::Empty if sched.is_some() && sent.is_some() => break,
                    ErrQueue::Empty => std::thread::sleep(std::time::Duration::from_millis(1)),
                }
            }
            let (sched, sent) = (sched.expect("SCHED stamp"), sent.expect("SND stamp"));
            assert!(
                t1 <= sched && sched <= sent && sent <= rx_sw && rx_sw <= t4,
                "{t1} {sched} {sent} {rx_sw} {t4}"
            );
        }
        assert_eq!(
            read_error_queue(tx.as_raw_fd(), &mut control, tx_type).unwrap(),
            ErrQueue::Empty
        );
    }

    #[test]
    fn ttl_is_reported_when_asked_for() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.set_ttl(37).unwrap();
        enable_ttl(rx.as_raw_fd(), false).unwrap();
        tx.send_to(b"x", rx.local_addr().unwrap()).unwrap();
        let mut control = ControlBuf::default();
        let mut buf = [0u8; 8];
        let mut from = RawAddr::empty();
        let got = recv_stamped(
            rx.as_raw_fd(),
            &mut buf,
            Some(&mut from),
            &mut control,
            SO_TIMESTAMPING_NEW,
        )
        .unwrap();
        assert_eq!(got.ttl, Some(37));
        assert_eq!(got.stamps, Stamps::default(), "no stamps unless enabled");
        assert_eq!(from.to_socket_addr(), Some(tx.local_addr().unwrap()));
    }
}
