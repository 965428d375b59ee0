//! Who the reflector answers: `--allow CIDR` (any number; none: everyone).
//! A source outside every listed network is counted and dropped before
//! anything else is done for it.

use super::Refusal;
use super::limits::{Limits, Pace};
use super::sessions::Sessions;
use crate::mono::Mono;
use crate::sys::addr::RawAddr;
use std::net::IpAddr;

/// Who the reflector answers, and how much.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Admission {
    /// The sources answered.
    pub allow: AllowList,
    /// How much each, and all together.
    pub limits: Limits,
}

/// One network: an address and how many leading bits of it count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    /// The network's address (host bits are ignored).
    pub addr: IpAddr,
    /// Prefix length: 0..=32 (IPv4) or 0..=128 (IPv6).
    pub prefix: u8,
}

impl Cidr {
    /// Whether `ip` is in this network. An IPv4-mapped IPv6 source (a
    /// dual-stack socket's view of an IPv4 client) is matched as IPv4.
    #[inline]
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_eq(
                u128::from(net.to_bits()) << 96,
                u128::from(ip.to_bits()) << 96,
                self.prefix,
            ),
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_eq(net.to_bits(), ip.to_bits(), self.prefix)
            }
            _ => false,
        }
    }
}

/// Whether the first `bits` bits of `a` and `b` (left-aligned) agree.
fn prefix_eq(a: u128, b: u128, bits: u8) -> bool {
    match bits {
        0 => true,
        128.. => a == b,
        bits => (a ^ b) >> (128 - u32::from(bits)) == 0,
    }
}

impl std::str::FromStr for Cidr {
    type Err = String;

    /// `192.0.2.0/24`, `2001:db8::/32`, or a bare address (one host).
    fn from_str(s: &str) -> Result<Self, String> {
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr.trim().parse().map_err(|_| {
            format!("'{s}' is not an address or network (e.g. 192.0.2.0/24, 2001:db8::/32)")
        })?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|&p| p <= max)
                .ok_or_else(|| format!("'{s}': the prefix length must be 0..={max}"))?,
        };
        Ok(Self { addr, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// The networks answered. Empty: every source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList(Vec<Cidr>);

impl std::fmt::Display for AllowList {
    /// `192.0.2.0/24, 2001:db8::/32`, or `every source`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("every source");
        }
        let nets: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&nets.join(", "))
    }
}

impl AllowList {
    /// These networks (none: everyone).
    pub fn new(nets: Vec<Cidr>) -> Self {
        Self(nets)
    }

    /// Whether anyone at all is kept out.
    pub fn is_open(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `from` may be answered. Allocation-free; with no list, one
    /// branch.
    #[inline]
    pub fn allows(&self, from: &RawAddr) -> bool {
        self.0.is_empty()
            || from
                .to_socket_addr()
                .is_some_and(|a| self.allows_ip(a.ip()))
    }

    /// Whether `ip` may be answered (a TCP connection's peer).
    pub fn allows_ip(&self, ip: std::net::IpAddr) -> bool {
        self.0.is_empty() || self.0.iter().any(|n| n.contains(ip))
    }
}

/// The checks every datagram passes before its answer, in the order
/// that lets a refusal cost no more than the checks before it: its source
/// port, `--allow`, its session (opened when new), its source's rate and
/// the total rate.
pub(super) struct Gate {
    /// The sources answered.
    pub allow: AllowList,
    /// `--max-total-pps`, and when its bucket is empty again.
    pub total: Pace,
    pub total_tat: u64,
    /// The reflector's epoch: a bucket about to refuse reads the clock.
    pub epoch: Mono,
}

impl Gate {
    /// Whether a datagram from `from` may be answered: its session's index
    /// in `sessions`, or why not.
    #[inline(always)]
    pub fn admit(
        &mut self,
        sessions: &mut Sessions,
        from: &RawAddr,
        now_ns: u64,
    ) -> Result<usize, Refusal> {
        if from.port() < 1024 {
            return Err(Refusal::ServicePort);
        }
        if !self.allow.allows(from) {
            return Err(Refusal::NotAllowed);
        }
        let idx = sessions.find(from, now_ns)?;
        // `now_ns` was read after the previous answer, so it may be behind:
        // before a bucket refuses, it is asked again at the clock's time (a
        // bucket that refuses books nothing, so none is charged twice).
        let epoch = self.epoch;
        let mut fresh = None;
        let mut later = || *fresh.get_or_insert_with(|| epoch.elapsed_ns());
        let source = sessions.within_rate(idx, now_ns) || sessions.within_rate(idx, later());
        let total = source
            && (!self.total.is_limited()
                || self.total.admit(&mut self.total_tat, now_ns)
                || self.total.admit(&mut self.total_tat, later()));
        if total {
            Ok(idx)
        } else {
            Err(sessions.refuse(idx, Refusal::Rate))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn net(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    fn raw(s: &str) -> RawAddr {
        RawAddr::from_socket_addr(s.parse::<SocketAddr>().unwrap())
    }

    #[test]
    fn networks_parse_with_or_without_a_prefix() {
        assert_eq!(net("192.0.2.0/24").prefix, 24);
        assert_eq!(net("192.0.2.7").prefix, 32, "a bare address is one host");
        assert_eq!(net("2001:db8::/32").prefix, 32);
        assert_eq!(net("::1").prefix, 128);
        assert_eq!(net("10.0.0.0/8").to_string(), "10.0.0.0/8");
        assert!(
            "10.0.0.0/33"
                .parse::<Cidr>()
                .unwrap_err()
                .contains("0..=32")
        );
        assert!("::/129".parse::<Cidr>().unwrap_err().contains("0..=128"));
        assert!(
            "example.com"
                .parse::<Cidr>()
                .unwrap_err()
                .contains("not an address")
        );
        assert!("10.0.0.0/x".parse::<Cidr>().is_err());
    }

    #[test]
    fn membership_follows_the_prefix() {
        let n = net("192.0.2.0/24");
        assert!(n.contains("192.0.2.255".parse().unwrap()));
        assert!(!n.contains("192.0.3.0".parse().unwrap()));
        assert!(net("0.0.0.0/0").contains("203.0.113.9".parse().unwrap()));
        assert!(net("10.1.2.3/32").contains("10.1.2.3".parse().unwrap()));
        assert!(!net("10.1.2.3/32").contains("10.1.2.4".parse().unwrap()));
        let v6 = net("2001:db8:1::/48");
        assert!(v6.contains("2001:db8:1:ffff::1".parse().unwrap()));
        assert!(!v6.contains("2001:db8:2::1".parse().unwrap()));
        assert!(
            !v6.contains("192.0.2.1".parse().unwrap()),
            "families never mix"
        );
        // A dual-stack socket sees an IPv4 client as ::ffff:a.b.c.d.
        assert!(n.contains("::ffff:192.0.2.9".parse().unwrap()));
    }

    #[test]
    fn an_empty_list_allows_everyone_and_a_list_only_its_networks() {
        let open = AllowList::default();
        assert!(open.is_open() && open.allows(&raw("203.0.113.9:5000")));
        let list = AllowList::new(vec![net("127.0.0.1"), net("fd00::/8")]);
        assert!(!list.is_open());
        assert!(list.allows(&raw("127.0.0.1:40000")));
        assert!(!list.allows(&raw("127.0.0.2:40000")));
        assert!(list.allows(&raw("[fd12::1]:40000")));
        assert!(!list.allows(&raw("[2001:db8::1]:40000")));
    }
}
