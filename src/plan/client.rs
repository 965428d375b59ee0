//! A client run's plan: its checks (addresses, budget, pacing, transport,
//! STAMP's options) and the engine's settings it gives.

use super::*;

/// A validated client run.
#[derive(Debug, Clone)]
pub struct ClientPlan {
    /// Who to measure.
    pub target: Target,
    /// Local address, if given.
    pub bind: Option<SocketAddr>,
    /// Every run option, resolved through the layers: the plan's own (it
    /// builds the engine's configuration from them).
    pub(in crate::plan) run: RunArgs,
    /// What the run does, as the sessions, reports and live display read it.
    pub settings: RunSettings,
    /// The packet budget in effect: the option, or [`DEFAULT_PACKETS`] for a
    /// headless run without a budget (`None`: by time, or until stopped).
    pub packets: Option<u64>,
    /// Client thread placement, validated.
    pub thread: ThreadPlacement,
    /// Placement of the in-process reflector (loopback only).
    pub reflector_thread: ThreadPlacement,
    /// How to show results.
    pub output: Output,
    /// Per-packet CSV log (`-`: standard output).
    pub log: Option<PathBuf>,
    /// How the log file is opened.
    pub log_opening: Opening,
    /// `--hdr-log`, `--hdr-interval`.
    pub hdr: HdrLogArgs,
    /// The configuration file's part in this run.
    pub profile: ProfileUse,
    /// What the user should be warned of before the run.
    pub warnings: Vec<String>,
    /// STAMP authenticated mode's key, read from `--hmac-key-file`.
    pub stamp_key: Option<StampKey>,
    /// A multicast run (the server a group): how its requests go out,
    /// `--mc-if` resolved to its interface's index.
    pub multicast: Option<MulticastOptions>,
}

/// How the run relates to the configuration file.
#[derive(Debug, Clone, Default)]
pub struct ProfileUse {
    /// The file (whether or not it exists).
    pub config_path: PathBuf,
    /// The profile in use, chosen or matched.
    pub name: Option<String>,
    /// Its baseline, if it has one.
    pub baseline: Option<Baseline>,
    /// `--save-profile NAME`.
    pub save_as: Option<String>,
    /// `--set-baseline` or `--add-to-baseline`.
    pub set_baseline: bool,
    /// `--add-to-baseline`: keep the baseline's runs and add this one.
    pub add_to_baseline: bool,
    /// `--fail-on-regression`.
    pub fail_on_regression: bool,
    /// `--min-effect PERCENT`.
    pub min_effect: Option<f64>,
    /// `--fail-on-inconclusive`.
    pub fail_on_inconclusive: bool,
    /// Things the user should be told before the run (which profile was
    /// matched, which options the command line overrode).
    pub notes: Vec<String>,
    /// Every option the run used, as a profile would store it.
    pub settings: Settings,
    /// `[defaults]` from the file, for runs planned later (role switches).
    pub defaults: Settings,
}

impl ClientPlan {
    /// The engine's settings for a run against `server`.
    pub fn client_config(&self, server: SocketAddr, ring_capacity: usize) -> ClientConfig {
        let r = &self.run;
        ClientConfig {
            server,
            bind: self.bind,
            packets: self.packets,
            duration: r.duration,
            warmup: r.warmup_packets(),
            timeout: r.clock.timeout_ms,
            size: r.packet.size,
            thread: self.thread,
            ring_capacity,
            timestamps: r.clock.timestamps,
            stamp: r.packet.stamp,
            ssid: r.packet.ssid.unwrap_or(0),
            stamp_key: self.stamp_key.clone(),
            stamp_format: r.packet.stamp_format.stamp_format,
            marks: r.packet.marks(),
            tlvs: r.packet.tlvs(),
            tx_stamp_every: r.tx_stamp_every.unwrap_or(if self.log.is_some() {
                1
            } else {
                DEFAULT_TX_STAMP_EVERY
            }),
            // A load run reads every probe's points, for its stages.
            log_capacity: if self.log.is_some() || self.settings.load.is_some() {
                LOG_RING
            } else {
                0
            },
            schedule: r.schedule(),
            transport: r.transport,
            connect_each: r.connect_each,
            phase: Duration::ZERO,
            keep_trying: false,
            give_up_after: self.settings.give_up_after,
            multicast: self.multicast.unwrap_or_default(),
        }
    }

