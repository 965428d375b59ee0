//! Peers found while running: a peers file re-read when it changes, DNS
//! names (every A/AAAA address) and SRV names, each asked again every
//! `--discover-every`; then the subset this agent probes ([`super::subset`]).
//!
//! Every source keeps its last good answer: a failure (a timeout, SERVFAIL,
//! a peers file that no longer parses) is counted and reported, and the
//! peers it gave before are still probed. A peer that no longer appears is
//! dropped at the next round and its series are removed, so Prometheus
//! marks them stale at its next scrape.
//!
//! The rounds run on a thread of their own ([`Discoverer`]): a DNS server
//! that takes seconds to answer delays no scrape and no window.

pub mod dns;

use super::subset::{self, Choice, Host};
use crate::error::AppError;
use crate::plan::agent::labels::{self, Labels};
use crate::plan::agent::load::{PeerEntry, PeerMaker};
use crate::plan::agent::{Chosen, DiscoveryPlan, PeerConfig};
use dns::Resolver;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant, SystemTime};

/// How often the peers file's modification time is looked at.
const FILE_CHECK: Duration = Duration::from_secs(1);

/// This host as discovery sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Me {
    /// Its name (the subset's hash input, and never a peer of itself).
    pub name: String,
    /// Its labels (its tier's value among them).
    pub labels: Labels,
    /// Where its reflector answers: a discovered peer there is itself.
    pub reflect: Option<SocketAddr>,
}

/// Where a discovered peer is.
#[derive(Debug, Clone)]
enum Target {
    /// A peers-file table, layered as the agent's own peers are.
    Entry(Box<PeerEntry>),
    /// An address from DNS.
    Addr(SocketAddr),
    /// An SRV target whose address the answer did not carry: asked once
    /// chosen.
    Host(String, u16),
}

/// A host one source named.
#[derive(Debug, Clone)]
struct Found {
    name: String,
    labels: Labels,
    target: Target,
}

/// One source and its last good answer.
#[derive(Debug, Clone)]
struct Source {
    /// `file PATH`, `dns NAME:PORT`, `srv NAME`: how reports name it.
    key: String,
    kind: Kind,
    found: Vec<Found>,
    /// Rounds that failed, all told.
    failures: u64,
    /// When it last answered (Unix time).
    last_ok: Option<SystemTime>,
    /// The peers file's (modified, length) when last read.
    stamp: Option<(SystemTime, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    File(PathBuf),
    /// A name, its port, and the labels it gives.
    Dns(String, u16, Labels),
    Srv(String, Labels),
}

/// Each source's state, for `/metrics`, the banner and `--check`.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceStatus {
    /// How it is named (`srv _synapse._udp.fleet.test`).
    pub key: String,
    /// Hosts its last good answer named.
    pub hosts: usize,
    /// Failed rounds, all told.
    pub failures: u64,
    /// When it last answered, Unix seconds.
    pub last_ok_s: Option<f64>,
}

/// A round's outcome: the discovered peers to probe, and what each source
/// did.
#[derive(Debug, Clone)]
pub struct Round {
    /// The chosen discovered peers, made ready to probe.
    pub peers: Vec<PeerConfig>,
    /// Hosts discovered, all sources together (this one excepted).
    pub hosts: usize,
    /// Each source's state.
    pub sources: Vec<SourceStatus>,
    /// What went wrong this round, one line each.
    pub errors: Vec<String>,
}

/// Everything a round needs, owned by whoever runs it.
#[derive(Debug, Clone)]
pub struct Discovery {
    plan: DiscoveryPlan,
    me: Me,
    maker: PeerMaker,
    sources: Vec<Source>,
    /// Names and addresses of the static peers: never discovered again.
    taken: Vec<(String, SocketAddr)>,
}

