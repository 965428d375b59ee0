//! The only place Synapse talks to the kernel through raw `libc` calls.
//!
//! Everything here is a thin, allocation-free wrapper: the measurement loops
//! call these functions on every packet, so they take caller-owned buffers and
//! return plain values. Every `unsafe` block states why it is sound.
#![allow(unsafe_code)]

pub mod batch;
pub mod ethtool;
pub mod floor;
pub mod marks;
pub mod phc;
pub mod pktinfo;
pub mod tcp;
pub mod timestamping;

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;

/// A socket address in the kernel's own layout, built once and reused for
/// every `sendto` so the hot path never converts addresses.
#[derive(Clone, Copy)]
pub struct RawAddr {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl std::fmt::Debug for RawAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawAddr({:?})", self.to_socket_addr())
    }
}

impl RawAddr {
    /// Converts a standard address into the kernel layout.
    pub fn from_socket_addr(addr: SocketAddr) -> Self {
        // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
        let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
        let len = match addr {
            SocketAddr::V4(v4) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: v4.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(v4.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is larger than and suitably aligned
                // for sockaddr_in, as the kernel ABI guarantees.
                unsafe { std::ptr::write(std::ptr::from_mut(&mut storage).cast(), sin) };
                size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(v6) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: v6.port().to_be(),
                    sin6_flowinfo: v6.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: v6.ip().octets(),
                    },
                    sin6_scope_id: v6.scope_id(),
                };
                // SAFETY: as above, for sockaddr_in6.
                unsafe { std::ptr::write(std::ptr::from_mut(&mut storage).cast(), sin6) };
                size_of::<libc::sockaddr_in6>()
            }
        };
        Self {
            storage,
            len: len as libc::socklen_t,
        }
    }

    /// An empty address, to be filled by `recv_from`.
    pub fn empty() -> Self {
        // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
        let storage = unsafe { zeroed() };
        Self { storage, len: 0 }
    }

    /// Converts back to a standard address; `None` for families other than
    /// IPv4/IPv6 (which a UDP socket never reports).
    pub fn to_socket_addr(self) -> Option<SocketAddr> {
        match i32::from(self.storage.ss_family) {
            libc::AF_INET if self.len as usize >= size_of::<libc::sockaddr_in>() => {
                // SAFETY: the family says the storage holds a sockaddr_in and
                // the kernel wrote at least that many bytes.
                let sin: libc::sockaddr_in =
                    unsafe { std::ptr::read(std::ptr::from_ref(&self.storage).cast()) };
                let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
                Some(SocketAddr::V4(SocketAddrV4::new(
                    ip,
                    u16::from_be(sin.sin_port),
                )))
            }
            libc::AF_INET6 if self.len as usize >= size_of::<libc::sockaddr_in6>() => {
                // SAFETY: as above, for sockaddr_in6.
                let sin6: libc::sockaddr_in6 =
                    unsafe { std::ptr::read(std::ptr::from_ref(&self.storage).cast()) };
                let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                Some(SocketAddr::V6(SocketAddrV6::new(
                    ip,
                    u16::from_be(sin6.sin6_port),
                    sin6.sin6_flowinfo,
                    sin6.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }

    /// The port, read in place: `sockaddr_in` and `sockaddr_in6` both keep it
    /// big-endian at bytes 2..4. Cheap enough for every packet.
    #[inline]
    pub fn port(&self) -> u16 {
        match self.bytes() {
            [_, _, hi, lo, ..] => u16::from_be_bytes([*hi, *lo]),
            _ => 0,
        }
    }

    /// Where `recvmsg` may write a source address.
    pub(crate) fn storage_ptr(&mut self) -> *mut libc::sockaddr_storage {
        &raw mut self.storage
    }

    /// Where `sendmsg` reads a destination address.
    pub(crate) fn storage_ptr_const(&self) -> *const libc::sockaddr_storage {
        &raw const self.storage
    }

    /// Records how much of the storage the kernel filled.
    pub(crate) fn set_len(&mut self, len: libc::socklen_t) {
        self.len = len.min(size_of::<libc::sockaddr_storage>() as libc::socklen_t);
    }

    /// Byte-wise comparison of the meaningful part: cheap enough for every packet.
    pub fn same_as(&self, other: &RawAddr) -> bool {
        self.len == other.len && self.bytes() == other.bytes()
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: storage is a live, initialised value of at least `len` bytes
        // (len never exceeds size_of::<sockaddr_storage>()).
        unsafe {
            std::slice::from_raw_parts(
                std::ptr::from_ref(&self.storage).cast::<u8>(),
                (self.len as usize).min(size_of::<libc::sockaddr_storage>()),
            )
        }
    }
}

/// Sends one datagram to `to`. One `sendto` syscall, no allocation.
pub fn send_to(fd: RawFd, buf: &[u8], to: &RawAddr) -> io::Result<usize> {
    // SAFETY: buf and the address are valid for the lengths passed; the kernel
    // only reads them for the duration of the call.
    let n = unsafe {
        libc::sendto(
            fd,
            buf.as_ptr().cast(),
            buf.len(),
            0,
            std::ptr::from_ref(&to.storage).cast(),
            to.len,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Sends one datagram on a connected socket. One `send` syscall.
pub fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes for the duration of the call.
    let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Receives one datagram on a connected socket (the kernel has already
/// checked its source). One `recv` syscall.
pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<Received> {
    recv_flags(fd, buf, libc::MSG_TRUNC)
}

/// [`recv`] that never waits, even on a blocking socket (`EAGAIN`).
pub fn recv_now(fd: RawFd, buf: &mut [u8]) -> io::Result<Received> {
    recv_flags(fd, buf, libc::MSG_TRUNC | libc::MSG_DONTWAIT)
}

fn recv_flags(fd: RawFd, buf: &mut [u8], flags: i32) -> io::Result<Received> {
    // SAFETY: buf is writable for buf.len() bytes; the kernel writes no further.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(received(n as usize, buf.len()))
}

fn received(real: usize, capacity: usize) -> Received {
    Received {
        len: real.min(capacity),
        truncated: real > capacity,
    }
}

/// Result of one receive.
#[derive(Debug, Clone, Copy, Default)]
pub struct Received {
    /// Bytes written to the buffer.
    pub len: usize,
    /// The datagram was longer than the buffer (`MSG_TRUNC`).
    pub truncated: bool,
}

/// Receives one datagram and its source address. One `recvfrom` syscall.
///
/// With `MSG_TRUNC` the kernel reports the datagram's real length, so an
/// oversized datagram is recognised rather than silently cut.
pub fn recv_from(fd: RawFd, buf: &mut [u8], from: &mut RawAddr) -> io::Result<Received> {
    from.len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: buf is writable for buf.len() bytes and from.storage for from.len
    // bytes; the kernel writes no further and updates from.len.
    let n = unsafe {
        libc::recvfrom(
            fd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_TRUNC,
            std::ptr::from_mut(&mut from.storage).cast(),
            &raw mut from.len,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(received(n as usize, buf.len()))
}

/// ICMP errors the kernel reports on a socket with `IP_RECVERR` (or a
/// connected one). Mid-run they mean "this datagram is lost", not "give up".
pub fn is_network_error(errno: i32) -> bool {
    is_pending_icmp(errno) || matches!(errno, libc::EMSGSIZE | libc::EACCES | libc::EPERM)
}

/// The network errors that arrive by ICMP about an earlier datagram and
/// wait on the socket, failing whatever send comes next; the others
/// (too big, a local firewall) are about the send that gets them.
pub fn is_pending_icmp(errno: i32) -> bool {
    matches!(
        errno,
        libc::ECONNREFUSED
            | libc::EHOSTUNREACH
            | libc::ENETUNREACH
            | libc::EHOSTDOWN
            | libc::ENONET
    )
}

/// Errors on send that mean "this datagram did not go out" rather than
/// "something is broken here": the network errors, and a full local queue
/// (ENOBUFS, which Linux reports once `IP_RECVERR` is on).
pub fn is_send_drop(errno: i32) -> bool {
    is_network_error(errno) || errno == libc::ENOBUFS
}

/// Discards everything queued on the socket's error queue (ICMP errors
/// reported through `IP_RECVERR`). Never blocks.
/// Returns the errno of the last ICMP error it held: reading an error
/// clears the socket's pending error, so this is the only place left to
/// learn it.
pub fn drain_error_queue(fd: RawFd) -> Option<i32> {
    let mut control = timestamping::ControlBuf::default();
    let mut errno = None;
    loop {
        match timestamping::read_error_queue(fd, &mut control, 0) {
            Ok(timestamping::ErrQueue::Error(e)) => errno = Some(e),
            Ok(timestamping::ErrQueue::Stamp { .. } | timestamping::ErrQueue::Other) => {}
            Ok(timestamping::ErrQueue::Empty) | Err(_) => return errno,
        }
    }
}

/// What a wait on a socket saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// A datagram (or an error) can be received.
    Readable,
    /// Only the error queue has something (TX stamps or ICMP reports).
    ErrorQueue,
    /// The time ran out (or a signal came).
    TimedOut,
}

/// Waits until `fd` has a datagram or an error, at most `timeout`, with a
/// nanosecond timeout (`ppoll`), unlike `SO_RCVTIMEO`, which the kernel
/// rounds up to whole ticks.
pub fn wait_readable(fd: RawFd, timeout: std::time::Duration) -> io::Result<Readiness> {
    Ok(match poll_in(fd, timeout)? {
        None | Some(0) => Readiness::TimedOut,
        Some(revents) if revents & libc::POLLIN != 0 => Readiness::Readable,
        Some(_) => Readiness::ErrorQueue,
    })
}

/// `ppoll` on one descriptor for input: its `revents`, `Some(0)` when the
/// time ran out, `None` when a signal came.
#[inline]
fn poll_in(fd: RawFd, timeout: std::time::Duration) -> io::Result<Option<libc::c_short>> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: pfd and ts are live for the call; one pollfd is passed; a
    // null signal mask leaves the thread's mask alone.
    let n = unsafe { libc::ppoll(&raw mut pfd, 1, &raw const ts, std::ptr::null()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EINTR) => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(if n == 0 { 0 } else { pfd.revents }))
}

/// Whether the terminal `fd` has input within `timeout`: `Some(true)` it
/// has, `Some(false)` it has not, `None` it hung up (`POLLHUP`, with or
/// without input left to read).
pub fn terminal_input(fd: RawFd, timeout: std::time::Duration) -> io::Result<Option<bool>> {
    Ok(match poll_in(fd, timeout)? {
        None => Some(false),
        Some(r) if r & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 => None,
        Some(r) => Some(r != 0),
    })
}

/// Eight random bytes from the kernel (`getrandom`), for per-run tokens.
pub fn random_u64() -> io::Result<u64> {
    let mut buf = [0u8; 8];
    // SAFETY: buf is writable for its 8 bytes; the kernel writes no further.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n == 8 {
        Ok(u64::from_ne_bytes(buf))
    } else {
        Err(io::Error::last_os_error())
    }
}

/// What the kernel says of the system clock (`adjtimex` with modes 0, as
/// `ntp_adjtime` reads it): whether it is synchronised (a time daemon
/// clears `STA_UNSYNC`; the call returns `TIME_ERROR` otherwise), its
/// maximum error and its estimated error, µs. `None` when it cannot be
/// asked.
pub fn clock_sync() -> Option<(bool, u64, u64)> {
    // SAFETY: timex is plain data; all zeroes (modes 0) asks without setting.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: tx is a live, writable timex; modes 0 only reads.
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return None;
    }
    let synced = state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0;
    Some((synced, tx.maxerror.max(0) as u64, tx.esterror.max(0) as u64))
}

/// A request that no CPU enter an idle state it takes longer than 0 µs to
/// leave (`/dev/cpu_dma_latency`, as cyclictest makes): idle CPUs poll
/// instead of halting, so a wake-up costs microseconds. The kernel drops
/// the request when the file closes, however the process ends.
#[derive(Debug)]
pub struct NoIdle(#[allow(dead_code)] std::fs::File);

impl NoIdle {
    /// Makes the request (root only, usually).
    pub fn request() -> io::Result<Self> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")?;
        f.write_all(&0i32.to_ne_bytes())?;
        Ok(Self(f))
    }
}

/// Lowers the calling thread's timer slack to `ns` (the kernel's default
/// lets a sleep end up to 50 µs late, to batch wake-ups).
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and changes only
    // the calling thread.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets an integer socket option.
pub(crate) fn set_int_option(
    fd: RawFd,
    level: i32,
    name: i32,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: the option value is a live c_int of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            std::ptr::from_ref(&value).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Turns on `IP_RECVERR`/`IPV6_RECVERR`, so ICMP errors (port unreachable)
/// reach an unconnected socket instead of being dropped silently.
pub fn enable_recverr(fd: RawFd, ipv6: bool) -> io::Result<()> {
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_RECVERR)
    } else {
        (libc::IPPROTO_IP, libc::IP_RECVERR)
    };
    set_int_option(fd, level, name, 1)
}

/// CPUs the calling thread may run on.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { zeroed() };
    // SAFETY: set is a live cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &raw mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let max = 8 * size_of::<libc::cpu_set_t>();
    // SAFETY: CPU_ISSET only reads the set, for indices below its capacity.
    Ok((0..max)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= 8 * size_of::<libc::cpu_set_t>() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { zeroed() };
    // SAFETY: cpu is below the set's capacity (checked above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: set is a live cpu_set_t of the size passed; pid 0 is this thread.
    let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &raw const set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPU the calling thread is running on right now.
#[cfg(test)]
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only returns a number.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// Becomes user `name` for good (user, group and supplementary groups,
/// real, effective and saved, every thread), for a server that has bound
/// its privileged ports. Returns the uid and gid taken.
pub fn become_user(name: &str) -> io::Result<(u32, u32)> {
    let c_name = std::ffi::CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the user name"))?;
    // SAFETY: passwd is plain old data; all-zero is a valid value to fill.
    let mut pw: libc::passwd = unsafe { zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is live for the call: the name, the record and
    // its string buffer (with its true length), and the result slot.
    let rc = unsafe {
        libc::getpwnam_r(
            c_name.as_ptr(),
            &raw mut pw,
            buf.as_mut_ptr(),
            buf.len(),
            &raw mut found,
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    if found.is_null() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "no such user"));
    }
    let (uid, gid) = (pw.pw_uid, pw.pw_gid);
    // Groups first: once the user is changed, they can no longer be.
    // SAFETY: one gid, read from a live array of one.
    check(unsafe { libc::setgroups(1, &raw const gid) })?;
    // SAFETY: plain integer arguments; glibc applies them to every thread.
    check(unsafe { libc::setresgid(gid, gid, gid) })?;
    // SAFETY: as above.
    check(unsafe { libc::setresuid(uid, uid, uid) })?;
    // SAFETY: no arguments; it only returns the real user id.
    if unsafe { libc::getuid() } != uid {
        return Err(io::Error::other("the user did not change"));
    }
    Ok((uid, gid))
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Moves the calling thread to `SCHED_FIFO` at the given priority.
pub fn set_fifo(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: param is a live sched_param; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &raw const param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The name of the interface that holds `ip` (as `getifaddrs` reports it),
/// or `None` when no interface does.
pub fn interface_with_address(ip: std::net::IpAddr) -> io::Result<Option<String>> {
    Ok(interface_addresses()?
        .into_iter()
        .find(|(_, a)| *a == ip)
        .map(|(name, _)| name))
}

/// Every IPv4 and IPv6 address of this host, with its interface's name.
pub fn interface_addresses() -> io::Result<Vec<(String, std::net::IpAddr)>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head into `head`; freed below.
    if unsafe { libc::getifaddrs(&raw mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut found = Vec::new();
    let mut at = head;
    while !at.is_null() {
        // SAFETY: `at` is a node of the list getifaddrs returned, still live.
        let ifa = unsafe { &*at };
        if !ifa.ifa_addr.is_null() {
            let mut raw = RawAddr::empty();
            // SAFETY: ifa_addr points to a sockaddr whose family says its
            // size; only the IPv4/IPv6 sizes are copied, which fit storage.
            let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
            let len = match family {
                libc::AF_INET => size_of::<libc::sockaddr_in>(),
                libc::AF_INET6 => size_of::<libc::sockaddr_in6>(),
                _ => 0,
            };
            if len > 0 {
                // SAFETY: as above: `len` bytes are readable at ifa_addr and
                // writable in the storage.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        ifa.ifa_addr.cast::<u8>(),
                        raw.storage_ptr().cast::<u8>(),
                        len,
                    );
                }
                raw.set_len(len as libc::socklen_t);
                if let Some(addr) = raw.to_socket_addr() {
                    // SAFETY: ifa_name is a NUL-terminated string in the list.
                    let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
                    found.push((name.to_string_lossy().into_owned(), addr.ip()));
                }
            }
        }
        at = ifa.ifa_next;
    }
    // SAFETY: `head` came from getifaddrs and is freed exactly once.
    unsafe { libc::freeifaddrs(head) };
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_addr_round_trips_v4_and_v6() {
        for s in ["127.0.0.1:8080", "[::1]:9", "[fe80::1%2]:862", "0.0.0.0:0"] {
            let addr: SocketAddr = s.parse().unwrap();
            assert_eq!(RawAddr::from_socket_addr(addr).to_socket_addr(), Some(addr));
        }
    }

    #[test]
    fn port_is_read_in_place_for_both_families() {
        for s in ["127.0.0.1:8080", "[::1]:999", "0.0.0.0:0"] {
            let a: SocketAddr = s.parse().unwrap();
            assert_eq!(RawAddr::from_socket_addr(a).port(), a.port());
        }
        assert_eq!(RawAddr::empty().port(), 0);
    }

    #[test]
    fn same_as_distinguishes_ports_and_families() {
        let a = RawAddr::from_socket_addr("127.0.0.1:1".parse().unwrap());
        let b = RawAddr::from_socket_addr("127.0.0.1:2".parse().unwrap());
        let c = RawAddr::from_socket_addr("[::ffff:127.0.0.1]:1".parse().unwrap());
        assert!(a.same_as(&a));
        assert!(!a.same_as(&b));
        assert!(!a.same_as(&c));
    }

    #[test]
    fn pinning_to_an_allowed_cpu_works_and_reports_it() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        let last = *cpus.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(last).unwrap();
            assert_eq!(current_cpu(), Some(last));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn pinning_to_an_impossible_cpu_is_an_error() {
        assert!(pin_current_thread(1 << 20).is_err());
    }
}