    /// The payload size on the wire: STAMP packets are never shorter than
    /// 44 octets (112 authenticated), plus the RFC 8972 TLVs asked for.
    pub fn wire_size(&self) -> usize {
        let p = &self.run.packet;
        if self.multicast.is_some() && !p.stamp {
            return p.size.max(NAMED_SIZE);
        }
        if p.stamp {
            let sender =
                synapse_engine::protocol::StampSender::new(p.size, 0, self.stamp_key.clone());
            sender.with_tlvs(p.tlvs(), p.marks().unwrap_or(0)).size()
        } else {
            p.size
        }
    }

    /// The kind of run this is, as a baseline keeps it (and compares only
    /// runs of the same kind with).
    pub fn run_kind(&self) -> crate::config::RunKind {
        let s = &self.settings;
        let transport = match (s.transport, s.connect_each) {
            (synapse_engine::Transport::Udp, _) => "udp",
            (synapse_engine::Transport::Tcp, false) => "tcp",
            (synapse_engine::Transport::Tcp, true) => "tcp-crr",
        };
        let (ip, reflector) = match self.target {
            Target::Loopback => (4, "in-process"),
            Target::Remote(a) => (if a.is_ipv4() { 4 } else { 6 }, "remote"),
        };
        crate::config::RunKind {
            transport: transport.into(),
            pattern: s.pattern.name().into(),
            protocol: if s.stamp { "stamp" } else { "echo" }.into(),
            size: self.wire_size() as u64,
            interval_ns: s.schedule.map(|x| x.interval_ns()),
            dscp: self.run.packet.marks().map(|tos| tos >> 2),
            ip,
            reflector: reflector.into(),
        }
    }

    /// The profile that `--set-baseline` (or the display's `b`) writes to.
    pub fn baseline_profile(&self) -> Option<&str> {
        self.profile
            .save_as
            .as_deref()
            .or(self.profile.name.as_deref())
    }
}

/// Packets the per-packet log can fall behind by: over half a second of a
/// 100 k packets/s run, in 10.5 MiB (168-byte points), allocated only with
/// `--log`.
const LOG_RING: usize = 1 << 16;

/// Ping-pong with kernel stamps: TX stamps on one packet in this many, so
/// that under 0.4 % of round trips carry the stamping's cost: no
/// percentile up to p99 can be moved by it by more than that rank.
pub const DEFAULT_TX_STAMP_EVERY: u32 = 256;

/// `--stamp` with a `--size` below STAMP's 44 octets sends 44: said, when
/// someone chose the size (the default is the echo payload's).
pub(super) fn stamp_size_note(run: &RunArgs, chosen: &Settings) -> Option<String> {
    (run.packet.stamp && run.packet.size < stamp::PACKET_LEN && chosen.get("size").is_some()).then(
        || {
            format!(
                "--size {}: STAMP test packets are {} octets at least, so that is what is sent",
                run.packet.size,
                stamp::PACKET_LEN
            )
        },
    )
}

/// `--size` below a group echo request's room for the responder's name
/// sends that much: said, when someone chose the size.
pub(super) fn group_size_note(run: &RunArgs, chosen: &Settings, group: bool) -> Option<String> {
    (group && !run.packet.stamp && run.packet.size < NAMED_SIZE && chosen.get("size").is_some())
        .then(|| {
            format!(
                "--size {}: a multicast echo request is {NAMED_SIZE} bytes at least (room for each responder's name), so that is what is sent",
                run.packet.size
            )
        })
}