impl Discovery {
    /// The sources of `plan`, none asked yet.
    pub fn new(plan: DiscoveryPlan, me: Me, maker: PeerMaker, statics: &[PeerConfig]) -> Self {
        let mut kinds: Vec<Kind> = Vec::new();
        kinds.extend(plan.peers_file.clone().map(Kind::File));
        kinds.extend(
            plan.dns
                .iter()
                .map(|(n, p, l)| Kind::Dns(n.clone(), *p, l.clone())),
        );
        kinds.extend(
            plan.srv
                .iter()
                .map(|(n, l)| Kind::Srv(n.clone(), l.clone())),
        );
        let sources = kinds
            .into_iter()
            .map(|kind| Source {
                key: match &kind {
                    Kind::File(p) => format!("file {}", p.display()),
                    Kind::Dns(n, port, _) => format!("dns {n}:{port}"),
                    Kind::Srv(n, _) => format!("srv {n}"),
                },
                kind,
                found: Vec::new(),
                failures: 0,
                last_ok: None,
                stamp: None,
            })
            .collect();
        Self {
            plan,
            me,
            maker,
            sources,
            taken: statics.iter().map(|p| (p.name.clone(), p.addr)).collect(),
        }
    }

    /// Takes over `old`'s last good answers (and counts) for the sources
    /// both have: a reload forgets nothing discovery knew.
    pub fn inherit(&mut self, old: &Discovery) {
        for s in &mut self.sources {
            if let Some(o) = old.sources.iter().find(|o| o.kind == s.kind) {
                s.found.clone_from(&o.found);
                s.failures = o.failures;
                s.last_ok = o.last_ok;
            }
        }
    }

    /// Asks every source (or, with `files_only`, re-reads the peers file
    /// if it changed) and chooses again. `strict`: a peers file that does
    /// not parse is an error (at start), not a failure to count.
    /// `None`: only the file was to be looked at, and it had not changed.
    pub fn round(
        &mut self,
        resolver: Option<&Resolver>,
        files_only: bool,
        strict: bool,
    ) -> Result<Option<Round>, AppError> {
        let mut errors = Vec::new();
        let mut asked = 0;
        for s in &mut self.sources {
            let fetched = match &s.kind {
                Kind::File(path) => match file_stamp(path) {
                    stamp if files_only && stamp == s.stamp && s.last_ok.is_some() => continue,
                    stamp => read_file(path, &self.plan.name_rules).map(|f| (f, stamp)),
                },
                _ if files_only => continue,
                Kind::Dns(name, port, given) => {
                    ask_dns(resolver, name, *port, given).map(|f| (f, None))
                }
                Kind::Srv(name, given) => {
                    ask_srv(resolver, name, given, &self.plan.name_rules).map(|f| (f, None))
                }
            };
            asked += 1;
            match fetched {
                Ok((found, stamp)) => {
                    s.found = found;
                    s.stamp = stamp;
                    s.last_ok = Some(SystemTime::now());
                }
                Err(e) if strict && matches!(s.kind, Kind::File(_)) => return Err(e),
                Err(e) => {
                    s.failures += 1;
                    errors.push(format!("{}: {e} (its last good answer is kept)", s.key));
                }
            }
        }
        if files_only && asked == 0 {
            return Ok(None);
        }
        let (peers, hosts, notes) = self.choose_and_make(resolver);
        errors.extend(notes);
        Ok(Some(Round {
            peers,
            hosts,
            sources: self.statuses(),
            errors,
        }))
    }

    fn statuses(&self) -> Vec<SourceStatus> {
        self.sources
            .iter()
            .map(|s| SourceStatus {
                key: s.key.clone(),
                hosts: s.found.len(),
                failures: s.failures,
                last_ok_s: s
                    .last_ok
                    .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                    .map(|d| d.as_secs_f64()),
            })
            .collect()
    }

