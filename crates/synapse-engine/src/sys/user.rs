//! Giving up root once the ports are bound (`synapse server --user`).

use super::errno::zero;
use std::io;
use std::mem::zeroed;

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
    zero(unsafe { libc::setgroups(1, &raw const gid) })?;
    // SAFETY: plain integer arguments; glibc applies them to every thread.
    zero(unsafe { libc::setresgid(gid, gid, gid) })?;
    // SAFETY: as above.
    zero(unsafe { libc::setresuid(uid, uid, uid) })?;
    // SAFETY: no arguments; it only returns the real user id.
    if unsafe { libc::getuid() } != uid {
        return Err(io::Error::other("the user did not change"));
    }
    Ok((uid, gid))
}