/// A multicast group as the server: over UDP, ping-pong or paced,
/// `--mc-if` resolved. The
/// multicast options are refused for a unicast server.
fn check_group(
    run: &RunArgs,
    target: Target,
    bind: Option<SocketAddr>,
) -> Result<Option<MulticastOptions>, AppError> {
    let refuse = |why: String| Err(AppError::Usage(why));
    let group = match target {
        Target::Remote(a) if a.ip().is_multicast() => a,
        _ => {
            return match run.group.given() {
                Some(option) => refuse(format!(
                    "{option} is for a multicast group (224.0.0.0/4, ff00::/8): the server address is not one"
                )),
                None => Ok(None),
            };
        }
    };
    if run.transport == Transport::Tcp {
        return refuse(format!(
            "{group} is a multicast group, which TCP cannot reach: drop --tcp"
        ));
    }
    if let Some(b) = bind.filter(|b| run.group.mc_join && !b.ip().is_unspecified()) {
        return refuse(format!(
            "--mc-join with --bind {b}: a socket bound to a unicast address receives no group datagram; bind the wildcard ({}:{}) or leave --bind out",
            if b.is_ipv4() { "0.0.0.0" } else { "[::]" },
            b.port()
        ));
    }
    let interface = run
        .group
        .mc_if
        .as_deref()
        .map(|name| {
            synapse_engine::interface_index(name).map_err(|_| {
                AppError::Usage(format!(
                    "--mc-if {name}: there is no interface named '{name}' (see `ip link`)"
                ))
            })
        })
        .transpose()?;
    Ok(Some(MulticastOptions {
        hops: run.group.mc_ttl.unwrap_or(1),
        interface,
        loopback: run.group.mc_loop,
        join: run.group.mc_join,
        responders: run.group.responders,
    }))
}

/// Poisson gaps need a mean; a paced run keeps up to a timeout's worth of
/// requests in flight, and the sequence tracker remembers 65 536.
pub(super) fn check_pacing(run: &RunArgs) -> Result<(), AppError> {
    let Some(schedule) = run.schedule() else {
        if run.pace.poisson {
            return Err(AppError::Usage(
                "--poisson draws gaps around a mean: give it with --interval or --rate".into(),
            ));
        }
        return Ok(());
    };
    let bound = in_flight_bound(&schedule, run.clock.timeout_ms);
    if bound > MAX_IN_FLIGHT {
        return Err(AppError::Usage(format!(
            "--timeout {} at {} every {} keeps up to {bound} requests in flight, more than the {MAX_IN_FLIGHT} Synapse tracks: shorten --timeout or lengthen the interval",
            synapse_units::duration_text(run.clock.timeout_ms),
            if run.pace.poisson {
                "a mean of one"
            } else {
                "one"
            },
            synapse_units::duration_text(schedule.interval),
        )));
    }
    Ok(())
}

/// TCP is request/response, one in flight, plain echo (to a server, or to
/// the in-process TCP echo on loopback); `--connect-each` is one of its
/// modes.
fn check_transport(run: &RunArgs) -> Result<(), AppError> {
    let tcp = run.transport == Transport::Tcp;
    let refuse = |why: &str| Err(AppError::Usage(why.into()));
    if run.connect_each && !tcp {
        return refuse("--connect-each is a TCP mode: add --tcp");
    }
    if !tcp {
        return Ok(());
    }
    if run.schedule().is_some() {
        return refuse(
            "--tcp measures request and response, one in flight: --interval and --rate are UDP only",
        );
    }
    if run.packet.stamp {
        return refuse("--stamp is STAMP over UDP: --tcp speaks plain echo");
    }
    if run.packet.ecn.is_some() {
        return refuse(
            "--ecn with --tcp: a TCP connection's ECN bits are its kernel's to set (net.ipv4.tcp_ecn); --dscp alone marks it",
        );
    }
    Ok(())
}

/// Every option at its default, against `target`, run on CPU 0, its
/// report in text: a plan for the reports' tests to adjust.
#[cfg(test)]
impl ClientPlan {
    pub fn of_defaults(target: Target) -> Self {
        let run = RunArgs::defaults();
        let thread = run.thread.on(0, true);
        ClientPlan {
            target,
            bind: None,
            settings: RunSettings::of(&run),
            run,
            packets: Some(DEFAULT_PACKETS),
            thread,
            reflector_thread: thread,
            output: Output::Text,
            log: None,
            log_opening: Opening::New,
            hdr: Default::default(),
            profile: ProfileUse::default(),
            warnings: Vec::new(),
            stamp_key: None,
            multicast: None,
        }
    }
}