    /// Every source's hosts once (the first source naming one wins), less
    /// this host and the static peers; the subset of them; each made a
    /// peer. Returns the peers, the hosts discovered, and why any chosen
    /// one could not be made.
    fn choose_and_make(
        &self,
        resolver: Option<&Resolver>,
    ) -> (Vec<PeerConfig>, usize, Vec<String>) {
        let mut all: Vec<&Found> = Vec::new();
        for f in self.sources.iter().flat_map(|s| &s.found) {
            let known = all.iter().any(|a| a.name == f.name);
            let static_name = self.taken.iter().any(|(n, _)| *n == f.name);
            if !known && !static_name && !self.is_me(f) {
                all.push(f);
            }
        }
        let key = self.plan.tier_label.as_deref();
        fn tier_of<'l>(key: Option<&str>, l: &'l Labels) -> Option<&'l str> {
            key.and_then(|k| l.get(k)).map(String::as_str)
        }
        let hosts: Vec<Host<'_>> = all
            .iter()
            .map(|f| Host {
                name: &f.name,
                tier: tier_of(key, &f.labels),
            })
            .collect();
        let me = Host {
            name: &self.me.name,
            tier: tier_of(key, &self.me.labels),
        };
        let chosen = subset::choose(
            me,
            &hosts,
            Choice {
                fanout: self.plan.fanout,
            },
        );
        let mut peers: Vec<PeerConfig> = Vec::with_capacity(chosen.len());
        let mut notes = Vec::new();
        for i in chosen {
            let how = if me.tier.is_some() && hosts[i].tier == me.tier {
                Chosen::Tier
            } else {
                Chosen::Fanout
            };
            match self.make(all[i], resolver, how) {
                Ok(p) if self.taken.iter().any(|(_, a)| *a == p.addr) => {}
                Ok(p)
                    if peers
                        .iter()
                        .any(|o| o.addr == p.addr && o.transport == p.transport) =>
                {
                    notes.push(format!(
                        "{}: {} is another discovered peer's address",
                        p.name, p.addr
                    ));
                }
                Ok(p) => peers.push(p),
                Err(e) => notes.push(format!("{}: {e}", all[i].name)),
            }
        }
        (peers, all.len(), notes)
    }

    /// Whether `f` is this host: its name, or its reflector's address.
    fn is_me(&self, f: &Found) -> bool {
        let at_my_reflector = match (&f.target, self.me.reflect) {
            (Target::Addr(a), Some(r)) => *a == r,
            _ => false,
        };
        f.name == self.me.name || at_my_reflector
    }

    /// A chosen host as a peer: layered like the agent's own peers.
    fn make(
        &self,
        f: &Found,
        resolver: Option<&Resolver>,
        how: Chosen,
    ) -> Result<PeerConfig, AppError> {
        let entry = match &f.target {
            Target::Entry(e) => (**e).clone(),
            Target::Addr(a) => PeerEntry::discovered(&f.name, &a.to_string(), f.labels.clone()),
            Target::Host(host, port) => {
                let r = resolver.ok_or_else(|| AppError::Usage("no resolver".into()))?;
                let ip = r
                    .lookup_ip(host)
                    .map_err(|e| AppError::Usage(e.to_string()))?
                    .into_iter()
                    .next()
                    .ok_or_else(|| AppError::Usage(format!("{host}: no address")))?;
                let at = SocketAddr::new(ip, *port);
                PeerEntry::discovered(&f.name, &at.to_string(), f.labels.clone())
            }
        };
        let peer = self.maker.make(entry.chosen(how))?;
        if self.me.reflect == Some(peer.addr) {
            return Err(AppError::Usage(format!(
                "{} is this agent's own reflector",
                peer.addr
            )));
        }
        Ok(peer)
    }
}

/// A file's (modified, length), to see it change.
fn file_stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// The peers file's tables, each with its labels (its own `label` key,
/// then those its name gives).
fn read_file(path: &Path, rules: &[(String, usize)]) -> Result<Vec<Found>, AppError> {
    let entries = crate::plan::agent::load::read_peers_file(path)?;
    Ok(entries
        .into_iter()
        .map(|mut e| {
            let mut l = labels::from_name(&e.name, rules);
            l.append(&mut e.labels);
            e.labels = l.clone();
            Found {
                name: e.name.clone(),
                labels: l,
                target: Target::Entry(Box::new(e)),
            }
        })
        .collect())
}

