//! Which discovered peers this agent probes: a bounded, stable subset.
//!
//! Every agent of a fleet sees the same list of hosts (discovery gives it)
//! and chooses its own subset from it, with no coordination:
//!
//! - **Tier:** the peers that share this host's value of the tier label
//!   (`--tier-label rack`) are always probed: a rack is measured as a full
//!   mesh (Pingmesh's and UdpPinger's first tier).
//! - **Fanout:** beyond the tier, `--fanout N` peers by rendezvous hashing
//!   on (this host, peer) over N hash rings. On ring `k` every host sits at
//!   `H(k, host)`; this host's weight for peer `p` is the clockwise
//!   distance from itself to `p`, and the lightest peer not yet chosen is
//!   ring `k`'s pick. The choice depends on the pair only, so it is stable
//!   (restarts, reloads and other hosts' order move nothing), and a host
//!   that joins or leaves moves about one edge per ring: ~N edges in the
//!   whole fleet, ~N/size for each host.
//!
//! Why rings and not plain highest-random-weight (each host's N heaviest
//! peers under `H(host, peer)`): with HRW a host's in-degree (how many
//! hosts probe it) is binomial, N ± √N, so at N = 5 one host in thirteen is
//! probed by fewer than 2 or more than 8 others, and a few in a thousand
//! by nobody. On a ring each host is the first one after exactly one
//! predecessor, so it is probed by N hosts (one per ring), give or take the
//! collisions between rings. `simulation` below measures both on 10,000
//! hosts.

use std::collections::HashSet;

/// A host as the subset sees it: its name (the hash's input) and, when
/// tiers are on, its value of the tier label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Host<'a> {
    /// The name every agent knows this host by (`--name`, the SRV target,
    /// the peers file's table name).
    pub name: &'a str,
    /// Its value of the tier label (`None`: it has none).
    pub tier: Option<&'a str>,
}

/// What the subset is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    /// Peers beyond the tier (`None`: all of them).
    pub fanout: Option<usize>,
}

/// 64 bits of a string under ring `ring`: FNV-1a, then SplitMix64's
/// finaliser so that names differing in one character land far apart.
pub fn ring_hash(ring: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ ring.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix(h)
}

/// SplitMix64's finaliser: every input bit moves every output bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The indices into `hosts` that `me` probes: its tier, then its fanout
/// beyond it (in ring order). `me` itself, if listed, is never chosen.
pub fn choose(me: Host<'_>, hosts: &[Host<'_>], choice: Choice) -> Vec<usize> {
    let same_tier = |h: &Host<'_>| me.tier.is_some() && h.tier == me.tier;
    let mut chosen: Vec<usize> = (0..hosts.len())
        .filter(|&i| hosts[i].name != me.name && same_tier(&hosts[i]))
        .collect();
    let beyond: Vec<usize> = (0..hosts.len())
        .filter(|&i| hosts[i].name != me.name && !same_tier(&hosts[i]))
        .collect();
    let Some(fanout) = choice.fanout.filter(|&n| n < beyond.len()) else {
        chosen.extend(beyond);
        return chosen;
    };
    let names: Vec<&str> = beyond.iter().map(|&i| hosts[i].name).collect();
    chosen.extend(
        on_rings(me.name, &names, fanout)
            .into_iter()
            .map(|j| beyond[j]),
    );
    chosen
}

/// `fanout` of `names` (all other than `me`, fewer than there are) by
/// their clockwise distance from `me` on rings 0, 1, …: each ring adds the
/// nearest one not chosen yet.
fn on_rings(me: &str, names: &[&str], fanout: usize) -> Vec<usize> {
    let mut picked = Vec::with_capacity(fanout);
    let mut taken = HashSet::with_capacity(fanout);
    for ring in 0..fanout as u64 {
        let origin = ring_hash(ring, me);
        let nearest = (0..names.len())
            .filter(|i| !taken.contains(i))
            .min_by_key(|&i| (ring_hash(ring, names[i]).wrapping_sub(origin), names[i]));
        if let Some(i) = nearest {
            taken.insert(i);
            picked.push(i);
        }
    }
    picked
}