pub(super) fn client_plan(
    target: Target,
    bind: Option<SocketAddr>,
    mut run: RunArgs,
    output: &OutputArgs,
) -> Result<ClientPlan, AppError> {
    if let (Some(b), Target::Remote(peer)) = (bind, target)
        && b.is_ipv4() != peer.is_ipv4()
    {
        return Err(AppError::Usage(format!(
            "--bind {b} and server {peer} are of different IP versions"
        )));
    }
    let shown = output_for(output.no_ui, output.json, output.json_stream);
    check_stdout_log(output.log.log.as_deref(), shown)?;
    let (cpu, cpu_auto) = choose_cpu(run.thread.cpu, Role::Client)?;
    let (mut rcpu, rauto) = choose_cpu(None, Role::Reflector)?;
    if rcpu == cpu {
        // A user-chosen client CPU may collide with the reflector's default.
        if let Ok((other, _)) = choose_cpu(None, Role::Client) {
            rcpu = other;
        }
    }
    let mut warnings = Vec::new();
    if target == Target::Loopback && run.thread.busy_poll && rcpu == cpu {
        warnings.push(format!(
            "--busy-poll with the client and the in-process reflector both on CPU {cpu}: \
             each spins while the other waits for the CPU, so they starve each other \
             (allow a second CPU, or drop --busy-poll)"
        ));
    }
    // The live display runs until stopped unless a count or time was given;
    // headless runs stop after DEFAULT_PACKETS.
    let packets = match (run.packets, run.duration, shown) {
        (Some(n), _, _) => Some(n),
        (None, Some(_), _) | (None, None, Output::Ui) => None,
        (None, None, _) => Some(DEFAULT_PACKETS),
    };
    if packets == Some(0) {
        return Err(AppError::Usage("--packets must be at least 1".into()));
    }
    if run.duration == Some(Duration::ZERO) {
        return Err(AppError::Usage(
            "--duration must be longer than zero".into(),
        ));
    }
    check_pacing(&run)?;
    check_transport(&run)?;
    if let (Some(n), Some(s)) = (run.warmup, run.schedule()) {
        // Asked for, so kept; but never a long wait the user does not see coming.
        let wait = Duration::from_nanos(s.interval_ns().saturating_mul(n));
        if wait > Duration::from_secs(10) {
            warnings.push(format!(
                "--warmup {n} at one request every {}: the first measured request leaves after {} of warm-up",
                synapse_units::format_ns_plain(s.interval_ns()),
                synapse_units::format_ns_plain(wait.as_nanos() as u64)
            ));
        }
    }
    let multicast = check_group(&run, target, bind)?;
    // A paced group request's answers are gathered until the next slot at
    // most: on periodic slots, that is its timeout, and the report says so.
    if let Some(s) = run
        .schedule()
        .filter(|s| multicast.is_some() && s.pattern == synapse_stats::Pattern::Periodic)
    {
        run.clock.timeout_ms = run.clock.timeout_ms.min(s.interval);
    }
    // A load session is signed with the key too, whatever its probes speak.
    let keyed = run.packet.stamp || run.load.load.is_some();
    let stamp_key = stamp_key_of(&run.packet.key, keyed, "synapse client")?;
    if run.packet.stamp_format.stamp_format != TimeFormat::Ntp && !run.packet.stamp {
        return Err(AppError::Usage(format!(
            "--stamp-format {} is STAMP's: add --stamp",
            run.packet.stamp_format.stamp_format
        )));
    }
    let placement = |cpu, cpu_auto| run.thread.on(cpu, cpu_auto);
    Ok(ClientPlan {
        target,
        bind,
        packets,
        thread: placement(cpu, cpu_auto),
        reflector_thread: placement(rcpu, rauto),
        output: shown,
        log: output.log.log.clone(),
        log_opening: output.log.opening(),
        hdr: output.hdr.clone(),
        settings: RunSettings::of(&run),
        run,
        profile: ProfileUse::default(),
        warnings,
        stamp_key,
        multicast,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_each_needs_tcp_and_tcp_refuses_stamp() {
        let mut run = RunArgs::defaults();
        assert!(check_transport(&run).is_ok(), "plain UDP is fine");
        run.connect_each = true;
        let e = check_transport(&run).unwrap_err().to_string();
        assert!(e.contains("add --tcp"), "{e}");
        run.transport = Transport::Tcp;
        assert!(check_transport(&run).is_ok(), "connect-each over TCP");
        run.packet.stamp = true;
        let e = check_transport(&run).unwrap_err().to_string();
        assert!(e.contains("--stamp is STAMP over UDP"), "{e}");
    }

    #[test]
    fn poisson_without_a_mean_is_refused() {
        let mut run = RunArgs::defaults();
        assert!(check_pacing(&run).is_ok(), "ping-pong needs no pacing");
        run.pace.poisson = true;
        let e = check_pacing(&run).unwrap_err().to_string();
        assert!(e.contains("--poisson draws gaps around a mean"), "{e}");
    }
}
