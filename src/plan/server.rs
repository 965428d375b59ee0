//! A reflector run's plan: its checks and the engine's settings for the
//! echo, STAMP and TCP echo reflectors.

use super::*;

/// A validated reflector run.
#[derive(Debug, Clone)]
pub struct ServerPlan {
    /// Listen address.
    pub bind: SocketAddr,
    /// Idle time that ends a session.
    pub session_idle: Duration,
    /// Thread placement.
    pub thread: ThreadPlacement,
    /// How to show results.
    pub output: Output,
    /// Live display frame rate.
    pub fps: u32,
    /// Port for the STAMP reflector (`None`: not served).
    pub stamp_port: Option<u16>,
    /// The STAMP port was asked for: failing to bind it is an error, not
    /// a note.
    pub stamp_required: bool,
    /// Per-answer CSV log (`-`: standard output).
    pub log: Option<PathBuf>,
    /// How the log file is opened.
    pub log_opening: Opening,
    /// `--hdr-log`, `--hdr-interval`.
    pub hdr: HdrLogArgs,
    /// Who the reflectors answer, and how much.
    pub admission: Admission,
    /// The STAMP reflector's key: it answers authenticated requests only.
    pub stamp_key: Option<StampKey>,
    /// The format of the STAMP reflector's timestamps.
    pub stamp_format: TimeFormat,
    /// Who to become once the ports are bound.
    pub user: Option<String>,
    /// TCP echo: its port (`Some(0)`: the UDP echo port's number), or none.
    pub tcp_port: Option<u16>,
    /// The TCP port was asked for: failing to bind it is an error.
    pub tcp_required: bool,
    /// TCP: connections one source may hold at once.
    pub tcp_per_source: u32,
    /// How the UDP reflectors stamp (kernel, or the NIC as well).
    pub timestamps: ReflectorStamping,
    /// The option that set it, as errors name it.
    pub timestamps_option: &'static str,
    /// The load server (`--load-port`), when asked for; its STAMP and echo
    /// ports are filled in once those are bound.
    pub load: Option<synapse_engine::load::LoadServerConfig>,
    /// Multicast groups joined (`--join`, `--join-if`).
    pub groups: GroupJoins,
    /// Whether the plain echo reflector joins them too (it needs --allow:
    /// it cannot authenticate); the STAMP one always does.
    pub echo_joins: bool,
    /// The name the echo answers carry (`--name`).
    pub name: Option<ResponderName>,
}

pub(super) fn server_plan(s: &ServerArgs) -> Result<Plan, AppError> {
    let bind = resolve(&s.bind, DEFAULT_PORT)?;
    let thread = s.thread.placement(Role::Reflector)?;
    if s.session_idle.is_zero() {
        return Err(AppError::Usage(
            "--session-idle must be longer than zero".into(),
        ));
    }
    let output = output_for(s.no_ui, false, false);
    check_stdout_log(s.log.log.as_deref(), output)?;
    let stamp_key = stamp_key_of(
        &s.key,
        s.stamp_port != Some(0) || s.load.load_port.is_some(),
        "synapse server --stamp-port 0",
    )?;
    let load = load_server(s, bind, stamp_key.as_ref())?;
    if let Some(user) = &s.user
        && s.timestamps != ReflectorStamping::default()
    {
        // Putting the NIC's setting back at exit needs the privilege
        // `--user` gives up.
        return Err(AppError::Usage(format!(
            "--timestamps {} with --user {user}: once running as {user} the server could not put the NIC's timestamping setting back; leave one out",
            s.timestamps
        )));
    }
    let echo_joins = check_joins(s)?;
    Ok(Plan::Server(ServerPlan {
        groups: GroupJoins {
            memberships: s.groups.join.clone(),
            interface: s.groups.join_if.clone(),
            answer_to_group: s.groups.answer_to_group,
        },
        echo_joins,
        name: s.groups.name,
        bind,
        session_idle: s.session_idle,
        thread,
        output,
        fps: s.fps,
        stamp_port: match s.stamp_port {
            Some(0) => None,
            Some(p) => Some(p),
            None => Some(stamp::DEFAULT_PORT),
        },
        stamp_required: s.stamp_port.is_some_and(|p| p != 0),
        log: s.log.log.clone(),
        log_opening: s.log.opening(),
        hdr: s.hdr.clone(),
        admission: Admission {
            allow: AllowList::new(s.admission.allow.clone()),
            limits: s.limits.limits(),
        },
        stamp_key,
        stamp_format: s.stamp_format.stamp_format,
        user: s.user.clone(),
        tcp_port: match s.tcp_port {
            Some(0) => None,
            Some(p) => Some(p),
            None => Some(0),
        },
        tcp_required: s.tcp_port.is_some_and(|p| p != 0),
        tcp_per_source: s.max_connections_per_source,
        timestamps: s.timestamps.clone(),
        timestamps_option: "--timestamps",
        load,
    }))
}

