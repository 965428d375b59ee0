//! Tracing one flow's path, hop by hop, unprivileged: UDP probes on the
//! flow's own 5-tuple, each with its TTL in its own control message, the
//! routers' time-exceeded and the destination's port-unreachable read off
//! the socket's error queue (`IP_RECVERR`, as tracepath does), the
//! destination's echo off the socket. [`identity`]: a probe's bytes;
//! [`schedule`]: which probe next, paced; [`tracer`]: the trace as a state
//! machine, socket-free; [`mpls`]: label stacks in ICMP extensions;
//! [`run`]: the loop of `synapse trace`; [`side`]: a trace inside a
//! prober, on the socket whose measurement goes on. What the answers mean is the
//! statistics' (`synapse_stats::trace`).

pub mod identity;
pub mod mpls;
pub mod run;
pub mod schedule;
pub mod side;
pub mod tracer;

pub use run::{MAX_PATHS, TraceConfig, TraceOutcome, run_trace};
pub use side::{TraceDone, TraceHandle, TraceJob, TraceSlot, trace_channel};
pub use tracer::{Probe, TraceCounts, TracePlan, Tracer};
