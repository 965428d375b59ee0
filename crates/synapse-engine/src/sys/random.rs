//! Random bytes from the kernel (`getrandom`), for per-run tokens.

use std::io;

/// Eight random bytes from the kernel.
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
