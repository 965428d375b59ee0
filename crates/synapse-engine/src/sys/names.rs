//! An address's name, as the C library finds it (`getnameinfo`: the hosts
//! file, then DNS, as `nsswitch.conf` says): for `synapse trace --resolve`.

use super::addr::RawAddr;
use std::net::{IpAddr, SocketAddr};

/// The name of `ip`, or `None` when it has none (or the lookup failed).
/// Blocks for as long as the resolver takes.
pub fn name_of(ip: IpAddr) -> Option<String> {
    let raw = RawAddr::from_socket_addr(SocketAddr::new(ip, 0));
    let mut host = [0u8; 1025]; // NI_MAXHOST
    // SAFETY: the address and the output buffer are live for the call, of
    // the lengths passed; no service buffer is asked for (null, 0).
    let rc = unsafe {
        libc::getnameinfo(
            raw.storage_ptr_const().cast(),
            raw.len,
            host.as_mut_ptr().cast(),
            host.len() as libc::socklen_t,
            std::ptr::null_mut(),
            0,
            libc::NI_NAMEREQD,
        )
    };
    if rc != 0 {
        return None;
    }
    let end = host.iter().position(|&b| b == 0)?;
    let name = std::str::from_utf8(&host[..end]).ok()?;
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loopback has a name in every hosts file; an address from the
    /// documentation range has none (and the lookup says so, no panic).
    #[test]
    fn loopback_is_named_and_a_documentation_address_is_not() {
        let hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
        let listed = hosts
            .lines()
            .any(|l| l.split_whitespace().next() == Some("127.0.0.1"));
        if listed {
            assert!(name_of("127.0.0.1".parse().unwrap()).is_some());
        }
        assert_eq!(name_of("192.0.2.201".parse().unwrap()), None);
    }
}
