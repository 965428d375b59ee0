//! The multicast groups a reflector joins (`synapse server --join`), and
//! how its socket is bound so their traffic arrives.
//!
//! A socket bound to a unicast address receives no group datagram (the
//! kernel matches a datagram's destination against the bound address), so
//! a reflector that joins binds the wildcard address of its family on its
//! port instead, and joins on the interface that holds the address it was
//! asked to bind (or `--join-if`, or, on a wildcard, the interface the
//! route to the group names). It receives only the groups it joined
//! (`IP_MULTICAST_ALL` off), answers each group request to its sender's
//! unicast address, from its own unicast address, exactly as a unicast
//! one (or, asked to, to the group on the sender's port, as sockperf's
//! server does), and leaves every group when it stops.

use crate::EngineError;
use crate::sys::{interfaces, multicast};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;

/// One group to join: from any source, or from one source alone (SSM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Membership {
    /// The group: 224.0.0.0/4 or ff00::/8.
    pub group: IpAddr,
    /// Source-specific: only this sender's datagrams are received.
    pub source: Option<IpAddr>,
}

impl std::fmt::Display for Membership {
    /// `239.1.1.1`, or `232.1.1.1@192.0.2.10` (source-specific).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.source {
            None => write!(f, "{}", self.group),
            Some(s) => write!(f, "{}@{s}", self.group),
        }
    }
}

impl std::str::FromStr for Membership {
    type Err = String;

    /// `GROUP` or `GROUP@SOURCE`: a multicast address, and a unicast one of
    /// the same family.
    fn from_str(s: &str) -> Result<Self, String> {
        let (group, source) = match s.split_once('@') {
            Some((g, src)) => (g, Some(src)),
            None => (s, None),
        };
        let group: IpAddr = group
            .trim_matches(['[', ']'])
            .parse()
            .map_err(|_| format!("'{s}' is not a group address (GROUP or GROUP@SOURCE)"))?;
        if !group.is_multicast() {
            return Err(format!(
                "{group} is not a multicast group (224.0.0.0/4 or ff00::/8): --join takes a group"
            ));
        }
        let source = source
            .map(|src| {
                let ip: IpAddr = src
                    .trim_matches(['[', ']'])
                    .parse()
                    .map_err(|_| format!("'{src}' in '{s}' is not a source address"))?;
                if ip.is_multicast() || ip.is_unspecified() {
                    return Err(format!(
                        "{ip} in '{s}' is no sender's address: the source of GROUP@SOURCE is a unicast address"
                    ));
                }
                if ip.is_ipv4() != group.is_ipv4() {
                    return Err(format!(
                        "'{s}': the group and its source are of different IP versions"
                    ));
                }
                Ok(ip)
            })
            .transpose()?;
        Ok(Self { group, source })
    }
}

/// The groups a reflector joins, and where.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupJoins {
    /// Each group (none: a unicast reflector, bound as asked).
    pub memberships: Vec<Membership>,
    /// Join on this interface (`--join-if`) instead of the one that holds
    /// the bound address (or, on a wildcard, the route's).
    pub interface: Option<String>,
    /// Answer a group request to the group, on its sender's port, instead
    /// of to its sender (`--answer-to-group`): the way sockperf's server
    /// answers, heard by every member of the group on that port.
    pub answer_to_group: bool,
}

impl GroupJoins {
    /// Whether any group is joined.
    pub fn any(&self) -> bool {
        !self.memberships.is_empty()
    }

    /// Where a reflector asked to bind `bind` binds: the wildcard of its
    /// family on its port once it joins groups (a unicast address receives
    /// no group traffic), else `bind` itself.
    pub fn binding(&self, bind: SocketAddr) -> SocketAddr {
        if !self.any() || bind.ip().is_unspecified() {
            return bind;
        }
        let any = match bind {
            SocketAddr::V4(_) => IpAddr::from([0u8; 4]),
            SocketAddr::V6(_) => IpAddr::from([0u16; 8]),
        };
        SocketAddr::new(any, bind.port())
    }

    /// The interface the groups are joined on, for a reflector asked to
    /// bind `bind`: its name and index (`None`: the route's, index 0).
    fn interface_for(&self, bind: SocketAddr) -> Result<Option<(String, u32)>, EngineError> {
        let name = match &self.interface {
            Some(name) => name.clone(),
            None if bind.ip().is_unspecified() => return Ok(None),
            None => interfaces::interface_with_address(bind.ip())
                .ok()
                .flatten()
                .ok_or_else(|| EngineError::Bind {
                    addr: bind,
                    reason: "address is not local to this host".into(),
                })?,
        };
        let index = interfaces::index_of(&name).map_err(|_| EngineError::Join {
            group: self
                .memberships
                .first()
                .map(ToString::to_string)
                .unwrap_or_default(),
            reason: format!("there is no interface named '{name}' (see `ip link`)"),
        })?;
        Ok(Some((name, index)))
    }

    /// Joins every group on `fd` (bound by [`GroupJoins::binding`] for
    /// `bind`), receiving only those. One that cannot be joined is an
    /// error that says why; those joined before it are left.
    pub(super) fn join(&self, fd: RawFd, bind: SocketAddr) -> Result<Joined, EngineError> {
        let mut joined = Joined {
            fd,
            memberships: Vec::new(),
            interface: None,
            index: 0,
        };
        if !self.any() {
            return Ok(joined);
        }
        let ipv6 = bind.is_ipv6();
        if let Some(m) = self.memberships.iter().find(|m| m.group.is_ipv6() != ipv6) {
            return Err(EngineError::Join {
                group: m.to_string(),
                reason: format!("the group and --bind {bind} are of different IP versions"),
            });
        }
        if let Some((name, index)) = self.interface_for(bind)? {
            joined.interface = Some(name);
            joined.index = index;
        }
        multicast::receive_joined_only(fd, ipv6)
            .map_err(EngineError::io("cannot turn IP_MULTICAST_ALL off"))?;
        for m in &self.memberships {
            multicast::join(fd, m.group, m.source, joined.index).map_err(|e| {
                EngineError::Join {
                    group: m.to_string(),
                    reason: why_not_joined(&e, joined.interface.as_deref()),
                }
            })?;
            joined.memberships.push(*m);
        }
        Ok(joined)
    }
}