/// The load server `--load-port` asks for. Bulk TCP for anyone is
/// refused: on any address but loopback it needs `--allow` or a key.
fn load_server(
    s: &ServerArgs,
    bind: SocketAddr,
    key: Option<&StampKey>,
) -> Result<Option<synapse_engine::load::LoadServerConfig>, AppError> {
    let l = &s.load;
    let Some(port) = l.load_port else {
        return Ok(None);
    };
    if !bind.ip().is_loopback() && s.admission.allow.is_empty() && key.is_none() {
        return Err(AppError::Usage(format!(
            "--load-port {port} on {}: bulk TCP for any source is refused; say who may load it with --allow CIDR (or sign sessions with --hmac-key-file)",
            bind.ip()
        )));
    }
    let mut cfg = synapse_engine::load::LoadServerConfig::new(SocketAddr::new(bind.ip(), port));
    cfg.allow = AllowList::new(s.admission.allow.clone());
    cfg.key = key.cloned();
    cfg.max_sessions = l.load_max_sessions as usize;
    cfg.max_seconds = l.load_max_seconds;
    cfg.rate_bps = l.load_max_rate;
    Ok(Some(cfg))
}

/// One forged request to a group draws an answer from every member: a
/// reflector that joins answers only the senders `--allow` lets in, or
/// (STAMP) those that sign with the key. Returns whether the plain echo
/// reflector joins too (it authenticates no one, so only with `--allow`).
fn check_joins(s: &ServerArgs) -> Result<bool, AppError> {
    if s.groups.join.is_empty() {
        return Ok(false);
    }
    let allowed = !s.admission.allow.is_empty();
    let keyed = s.key.hmac_key_file.is_some() && s.stamp_port != Some(0);
    if !allowed && !keyed {
        return Err(AppError::Usage(
            "--join: one forged request to a group draws an answer from every member, so a reflector that joins answers only --allow sources, or authenticated STAMP (--hmac-key-file): give one"
                .into(),
        ));
    }
    Ok(allowed)
}

/// Events the reflector can queue for its front end between two reads.
const REFLECTOR_RING: usize = 8192;

/// Answers the server's log can fall behind by, per reflector: the writer
/// wakes every 20 ms, so this keeps up with 800 k answers/s.
const RESPONSE_RING: usize = 1 << 14;

impl ServerPlan {
    /// The engine's settings for a `protocol` reflector listening on `bind`.
    pub fn reflector_config(&self, bind: SocketAddr, protocol: Protocol) -> ReflectorConfig {
        ReflectorConfig {
            thread: self.thread,
            session_idle: self.session_idle,
            ring_capacity: REFLECTOR_RING,
            log_capacity: if self.log.is_some() || self.hdr.hdr_log.is_some() {
                RESPONSE_RING
            } else {
                0
            },
            admission: self.admission.clone(),
            stamp_key: match protocol {
                Protocol::Stamp => self.stamp_key.clone(),
                Protocol::Echo => None,
            },
            stamp_format: self.stamp_format,
            groups: match protocol {
                Protocol::Echo if !self.echo_joins => GroupJoins::default(),
                _ => self.groups.clone(),
            },
            name: self.name,
            ..ReflectorConfig::new(bind, protocol)
        }
    }

    /// The TCP echo reflector's settings, if it is to run: same address,
    /// the TCP port (the UDP echo reflector's, `echo_port`, unless told),
    /// blocking in `epoll_wait` on the echo reflector's CPU (another one
    /// when that one spins: beside it, it would starve).
    pub fn tcp_config(&self, echo_port: u16) -> Option<TcpEchoConfig> {
        let port = match self.tcp_port? {
            0 => echo_port,
            p => p,
        };
        let cpu = match choose_cpu(None, Role::Client) {
            Ok((other, _)) if self.thread.busy_poll => other,
            _ => self.thread.cpu,
        };
        Some(TcpEchoConfig {
            bind: SocketAddr::new(self.bind.ip(), port),
            thread: ThreadPlacement {
                cpu,
                busy_poll: false,
                rt: false,
                ..self.thread
            },
            allow: self.admission.allow.clone(),
            per_source: self.tcp_per_source,
            max_connections: self.admission.limits.max_sessions,
        })
    }

    /// The STAMP reflector's settings, if it is to run: same address, the
    /// STAMP port. It always blocks and never asks for SCHED_FIFO, and it
    /// prefers a CPU of its own: beside a busy-polling or real-time echo
    /// reflector on one core it would starve, or starve it.
    pub fn stamp_config(&self) -> Option<ReflectorConfig> {
        let port = self.stamp_port?;
        let cpu = match choose_cpu(None, Role::Client) {
            Ok((other, _)) if other != self.thread.cpu => other,
            _ => self.thread.cpu,
        };
        Some(ReflectorConfig {
            thread: ThreadPlacement {
                cpu,
                cpu_auto: true,
                busy_poll: false,
                rt: false,
                keep_awake: self.thread.keep_awake,
            },
            ..self.reflector_config(SocketAddr::new(self.bind.ip(), port), Protocol::Stamp)
        })
    }
}