/// `--peers-dns NAME:PORT`: every address of NAME, each a peer named by
/// its address, with the labels the option gives.
fn ask_dns(
    r: Option<&Resolver>,
    name: &str,
    port: u16,
    given: &Labels,
) -> Result<Vec<Found>, AppError> {
    let r = r.ok_or_else(no_resolver)?;
    let ips = r
        .lookup_ip(name)
        .map_err(|e| AppError::Usage(e.to_string()))?;
    Ok(ips
        .into_iter()
        .map(|ip| Found {
            name: ip.to_string(),
            labels: given.clone(),
            target: Target::Addr(SocketAddr::new(ip, port)),
        })
        .collect())
}

/// `--peers-srv NAME`: each SRV record a peer named by its target, its
/// labels from that name and the option.
fn ask_srv(
    r: Option<&Resolver>,
    name: &str,
    given: &Labels,
    rules: &[(String, usize)],
) -> Result<Vec<Found>, AppError> {
    let r = r.ok_or_else(no_resolver)?;
    let records = r
        .lookup_srv(name)
        .map_err(|e| AppError::Usage(e.to_string()))?;
    Ok(records
        .into_iter()
        .map(|s| Found {
            labels: {
                let mut l = labels::from_name(&s.target, rules);
                l.extend(given.clone());
                l
            },
            target: match s.addrs.first() {
                Some(ip) => Target::Addr(SocketAddr::new(*ip, s.port)),
                None => Target::Host(s.target.clone(), s.port),
            },
            name: s.target,
        })
        .collect())
}

fn no_resolver() -> AppError {
    AppError::Usage("no nameserver in /etc/resolv.conf".into())
}

/// What the discovery thread is told.
#[derive(Debug)]
enum Command {
    /// Ask every source now (SIGHUP).
    Now,
    /// A reloaded configuration's discovery, to run from now on.
    Replace(Box<Discovery>),
}

/// The discovery thread: a round every `--discover-every`, the peers file
/// looked at every second, and a round at once when asked.
#[derive(Debug)]
pub struct Discoverer {
    rounds: Receiver<Round>,
    commands: Sender<Command>,
}