/// What a failed join means, in the user's terms.
fn why_not_joined(e: &io::Error, interface: Option<&str>) -> String {
    match (e.raw_os_error(), interface) {
        (Some(libc::ENODEV), None) => "no route to the group: add one (ip route add \
             224.0.0.0/4 dev IFACE, or ff00::/8 for IPv6) or name the interface with --join-if"
            .into(),
        (Some(libc::ENODEV | libc::EADDRNOTAVAIL), Some(i)) => {
            format!(
                "interface {i} cannot join it (is it up, with an address of the group's family?)"
            )
        }
        (Some(libc::EADDRINUSE), _) => "given twice".into(),
        (Some(libc::ENOBUFS), _) => {
            "too many groups for one socket (net.ipv4.igmp_max_memberships)".into()
        }
        _ => e.to_string(),
    }
}

/// The groups a socket joined; left again by [`Joined::leave`].
#[derive(Debug)]
pub struct Joined {
    fd: RawFd,
    /// What was joined.
    pub memberships: Vec<Membership>,
    /// The interface it was joined on (`None`: the route's).
    pub interface: Option<String>,
    index: u32,
}

impl Joined {
    /// Sends answers to the groups by the interface they were joined on
    /// (the route's when none was named): no route to a group is needed.
    pub(super) fn answer_by_interface(&self, ipv6: bool) -> Result<(), EngineError> {
        if self.index == 0 {
            return Ok(());
        }
        multicast::set_interface(self.fd, ipv6, self.index)
            .map_err(EngineError::io("cannot set the multicast interface"))
    }

    /// Leaves every group (the kernel tells the network: an IGMP or MLD
    /// leave), before the socket closes. Returns how many were left.
    pub(super) fn leave(&mut self) -> usize {
        let all = std::mem::take(&mut self.memberships);
        all.iter()
            .filter(|m| multicast::leave(self.fd, m.group, m.source, self.index).is_ok())
            .count()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn groups_parse_with_and_without_a_source_and_unicast_is_refused() {
        let m: Membership = "239.1.1.1".parse().unwrap();
        assert_eq!((m.group.to_string(), m.source), ("239.1.1.1".into(), None));
        let m: Membership = "232.1.1.1@10.0.0.7".parse().unwrap();
        assert_eq!(m.source, Some("10.0.0.7".parse().unwrap()));
        assert_eq!(m.to_string(), "232.1.1.1@10.0.0.7");
        let m: Membership = "ff3e::8000:1@2001:db8::7".parse().unwrap();
        assert!(m.group.is_ipv6() && m.source.is_some());
        let e = "10.0.0.1".parse::<Membership>().unwrap_err();
        assert_eq!(
            e,
            "10.0.0.1 is not a multicast group (224.0.0.0/4 or ff00::/8): --join takes a group"
        );
        assert!(
            "239.1.1.1@::1"
                .parse::<Membership>()
                .unwrap_err()
                .contains("different IP versions")
        );
        assert!(
            "239.1.1.1@239.1.1.2"
                .parse::<Membership>()
                .unwrap_err()
                .contains("unicast")
        );
        assert!(
            "nope"
                .parse::<Membership>()
                .unwrap_err()
                .contains("not a group address")
        );
    }

    #[test]
    fn joining_binds_the_wildcard_on_the_port_asked() {
        let joins = GroupJoins {
            memberships: vec!["239.1.1.1".parse().unwrap()],
            interface: None,
            ..GroupJoins::default()
        };
        let bind: SocketAddr = "10.0.0.2:7000".parse().unwrap();
        assert_eq!(joins.binding(bind), "0.0.0.0:7000".parse().unwrap());
        let v6: SocketAddr = "[2001:db8::2]:7000".parse().unwrap();
        assert_eq!(joins.binding(v6), "[::]:7000".parse().unwrap());
        assert_eq!(
            GroupJoins::default().binding(bind),
            bind,
            "no group: as asked"
        );
    }

    #[test]
    fn an_interface_that_does_not_exist_is_named() {
        let joins = GroupJoins {
            memberships: vec!["239.1.1.1".parse().unwrap()],
            interface: Some("nosuch0".into()),
            ..GroupJoins::default()
        };
        let s = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
        let bind = s.local_addr().unwrap();
        let e = joins
            .join(std::os::fd::AsRawFd::as_raw_fd(&s), bind)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "cannot join 239.1.1.1: there is no interface named 'nosuch0' (see `ip link`)"
        );
    }

    #[test]
    fn a_group_is_joined_on_loopback_and_left() {
        let joins = GroupJoins {
            memberships: vec!["239.255.77.2".parse().unwrap()],
            interface: Some("lo".into()),
            ..GroupJoins::default()
        };
        let s = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&s);
        let mut joined = joins.join(fd, s.local_addr().unwrap()).unwrap();
        assert_eq!(joined.interface.as_deref(), Some("lo"));
        assert_eq!(joined.leave(), 1);
        assert_eq!(joined.leave(), 0, "left once");
    }
}
