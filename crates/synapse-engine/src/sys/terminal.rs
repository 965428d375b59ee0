//! Waiting for keys on a terminal without crossterm's reader, which spins
//! on a terminal that hung up.

use super::poll::ppoll;
use std::io;
use std::os::fd::RawFd;

/// Whether the terminal `fd` has input within `timeout`: `Some(true)` it
/// has, `Some(false)` it has not, `None` it hung up (`POLLHUP`, with or
/// without input left to read).
pub fn terminal_input(fd: RawFd, timeout: std::time::Duration) -> io::Result<Option<bool>> {
    Ok(match ppoll(fd, libc::POLLIN, timeout)? {
        None => Some(false),
        Some(r) if r & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 => None,
        Some(r) => Some(r != 0),
    })
}
