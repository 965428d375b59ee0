//! A TCP connection's kernel stamps: the sampled request asks, in its own
//! `sendmsg`, for the stamps of its last byte entering the qdisc (SCHED),
//! handed to the device (SND) and acknowledged by the far kernel (ACK);
//! its reply is received with `recvmsg`, whose control data holds the RX
//! stamp of the last segment read. TX stamps are numbered by
//! `SOF_TIMESTAMPING_OPT_ID`, which on a stream counts bytes: a stamp's
//! number is the offset of the byte it is about, counted from when the
//! option was set. They are read off the error queue after the reply is in
//! hand, outside the timed part.

use crate::sys::errqueue::TxPoint;
use crate::sys::tcp as sys_tcp;
use crate::sys::timestamping::{self, flags};
use crate::timestamping::tx_matcher::TxStampReader;
use crate::timestamping::tx_sample::TxSample;
use std::io;
use std::os::fd::RawFd;

/// At most this many error-queue messages are read per transaction.
const MAX_READS: usize = 32;

/// The TX stamps of one request's last byte.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TcpTx {
    /// Entering the packet scheduler.
    pub sched: Option<u64>,
    /// Handed to the device.
    pub driver: Option<u64>,
    /// The far kernel's ACK moved past it.
    pub ack: Option<u64>,
}

impl TcpTx {
    fn complete(&self) -> bool {
        self.sched.is_some() && self.driver.is_some() && self.ack.is_some()
    }
}

/// One connection's stamping. Allocates nothing per transaction.
#[derive(Debug)]
pub(crate) struct TcpStamps {
    reader: TxStampReader,
    /// Which requests carry TX stamps: one in N on average, at random.
    sample: TxSample,
    /// Bytes written since the numbering began (its low 32 bits are the
    /// kernel's numbers).
    written: u64,
    /// The number of the sampled request's last byte, while it is awaited.
    want: Option<u32>,
    got: TcpTx,
    /// Stamps of bytes no longer awaited.
    stale: u64,
}

impl TcpStamps {
    /// Switches RX stamps and byte numbering on for an established
    /// connection (`OPT_ID` is refused before it is one); TX stamps are
    /// asked for by the sampled requests themselves.
    pub fn enable(fd: RawFd, every: u32) -> io::Result<Self> {
        let wanted = flags::RX_SOFTWARE
            | flags::REPORT_SOFTWARE
            | libc::SOF_TIMESTAMPING_OPT_ID
            | libc::SOF_TIMESTAMPING_OPT_TSONLY;
        let cmsg_type = timestamping::enable(fd, wanted)?;
        Ok(Self {
            reader: TxStampReader::new(cmsg_type),
            sample: TxSample::seeded(every),
            written: 0,
            want: None,
            got: TcpTx::default(),
            stale: 0,
        })
    }

    /// Whether measured transaction `index` (`None`: warm-up, all of
    /// which are) is one of the stamped sample (drawn at random, see
    /// `tx_sample.rs`; called once per transaction).
    #[inline]
    pub fn samples(&mut self, index: Option<u64>) -> bool {
        self.sample.take(index)
    }

    /// Sends what the kernel takes of `payload` now; a `sampled` request
    /// asks for its stamps. Returns the bytes taken.
    #[inline]
    pub fn send(&mut self, fd: RawFd, payload: &[u8], sampled: bool) -> io::Result<usize> {
        let n = if sampled {
            let tx = flags::TX_SOFTWARE | libc::SOF_TIMESTAMPING_TX_ACK;
            sys_tcp::send_now_stamped(fd, payload, tx)?
        } else {
            sys_tcp::send_now(fd, payload)?
        };
        self.wrote(n);
        if sampled && n > 0 {
            // The stamps are of the last byte this sendmsg took.
            self.want = Some(self.written.wrapping_sub(1) as u32);
            self.got = TcpTx::default();
        }
        Ok(n)
    }

