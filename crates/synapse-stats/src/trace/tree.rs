//! Several source ports to one destination (`--paths K`): the ECMP tree.
//! Ports whose probes met the same routers at every TTL took one path;
//! their tallies are added up, so each distinct path is judged on all of
//! its ports' probes. The link to blame is one every lossy path crosses
//! and no clean path does.

use super::hops::{HopFigures, figures};
use super::suspect::{Verdict, judge};
use super::{HopTally, PathTally};
use std::net::IpAddr;

/// One distinct path and the ports that took it.
#[derive(Debug, Clone, PartialEq)]
pub struct TreePath {
    /// Its ports, in the order given.
    pub ports: Vec<u16>,
    /// Its hops, over all of those ports' probes.
    pub hops: Vec<HopFigures>,
    /// Its verdict.
    pub verdict: Verdict,
}

/// A link, as its two ends' addresses (`None`: this host).
pub type Link = (Option<IpAddr>, IpAddr);

/// What the ports' traces say together.
#[derive(Debug, Clone, PartialEq)]
pub struct EcmpTree {
    /// The distinct paths, in order of their first port.
    pub paths: Vec<TreePath>,
    /// Links every path with a suspect crosses and no path without one
    /// does (empty when there is no lossy path, or no clean one to tell).
    pub common: Vec<Link>,
    /// The link to blame: every lossy path's suspect, when they agree and
    /// it is among `common`.
    pub blamed: Option<Link>,
}

/// The main responder of each TTL up to the path's end.
fn route(p: &PathTally) -> Vec<Option<IpAddr>> {
    let end = p.end().map_or(p.hops.len(), |(ttl, ..)| usize::from(ttl));
    p.hops[..end.min(p.hops.len())]
        .iter()
        .map(|h| {
            h.responders
                .iter()
                .max_by_key(|r| r.answers)
                .map(|r| r.addr)
        })
        .collect()
}

/// Whether two ports took the same route: as long, and the same router at
/// every TTL where both heard one (a hop silent for one port, a router
/// that rate-limited all its answers away, tells nothing apart).
fn same_route(a: &[Option<IpAddr>], b: &[Option<IpAddr>]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.is_none() || y.is_none() || x == y)
}

/// `b`'s counts added into `a`, TTL by TTL.
fn add(a: &mut PathTally, b: &PathTally) {
    if a.hops.len() < b.hops.len() {
        a.hops.resize_with(b.hops.len(), HopTally::default);
    }
    for (x, y) in a.hops.iter_mut().zip(&b.hops) {
        x.sent += y.sent;
        x.answered += y.answered;
        x.rtt_ns.extend_from_slice(&y.rtt_ns);
        for r in &y.responders {
            match x.responders.iter_mut().find(|q| q.addr == r.addr) {
                Some(q) => q.answers += r.answers,
                None => x.responders.push(r.clone()),
            }
        }
    }
}

/// The links of a path: this host to its first answering hop, then each
/// answering hop to the next.
fn links(hops: &[HopFigures]) -> Vec<Link> {
    let mut out = Vec::new();
    let mut prev = None;
    for h in hops.iter().filter(|h| h.answers()) {
        if let Some(&addr) = h.addresses.first() {
            out.push((prev, addr));
            prev = Some(addr);
        }
    }
    out
}

