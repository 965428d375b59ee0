//! How the blocking client waits for a reply inside the receive itself.
//!
//! A round trip should cost what a bare C loop pays: one send and one
//! receive. Waiting in `ppoll` first and then receiving made it three. So
//! the blocking client's socket is left blocking with `SO_RCVTIMEO` set
//! once, and the receive is the wait.
//!
//! `SO_RCVTIMEO` is kept in jiffies, and its timer may fire up to a wheel
//! slot late (a slot is 1/8 of the time for timers past 64 ticks). Armed at
//! the timeout itself, a lost packet would be noticed late. So it is armed
//! shorter: the timeout less two ticks and an eighth, which the kernel
//! cannot stretch past the deadline. The rest of the wait, which only a
//! lost or late reply reaches, is waited exactly in `ppoll`. A timeout too
//! short to leave anything armed (under four ticks) is waited in `ppoll`
//! alone, as before: short timeouts are where the precision matters.

use socket2::Socket;
use std::io;
use std::time::Duration;

/// The receive timeout armed on a blocking client socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvTimeout {
    /// How long one receive may block; `None`: the wait is all `ppoll`.
    pub armed: Option<Duration>,
    /// The kernel's timer tick, as it reported it.
    pub tick: Duration,
}

impl RecvTimeout {
    /// Makes `socket` blocking and arms its receive timeout for waits of
    /// at most `slice` (the reply timeout, or the stop-check interval if
    /// shorter).
    pub fn arm(socket: &Socket, slice: Duration) -> io::Result<Self> {
        let tick = kernel_tick(socket)?;
        let armed = armed_for(slice, tick);
        socket.set_nonblocking(armed.is_none())?;
        socket.set_read_timeout(armed)?;
        Ok(Self { armed, tick })
    }
}

/// The timeout to arm for waits of `slice` on a kernel ticking every
/// `tick`: one the kernel's rounding up cannot carry past `slice`.
pub fn armed_for(slice: Duration, tick: Duration) -> Option<Duration> {
    let margin = tick * 2 + slice / 8;
    let armed = slice.checked_sub(margin)?;
    // Whole ticks, never zero (zero would mean "block for ever").
    let ticks = armed.as_nanos() / tick.as_nanos().max(1);
    (ticks >= 1 && slice >= tick * 4).then(|| tick * ticks as u32)
}

/// The kernel's timer tick: a 1 µs receive timeout reads back as one
/// tick, because the kernel keeps it in jiffies, rounded up.
pub(crate) fn kernel_tick(socket: &Socket) -> io::Result<Duration> {
    socket.set_read_timeout(Some(Duration::from_micros(1)))?;
    let tick = socket.read_timeout()?.unwrap_or(Duration::from_millis(4));
    socket.set_read_timeout(None)?;
    Ok(tick)
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, Type};

    #[test]
    fn the_armed_timeout_leaves_the_kernel_room_before_the_deadline() {
        let ms = Duration::from_millis;
        // 250 Hz: 100 ms less 8 ms and 12.5 ms is 79.5 ms, 19 whole ticks.
        assert_eq!(armed_for(ms(100), ms(4)), Some(ms(76)));
        // 1000 Hz.
        assert_eq!(armed_for(ms(100), ms(1)), Some(ms(85)));
        assert_eq!(armed_for(ms(16), ms(4)), Some(ms(4)));
        assert_eq!(armed_for(ms(15), ms(4)), None, "under four ticks");
        assert_eq!(armed_for(ms(1), ms(1)), None);
        assert_eq!(armed_for(ms(20), ms(4)), Some(ms(8)));
        for slice in [5, 10, 50, 100, 250, 1000] {
            for tick in [1, 3, 4, 10] {
                if let Some(a) = armed_for(ms(slice), ms(tick)) {
                    assert!(a >= ms(tick) && a + ms(2 * tick) + ms(slice) / 8 <= ms(slice));
                }
            }
        }
    }

    #[test]
    fn the_tick_is_read_from_the_kernel_and_the_socket_armed() {
        let s = Socket::new(Domain::IPV4, Type::DGRAM, None).unwrap();
        let r = RecvTimeout::arm(&s, Duration::from_millis(100)).unwrap();
        // CONFIG_HZ is 100 to 1000 on any kernel Synapse runs on.
        assert!(
            r.tick >= Duration::from_millis(1) && r.tick <= Duration::from_millis(10),
            "{r:?}"
        );
        let armed = r.armed.unwrap();
        assert_eq!(s.read_timeout().unwrap(), Some(armed));
        assert!(!s.nonblocking().unwrap());
        let r = RecvTimeout::arm(&s, Duration::from_micros(500)).unwrap();
        assert_eq!(r.armed, None);
        assert!(
            s.nonblocking().unwrap(),
            "a ppoll wait needs a non-blocking socket"
        );
    }
}
