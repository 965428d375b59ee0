//! The only place Synapse talks to the kernel through raw `libc` calls.
//!
//! Everything here is a thin, allocation-free wrapper: the measurement loops
//! call these functions on every packet, so they take caller-owned buffers and
//! return plain values. Every `unsafe` block states why it is sound. One
//! concern per file:
//!
//! - `addr`: socket addresses in the kernel's layout; `errno`: results and
//!   what each error means; `io`: send and receive, the one `sendmsg` and
//!   the one `recvmsg`; `cmsg`: the one control-message encoder and
//!   iterator; `sockopt`: integer socket options; `poll`: the one `ppoll`.
//! - `timestamping`: `SO_TIMESTAMPING` and stamped receives and sends;
//!   `errqueue`: TX stamps and ICMP errors off the error queue, and
//!   `icmp_error`: such an error read as a report (who, what, about which
//!   datagram); `pktinfo`:
//!   answering from the address asked; `marks`: TOS and Traffic Class;
//!   `batch`: `recvmmsg`/`sendmmsg` and GSO; `hop_limit`: one datagram's
//!   TTL in its own control message; `names`: an address's name;
//!   `multicast`: group membership and a group sender's options; `tcp`: stream calls,
//!   `TCP_INFO`, `accept4`; `epoll`: the TCP reflector's readiness and
//!   descriptor limit.
//! - `clock`: `CLOCK_REALTIME` and its synchronisation; `random`:
//!   `getrandom`; `affinity`: CPU sets and pinning; `sched`: `SCHED_FIFO`,
//!   timer slack, idle states; `user`: dropping privilege; `interfaces`:
//!   this host's addresses; `terminal`: keys without a reader; `ethtool`,
//!   `phc`: a NIC's stamping and clock; `floor`: the floor's raw calls.
#![allow(unsafe_code)]

pub mod addr;
pub mod affinity;
pub mod batch;
pub mod clock;
pub mod cmsg;
mod direct;
pub mod epoll;
pub mod errno;
pub mod errqueue;
pub mod ethtool;
pub mod floor;
pub mod hop_limit;
pub mod icmp_error;
pub mod interfaces;
pub mod io;
pub mod marks;
pub mod multicast;
pub mod names;
pub mod phc;
pub mod pktinfo;
pub mod poll;
pub mod random;
pub mod sched;
pub mod sockopt;
pub mod tcp;
pub mod terminal;
pub mod timestamping;
pub mod user;
