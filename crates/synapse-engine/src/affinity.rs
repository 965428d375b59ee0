//! Which CPU a measurement thread runs on, and how it gets there.

use super::{EngineError, sys};

/// Which measurement thread is being placed; they prefer different CPUs so
/// an in-process client and reflector do not share one by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The client loop prefers the last allowed CPU (CPU 0 usually takes
    /// most interrupts and housekeeping).
    Client,
    /// The reflector prefers the first allowed CPU.
    Reflector,
}

/// Where a measurement thread should run and how it waits: the one
/// placement request every engine thread takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadPlacement {
    /// CPU to pin to, already validated.
    pub cpu: usize,
    /// Chosen by Synapse rather than by `--cpu`.
    pub cpu_auto: bool,
    /// Spin on non-blocking receive instead of sleeping in the kernel.
    pub busy_poll: bool,
    /// Ask for `SCHED_FIFO`.
    pub rt: bool,
    /// Keep CPUs out of idle states while the thread runs.
    pub keep_awake: bool,
}

impl ThreadPlacement {
    /// The CPU Synapse would pick for `role`, blocking, normal priority.
    pub fn auto(role: Role) -> Self {
        let (cpu, cpu_auto) = choose_cpu(None, role).unwrap_or((0, true));
        Self {
            cpu,
            cpu_auto,
            busy_poll: false,
            rt: false,
            keep_awake: false,
        }
    }
}

/// Where a thread was put and with what priority, as reported to the user.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Placement {
    /// The CPU the thread was pinned to.
    pub cpu: usize,
    /// Chosen by Synapse rather than by `--cpu`.
    pub cpu_auto: bool,
    /// `SCHED_FIFO` is in effect.
    pub realtime: bool,
    /// CPUs are kept out of idle states (`--keep-awake` in effect).
    pub kept_awake: bool,
    /// Why the thread runs where or how it was not asked to (pinning or
    /// `SCHED_FIFO` refused): for the front end to say once.
    #[serde(skip)]
    pub refused: Option<String>,
}

impl Placement {
    /// On `cpu` (chosen by Synapse, or not), with nothing more asked:
    /// no `SCHED_FIFO`, idle states left alone, nothing refused.
    pub fn plain(cpu: usize, cpu_auto: bool) -> Self {
        Self {
            cpu,
            cpu_auto,
            realtime: false,
            kept_awake: false,
            refused: None,
        }
    }
}

/// Validates a requested CPU, or picks one for `role`.
pub fn choose_cpu(requested: Option<usize>, role: Role) -> Result<(usize, bool), EngineError> {
    let allowed =
        sys::affinity::allowed_cpus().map_err(EngineError::io("cannot read CPU affinity"))?;
    match requested {
        Some(cpu) if allowed.contains(&cpu) => Ok((cpu, false)),
        Some(cpu) => Err(EngineError::Cpu {
            cpu,
            allowed: allowed
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
        }),
        None => {
            let pick = match role {
                Role::Client => allowed.last(),
                Role::Reflector => allowed.first(),
            };
            Ok((pick.copied().unwrap_or(0), true))
        }
    }
}

/// Pins the calling thread to `cpu` (used by benchmarks to place reference
/// loops exactly like the engine's threads).
pub fn pin_thread(cpu: usize) -> std::io::Result<()> {
    sys::affinity::pin_current_thread(cpu)
}

/// A placed thread: where it is, and the idle-state request it holds
/// (released when this is dropped, at the thread's end).
#[derive(Debug)]
pub(crate) struct Placed {
    pub placement: Placement,
    _awake: Option<sys::sched::NoIdle>,
}

/// Pins the calling thread and, when asked, raises it to `SCHED_FIFO` and
/// keeps the CPUs out of idle states. None of it failing is fatal: the
/// thread carries on, and the placement says what was refused.
pub(crate) fn place_current_thread(want: ThreadPlacement) -> Placed {
    let mut refused = Vec::new();
    // Deadlines are kept to the microsecond: no batching of this thread's
    // wake-ups. (Harmless if refused: waits just end a little later.)
    let _ = sys::sched::set_timer_slack(1);
    if let Err(e) = sys::affinity::pin_current_thread(want.cpu) {
        refused.push(format!("could not pin to CPU {} ({e})", want.cpu));
    }
    let realtime = want.rt
        && match sys::sched::set_fifo(50) {
            Ok(()) => true,
            Err(e) => {
                refused.push(format!(
                    "--rt: SCHED_FIFO not permitted ({e}); running at normal priority"
                ));
                false
            }
        };
    let awake = want
        .keep_awake
        .then(|| {
            sys::sched::NoIdle::request()
                .map_err(|e| {
                    refused.push(format!(
                        "--keep-awake: cannot write /dev/cpu_dma_latency ({e}); CPUs may idle"
                    ));
                })
                .ok()
        })
        .flatten();
    Placed {
        placement: Placement {
            cpu: want.cpu,
            cpu_auto: want.cpu_auto,
            realtime,
            kept_awake: awake.is_some(),
            refused: (!refused.is_empty()).then(|| refused.join("; ")),
        },
        _awake: awake,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn automatic_choice_is_an_allowed_cpu() {
        let allowed = sys::affinity::allowed_cpus().unwrap();
        let (c, auto) = choose_cpu(None, Role::Client).unwrap();
        assert!(auto && allowed.contains(&c));
        let (r, _) = choose_cpu(None, Role::Reflector).unwrap();
        assert!(allowed.contains(&r));
        if allowed.len() > 1 {
            assert_ne!(
                c, r,
                "client and reflector should not share a CPU by default"
            );
        }
    }

    #[test]
    fn an_unavailable_cpu_is_refused_with_the_allowed_list() {
        let e = choose_cpu(Some(100_000), Role::Client)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("CPU 100000 is not available to this process (allowed: "),
            "{e}"
        );
    }
}