    /// Counts bytes sent without stamps (the rest of a request the kernel
    /// took in pieces).
    #[inline]
    pub fn wrote(&mut self, n: usize) {
        self.written += n as u64;
    }

    /// Receives what is there of the stream, up to `buf.len()` bytes, with
    /// the RX stamp of the last segment read; `now`: never wait.
    #[inline]
    pub fn recv(
        &mut self,
        fd: RawFd,
        buf: &mut [u8],
        now: bool,
    ) -> io::Result<(usize, Option<u64>)> {
        let kind = self.reader.cmsg_type();
        let m = sys_tcp::recv_stamped(fd, buf, self.reader.control(), kind, now)?;
        Ok((m.received.len, m.stamps.software))
    }

    /// Reads what the error queue holds now, never blocking, keeping the
    /// awaited request's stamps.
    pub fn absorb(&mut self, fd: RawFd) {
        for _ in 0..MAX_READS {
            let Some((id, point, stamps)) = self.reader.next(fd) else {
                return;
            };
            match self.want {
                Some(w) if w == id => match point {
                    TxPoint::Sched => self.got.sched = self.got.sched.or(stamps.software),
                    TxPoint::Sent => self.got.driver = self.got.driver.or(stamps.software),
                    TxPoint::Acked => self.got.ack = self.got.ack.or(stamps.software),
                },
                _ => self.stale += 1,
            }
            if self.got.complete() {
                return;
            }
        }
    }

    /// The awaited request's stamps, once its reply is in hand: the ACK
    /// that let the reply through has been processed by then. Whatever
    /// never came stays `None`; the request is no longer awaited.
    pub fn collect(&mut self, fd: RawFd) -> TcpTx {
        if !self.got.complete() {
            self.absorb(fd);
        }
        self.want = None;
        std::mem::take(&mut self.got)
    }

    /// The awaited request was given up (timed out, or its connection
    /// lost): its stamps, if they come, are stale.
    pub fn forget(&mut self) {
        self.want = None;
        self.got = TcpTx::default();
    }

    /// Stamps that came for bytes no longer awaited.
    pub fn stale(&self) -> u64 {
        self.stale
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    /// Each sampled request gets its SCHED, SND and ACK stamps, numbered
    /// by its last byte, in order: user send ≤ SCHED ≤ SND ≤ ACK, and the
    /// reply's RX stamp after SND.
    #[test]
    fn a_sampled_request_gets_its_three_stamps_and_its_reply_an_rx_stamp() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        sys_tcp::set_nodelay(c.as_raw_fd()).unwrap();
        let echo = std::thread::spawn(move || {
            let mut b = [0u8; 16];
            while s.read_exact(&mut b).is_ok() {
                s.write_all(&b).unwrap();
            }
        });
        let fd = c.as_raw_fd();
        let mut st = TcpStamps::enable(fd, 1).unwrap();
        timestamping::wait_for_rx_stamping(std::time::Duration::from_millis(500));
        let mut rx_seen = 0;
        for round in 0..5u64 {
            let t1 = crate::sys::clock::realtime_ns();
            assert_eq!(st.send(fd, &[round as u8; 16], true).unwrap(), 16);
            assert_eq!(st.want, Some((16 * (round + 1) - 1) as u32), "byte numbers");
            let mut buf = [0u8; 16];
            let mut have = 0;
            let mut rx = None;
            while have < 16 {
                let (n, stamp) = st.recv(fd, &mut buf[have..], false).unwrap();
                have += n;
                rx = stamp.or(rx);
            }
            let tx = st.collect(fd);
            let (sched, driver, ack) = (tx.sched.unwrap(), tx.driver.unwrap(), tx.ack.unwrap());
            assert!(t1 <= sched && sched <= driver && driver <= ack, "{tx:?}");
            if let Some(rx) = rx {
                assert!(driver <= rx, "{tx:?} {rx}");
                rx_seen += 1;
            }
        }
        assert!(rx_seen >= 3, "RX stamps come with the replies");
        assert_eq!(st.stale(), 0);
        drop(c);
        echo.join().unwrap();
    }
}