/// Plain highest-random-weight: the `fanout` peers heaviest under
/// `H(me, peer)`. Kept for the simulation's comparison only.
#[cfg(test)]
fn highest_random_weight(me: &str, names: &[&str], fanout: usize) -> Vec<usize> {
    let mut by_weight: Vec<(u64, usize)> = (0..names.len())
        .filter(|&i| names[i] != me)
        .map(|i| (ring_hash(ring_hash(0, me), names[i]), i))
        .collect();
    by_weight.sort_unstable_by(|a, b| b.cmp(a));
    by_weight.into_iter().take(fanout).map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts<'a>(names: &'a [String], tiers: &'a [String]) -> Vec<Host<'a>> {
        names
            .iter()
            .zip(tiers)
            .map(|(n, t)| Host {
                name: n,
                tier: Some(t),
            })
            .collect()
    }

    fn fleet(n: usize, rack_size: usize) -> (Vec<String>, Vec<String>) {
        let names = (0..n).map(|i| format!("h{i}.fleet.test")).collect();
        let racks = (0..n).map(|i| format!("r{}", i / rack_size)).collect();
        (names, racks)
    }

    #[test]
    fn the_tier_is_always_probed_and_the_fanout_is_exact_beyond_it() {
        let (names, racks) = fleet(30, 3);
        let all = hosts(&names, &racks);
        for me in &all {
            let got = choose(*me, &all, Choice { fanout: Some(5) });
            let tier = got.iter().filter(|&&i| all[i].tier == me.tier).count();
            assert_eq!(tier, 2, "{}'s rack-mates", me.name);
            assert_eq!(got.len(), 2 + 5, "{}: 5 beyond its rack", me.name);
            assert!(got.iter().all(|&i| all[i].name != me.name), "never itself");
            let unique: HashSet<_> = got.iter().collect();
            assert_eq!(unique.len(), got.len());
        }
    }

    #[test]
    fn without_a_fanout_or_with_few_hosts_everyone_is_probed() {
        let (names, racks) = fleet(6, 3);
        let all = hosts(&names, &racks);
        assert_eq!(choose(all[0], &all, Choice { fanout: None }).len(), 5);
        assert_eq!(choose(all[0], &all, Choice { fanout: Some(3) }).len(), 5);
        assert_eq!(choose(all[0], &all, Choice { fanout: Some(2) }).len(), 4);
        let untiered = Host {
            name: "h0.fleet.test",
            tier: None,
        };
        // No tier value of its own: nobody is a rack-mate.
        assert_eq!(choose(untiered, &all, Choice { fanout: Some(2) }).len(), 2);
    }

    #[test]
    fn the_choice_does_not_depend_on_the_order_of_the_list() {
        let (names, racks) = fleet(50, 5);
        let all = hosts(&names, &racks);
        let mut reversed = all.clone();
        reversed.reverse();
        let me = all[7];
        let pick = |list: &[Host<'_>]| -> Vec<String> {
            let mut v: Vec<String> = choose(me, list, Choice { fanout: Some(6) })
                .into_iter()
                .map(|i| list[i].name.to_string())
                .collect();
            v.sort();
            v
        };
        assert_eq!(pick(&all), pick(&reversed));
    }

    #[test]
    fn hashes_are_stable_across_builds() {
        // A fleet of mixed versions must agree on every subset.
        assert_eq!(ring_hash(0, ""), mix(0xcbf2_9ce4_8422_2325));
        assert_eq!(ring_hash(3, "h1.fleet.test"), 4_746_009_067_318_993_855);
    }
}

/// The subset choice on a fleet of 10,000: in-degree, churn on join and
/// leave, and the N² baseline, for the rings and for plain HRW.
#[cfg(test)]
mod simulation {
    use super::*;

    const HOSTS: usize = 10_000;
    const FANOUT: usize = 5;

    type Pick = fn(&str, &[&str], usize) -> Vec<usize>;

    fn rings(me: &str, names: &[&str], fanout: usize) -> Vec<usize> {
        let others: Vec<usize> = (0..names.len()).filter(|&i| names[i] != me).collect();
        let list: Vec<&str> = others.iter().map(|&i| names[i]).collect();
        on_rings(me, &list, fanout)
            .into_iter()
            .map(|j| others[j])
            .collect()
    }

    /// Every host's chosen peers, by name.
    fn subsets(names: &[&str], pick: Pick) -> Vec<HashSet<String>> {
        names
            .iter()
            .map(|me| {
                pick(me, names, FANOUT)
                    .into_iter()
                    .map(|i| names[i].to_string())
                    .collect()
            })
            .collect()
    }

    fn in_degrees(names: &[&str], subsets: &[HashSet<String>]) -> Vec<usize> {
        names
            .iter()
            .map(|n| subsets.iter().filter(|s| s.contains(*n)).count())
            .collect()
    }

    /// Edges that differ between two fleets' subsets, over the hosts both
    /// have.
    fn moved(a: &[&str], sa: &[HashSet<String>], b: &[&str], sb: &[HashSet<String>]) -> usize {
        a.iter()
            .zip(sa)
            .filter_map(|(n, s)| {
                let j = b.iter().position(|m| m == n)?;
                Some(s.difference(&sb[j]).count())
            })
            .sum()
    }

    struct Outcome {
        min: usize,
        max: usize,
        outside: usize,
        unprobed: usize,
        join_moves: usize,
        leave_moves: usize,
    }

