//! This host's interfaces and their addresses (`getifaddrs`).

use super::addr::RawAddr;
use std::io;
use std::mem::size_of;

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

/// The index of the interface named `name` (`if_nametoindex`), or the
/// kernel's reason there is none (`ENODEV`).
pub fn index_of(name: &str) -> io::Result<u32> {
    let c = std::ffi::CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::ENODEV))?;
    // SAFETY: `c` is a live NUL-terminated string for the call's duration.
    match unsafe { libc::if_nametoindex(c.as_ptr()) } {
        0 => Err(io::Error::last_os_error()),
        n => Ok(n),
    }
}