impl Discoverer {
    /// Starts the thread with `d`, whose first round has been run.
    pub fn start(d: Discovery) -> Result<Self, AppError> {
        let (round_tx, rounds) = mpsc::channel();
        let (commands, command_rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("synapse-discovery".into())
            .spawn(move || discover_loop(d, &command_rx, &round_tx))
            .map_err(|e| AppError::Runtime(anyhow::anyhow!("cannot start discovery: {e}")))?;
        Ok(Self { rounds, commands })
    }

    /// The latest round since the last call, if one ended.
    pub fn latest(&self) -> Option<Round> {
        self.rounds.try_iter().last()
    }

    /// Asks every source again now.
    pub fn now(&self) {
        let _ = self.commands.send(Command::Now);
    }

    /// Runs `d` from now on (its sources' state starts afresh).
    pub fn replace(&self, d: Discovery) {
        let _ = self.commands.send(Command::Replace(Box::new(d)));
    }
}

/// The thread's loop; it ends when the agent drops its [`Discoverer`].
fn discover_loop(mut d: Discovery, commands: &Receiver<Command>, rounds: &Sender<Round>) {
    let mut next = Instant::now() + d.plan.every;
    loop {
        let wait = next
            .saturating_duration_since(Instant::now())
            .min(FILE_CHECK);
        let full = match commands.recv_timeout(wait) {
            Ok(Command::Now) => true,
            Ok(Command::Replace(mut new)) => {
                new.inherit(&d);
                d = *new;
                true
            }
            Err(RecvTimeoutError::Timeout) => Instant::now() >= next,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        if full {
            next = Instant::now() + d.plan.every;
        }
        let resolver = Resolver::system().ok();
        // A file check that found nothing new says nothing.
        if let Ok(Some(round)) = d.round(resolver.as_ref(), !full, false)
            && rounds.send(round).is_err()
        {
            return;
        }
    }
}

/// The plan's own labels and name for this host: `--label` over what the
/// name rules read off `--name`.
pub fn me_of(name: &str, own: &Labels, plan: &DiscoveryPlan, reflect: Option<SocketAddr>) -> Me {
    let mut labels = labels::from_name(name, &plan.name_rules);
    labels.extend(own.clone());
    Me {
        name: name.to_string(),
        labels,
        reflect: reflect.filter(|r| !r.ip().is_unspecified()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use crate::plan::agent::load::{Sources, load};

    /// A discovery over the peers file `path` (and whatever else `cli`
    /// adds), as an agent named `me` would run it.
    fn discovery(dir: &Path, path: &Path, cli: &[(&str, &str)]) -> Discovery {
        let main = dir.join("config.toml");
        std::fs::write(&main, "").unwrap();
        let file = path.display().to_string();
        let mut typed: Vec<(&str, &str)> = vec![("reflect", "none"), ("peers_file", &file)];
        typed.extend_from_slice(cli);
        let loaded = load(&Sources {
            typed: Settings::of(&typed),
            config: Some(main),
        })
        .unwrap();
        let c = &loaded.cfg;
        let me = me_of(&c.name, &c.labels, &c.discovery, c.reflect);
        Discovery::new(c.discovery.clone(), me, loaded.maker.clone(), &c.peers)
    }

    fn names(r: &Round) -> Vec<(&str, Chosen)> {
        r.peers
            .iter()
            .map(|p| (p.name.as_str(), p.chosen))
            .collect()
    }

    #[test]
    fn a_failed_source_keeps_its_last_good_answer_and_a_gone_peer_goes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("peers.toml");
        let table = |n: &str, ip: &str, rack: &str| {
            format!("[peers.{n}]\naddress = \"{ip}\"\nlabel = [\"rack={rack}\"]\n")
        };
        std::fs::write(
            &path,
            table("b", "127.0.3.2", "r1") + &table("c", "127.0.3.3", "r2"),
        )
        .unwrap();
        let mut d = discovery(
            dir.path(),
            &path,
            &[("name", "a"), ("label", "rack=r1"), ("tier_label", "rack")],
        );
        let r = d.round(None, false, true).unwrap().unwrap();
        assert_eq!(names(&r), [("b", Chosen::Tier), ("c", Chosen::Fanout)]);
        assert_eq!(
            r.peers[0].labels.get("rack").map(String::as_str),
            Some("r1")
        );
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        // Unchanged: a file check finds nothing to say.
        assert!(d.round(None, true, false).unwrap().is_none());
        // Broken: counted and reported, the last good peers kept.
        std::fs::write(&path, "[peers.b\n").unwrap();
        let r = d.round(None, true, false).unwrap().unwrap();
        assert_eq!(names(&r).len(), 2);
        assert_eq!(r.sources[0].failures, 1);
        assert!(
            r.errors[0].contains("not valid TOML")
                && r.errors[0].contains("last good answer is kept"),
            "{:?}",
            r.errors
        );
        // At start the same file is an error.
        assert!(d.round(None, false, true).is_err());
        // c gone: no longer probed.
        std::fs::write(&path, table("b", "127.0.3.2", "r1") + "\n").unwrap();
        let r = d.round(None, true, false).unwrap().unwrap();
        assert_eq!(names(&r), [("b", Chosen::Tier)]);
        assert_eq!((r.hosts, r.sources[0].hosts), (1, 1));
    }

    #[test]
    fn this_host_is_never_its_own_peer_and_a_dead_dns_is_a_failure_not_an_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("peers.toml");
        std::fs::write(
            &path,
            "[peers.a]\naddress = \"127.0.3.1\"\n[peers.b]\naddress = \"127.0.3.2\"\n",
        )
        .unwrap();
        let mut d = discovery(
            dir.path(),
            &path,
            &[("name", "a"), ("peers_srv", "_s._udp.fleet.test")],
        );
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let r = Resolver::only(silent.local_addr().unwrap(), Duration::from_secs(1));
        let r = d.round(Some(&r), false, true).unwrap().unwrap();
        assert_eq!(names(&r), [("b", Chosen::Fanout)], "a is this host");
        assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
        assert!(
            r.errors[0].starts_with("srv _s._udp.fleet.test: "),
            "{:?}",
            r.errors
        );
        assert_eq!(r.sources[1].failures, 1);
        assert_eq!(r.sources[1].last_ok_s, None);
    }
}