    fn run(pick: Pick, names: &[&str]) -> Outcome {
        // The fleet of 10,000 is simulated on its first 2,000 hosts for the
        // churn (each host's choice scans every other: N² hashes), and the
        // in-degree on all of them with the rings' own cost.
        let before = subsets(names, pick);
        let deg = in_degrees(names, &before);
        let joined: Vec<&str> = names
            .iter()
            .copied()
            .chain(std::iter::once("new.fleet.test"))
            .collect();
        let after_join = subsets(&joined, pick);
        let left: Vec<&str> = names[1..].to_vec();
        let after_leave = subsets(&left, pick);
        Outcome {
            min: *deg.iter().min().unwrap_or(&0),
            max: *deg.iter().max().unwrap_or(&0),
            outside: deg.iter().filter(|&&d| d.abs_diff(FANOUT) > 3).count(),
            unprobed: deg.iter().filter(|&&d| d == 0).count(),
            join_moves: moved(names, &before, &joined, &after_join),
            leave_moves: moved(&left, &before[1..], &left, &after_leave),
        }
    }

    /// The figures docs/agent.md quotes: run with `--nocapture`.
    #[test]
    fn ten_thousand_hosts() {
        let all: Vec<String> = (0..HOSTS).map(|i| format!("h{i}.fleet.test")).collect();
        let names: Vec<&str> = all.iter().map(String::as_str).collect();
        // In-degree over all 10,000 hosts with the rings (10,000 × 10,000
        // × 5 hashes would take minutes: the rings' choice is computed
        // from each ring's sorted order instead, the same function).
        let deg = ring_in_degrees(&names);
        let (lo, hi) = (deg.iter().min().copied(), deg.iter().max().copied());
        let outside = deg.iter().filter(|&&d| d.abs_diff(FANOUT) > 3).count();
        println!(
            "rings, {HOSTS} hosts, fanout {FANOUT}: in-degree {lo:?}..={hi:?}, {outside} outside 5 ± 3; \
             probes/s at 1/s each: {} (N²: {})",
            HOSTS * FANOUT,
            HOSTS * (HOSTS - 1)
        );
        assert_eq!(deg.iter().sum::<usize>(), HOSTS * FANOUT);
        assert_eq!(outside, 0, "every host is probed by 5 ± 3");
        assert!(
            lo >= Some(FANOUT - 2) && hi <= Some(FANOUT + 3),
            "{lo:?} {hi:?}"
        );

        // Churn and the comparison with HRW on 2,000 of them.
        let some = &names[..2_000];
        let r = run(rings, some);
        let h = run(highest_random_weight, some);
        for (what, o) in [("rings", &r), ("HRW", &h)] {
            println!(
                "{what}, 2,000 hosts: in-degree {}..={}, {} outside 5 ± 3, {} probed by nobody; \
                 a join moves {} edges, a leave {}",
                o.min, o.max, o.outside, o.unprobed, o.join_moves, o.leave_moves
            );
        }
        assert_eq!(r.outside, 0);
        assert_eq!(r.unprobed, 0);
        assert!(h.outside > 50, "HRW's binomial in-degree: {}", h.outside);
        // A join or a leave moves about one edge per ring: fanout, not a
        // share of the fleet.
        assert!(r.join_moves <= 2 * FANOUT, "join: {}", r.join_moves);
        assert!(r.leave_moves <= 2 * FANOUT, "leave: {}", r.leave_moves);
        assert!(h.join_moves <= 2 * FANOUT && h.leave_moves <= 2 * FANOUT);
    }

    /// In-degrees under the rings from each ring's sorted order: on ring
    /// `k` a host's pick is the next host clockwise not already picked on
    /// an earlier ring, which the sorted order gives in O(N log N).
    fn ring_in_degrees(names: &[&str]) -> Vec<usize> {
        let n = names.len();
        let mut picked: Vec<Vec<usize>> = vec![Vec::with_capacity(FANOUT); n];
        for ring in 0..FANOUT as u64 {
            let mut order: Vec<(u64, usize)> =
                (0..n).map(|i| (ring_hash(ring, names[i]), i)).collect();
            order.sort_unstable_by_key(|&(h, i)| (h, names[i]));
            for at in 0..n {
                let me = order[at].1;
                let next = (1..n)
                    .map(|step| order[(at + step) % n].1)
                    .find(|j| !picked[me].contains(j));
                if let Some(j) = next {
                    picked[me].push(j);
                }
            }
        }
        // The sorted walk is the same choice as `on_rings`: checked on a few.
        for me in [0, 1, n / 2, n - 1] {
            let direct: Vec<usize> = rings(names[me], names, FANOUT);
            assert_eq!(direct, picked[me], "host {me}");
        }
        let mut deg = vec![0; n];
        for p in picked.iter().flatten() {
            deg[*p] += 1;
        }
        deg
    }
}