/// The tree of `traces` (one per port, to one destination).
pub fn tree(traces: &[PathTally]) -> EcmpTree {
    let mut groups: Vec<(Vec<Option<IpAddr>>, Vec<u16>, PathTally)> = Vec::new();
    for t in traces {
        let r = route(t);
        match groups.iter_mut().find(|g| same_route(&g.0, &r)) {
            Some(g) => {
                g.1.push(t.port);
                add(&mut g.2, t);
                for (mine, theirs) in g.0.iter_mut().zip(&r) {
                    *mine = mine.or(*theirs);
                }
            }
            None => groups.push((r, vec![t.port], t.clone())),
        }
    }
    let paths: Vec<TreePath> = groups
        .into_iter()
        .map(|(_, ports, tally)| {
            let hops = figures(&tally);
            let verdict = judge(&tally, &hops);
            TreePath {
                ports,
                hops,
                verdict,
            }
        })
        .collect();
    let lossy: Vec<&TreePath> = paths
        .iter()
        .filter(|p| matches!(p.verdict, Verdict::Suspect(_)))
        .collect();
    let clean: Vec<Vec<Link>> = paths
        .iter()
        .filter(|p| p.verdict == Verdict::NoSuspect)
        .map(|p| links(&p.hops))
        .collect();
    let common: Vec<Link> = match lossy.split_first() {
        Some((first, rest)) if !clean.is_empty() => links(&first.hops)
            .into_iter()
            .filter(|l| rest.iter().all(|p| links(&p.hops).contains(l)))
            .filter(|l| clean.iter().all(|c| !c.contains(l)))
            .collect(),
        _ => Vec::new(),
    };
    let suspects: Vec<Link> = lossy
        .iter()
        .filter_map(|p| match p.verdict {
            Verdict::Suspect(s) => Some((s.from.addr, s.to.addr?)),
            _ => None,
        })
        .collect();
    let blamed = suspects
        .first()
        .copied()
        .filter(|l| suspects.iter().all(|s| s == l) && common.contains(l));
    EcmpTree {
        paths,
        common,
        blamed,
    }
}

#[cfg(test)]
mod tests {
    use super::super::AnswerKind::*;
    use super::super::hops::tests::{hop, path};
    use super::*;

    fn on(port: u16, via: &str, echoed: u32) -> PathTally {
        PathTally {
            port,
            ..path(vec![
                hop("10.0.0.1", TimeExceeded, 80, 9),
                hop(via, TimeExceeded, 80, 80),
                hop("10.0.0.9", Echo, 80, echoed),
            ])
        }
    }

    /// Four ports over two next hops, loss past B: two paths, B's ports
    /// together, the link B → S blamed (R → B is common too, but no
    /// suspect).
    #[test]
    fn the_tree_groups_ports_and_blames_the_link_only_lossy_paths_share() {
        let t = tree(&[
            on(1, "10.0.0.2", 80),
            on(2, "10.0.0.3", 55),
            on(3, "10.0.0.2", 80),
            on(4, "10.0.0.3", 57),
        ]);
        assert_eq!(t.paths.len(), 2);
        assert_eq!(t.paths[0].ports, [1, 3]);
        assert_eq!(t.paths[1].ports, [2, 4]);
        assert_eq!(t.paths[1].hops[2].sent, 160, "two ports' probes");
        assert_eq!(t.paths[0].verdict, Verdict::NoSuspect);
        assert!(matches!(t.paths[1].verdict, Verdict::Suspect(_)));
        let (r, b, s) = ("10.0.0.1", "10.0.0.3", "10.0.0.9").to_owned_addrs();
        assert_eq!(t.common, [(Some(r), b), (Some(b), s)]);
        assert_eq!(t.blamed, Some((Some(b), s)));
    }

    /// A port whose first hop never answered (its router's answers all
    /// rate-limited away) still joins the path its other hops name.
    #[test]
    fn a_silent_hop_does_not_split_a_path() {
        let mut silent = on(2, "10.0.0.2", 80);
        silent.hops[0] = hop("10.0.0.1", TimeExceeded, 80, 0);
        let t = tree(&[on(1, "10.0.0.2", 80), silent, on(3, "10.0.0.3", 50)]);
        assert_eq!(t.paths.len(), 2);
        assert_eq!(t.paths[0].ports, [1, 2]);
    }

    #[test]
    fn without_a_clean_path_nothing_is_common() {
        let t = tree(&[on(1, "10.0.0.2", 50), on(2, "10.0.0.3", 55)]);
        assert!(
            t.paths
                .iter()
                .all(|p| matches!(p.verdict, Verdict::Suspect(_)))
        );
        assert!(t.common.is_empty());
        assert_eq!(t.blamed, None);
    }

    trait Addrs {
        fn to_owned_addrs(self) -> (IpAddr, IpAddr, IpAddr);
    }
    impl Addrs for (&str, &str, &str) {
        fn to_owned_addrs(self) -> (IpAddr, IpAddr, IpAddr) {
            (
                self.0.parse().unwrap(),
                self.1.parse().unwrap(),
                self.2.parse().unwrap(),
            )
        }
    }
}
