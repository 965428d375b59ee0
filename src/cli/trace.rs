//! `synapse trace`: its options, declared once.

use clap::Args;
use std::net::IpAddr;
use std::time::Duration;

/// Probes per hop by default: enough that 30 % loss and none have
/// intervals apart (0 of 80 bounds the loss under 4.5 %, 24 of 80 puts
/// it at 21 % at least).
pub const DEFAULT_PROBES: u32 = 80;
/// The fastest a trace may send.
pub const MAX_RATE: f64 = 10_000.0;

/// `synapse trace`.
#[derive(Debug, Args, Clone)]
#[command(after_long_help = TRACE_AFTER_HELP)]
pub struct TraceArgs {
    /// Where to: a Synapse reflector, any UDP echo server, or any host
    /// (whose port unreachable ends the path) [default port: 8080].
    #[arg(value_name = "HOST[:PORT]")]
    pub target: String,

    /// The flow's source port (with --paths K, the first of K in a row)
    /// [default: any free one].
    #[arg(long, value_name = "P")]
    pub source_port: Option<u16>,

    /// Trace K flows, K source ports: the ECMP tree, the distinct paths
    /// and which ports take each, and the link the lossy ones share.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub paths: u16,

    /// Probes per hop (per path).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PROBES, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub probes: u32,

    /// The farthest hop (TTL, hop limit) probed.
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u8).range(1..))]
    pub max_ttl: u8,

    /// Probes a second at most, all paths together (`100`, `100/s`,
    /// `30/min`): each leaves at least 1/RATE after the one before.
    #[arg(long, value_name = "RATE", default_value = "100/s", value_parser = trace_rate)]
    pub rate: f64,

    /// How long an answer may take before its probe counts as lost.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = synapse_units::timeout)]
    pub timeout: Duration,

    /// The local address to send from [default: the route's].
    #[arg(long, value_name = "IP")]
    pub bind: Option<IpAddr>,

    /// Show each hop's name (reverse DNS, or the hosts file).
    #[arg(long)]
    pub resolve: bool,

    /// One JSON object on stdout instead of the text.
    #[arg(long)]
    pub json: bool,
}

/// `synapse agent`'s traces: when a path loses, trace it on its own socket.
#[derive(Debug, Args, Clone)]
pub struct TraceOnLossArgs {
    /// Trace a UDP path whose loss over a window (--report-every) is over
    /// PCT, on that path's own socket (its 5-tuple), to find the link
    /// where it loses: the suspect goes into the --json lines, the live
    /// table (key t) and /metrics [default: never].
    #[arg(long, value_name = "PCT", value_parser = trace_on_loss)]
    pub trace_on_loss: Option<f64>,

    /// At most one trace of a peer this often.
    #[arg(long, value_name = "DURATION", default_value = "5min", value_parser = synapse_units::seconds)]
    pub trace_every: Duration,

    /// At most this many traces per --trace-every, all peers together, one
    /// at a time, each started up to a window after its trigger at random:
    /// a fleet-wide event never becomes a storm of traces.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub trace_limit: u32,
}

/// `--trace-on-loss`: a share of probes, above 0 and below 100.
fn trace_on_loss(s: &str) -> Result<f64, String> {
    let p = synapse_units::percent(s)?;
    if p <= 0.0 || p >= 100.0 {
        return Err(format!("'{s}': a loss between 0 and 100 % (exclusive)"));
    }
    Ok(p)
}

/// A trace's rate: a rate as `--rate` takes it, at most [`MAX_RATE`].
fn trace_rate(s: &str) -> Result<f64, String> {
    let r = synapse_units::rate(s)?;
    if r > MAX_RATE {
        return Err(format!(
            "'{s}' is faster than a trace may send ({MAX_RATE}/s)"
        ));
    }
    Ok(r)
}

const TRACE_AFTER_HELP: &str = "\
Traces the path of one UDP flow, hop by hop, on its exact 5-tuple (the source port
stays fixed, so the probes follow that flow's ECMP path), without privilege: each
probe's TTL is set in its own control message and the routers' ICMP time-exceeded
are read from the socket's error queue. Probes go round-robin across the hops,
--probes of each, never faster than --rate. Each hop: who answered, answered of
sent, the loss with its 95 % interval, the round trip's p50 and p90, MPLS labels
when a router quotes them.

The verdict names the suspect link: the first hop after which loss persists to the
destination, confirmed by two later hops or by the destination's echo (an answer no
router rate-limits; a port unreachable is). A hop whose loss a later hop
contradicts is marked \"ICMP rate-limited: not loss\" and never blamed; a hop that
never answers breaks nothing.

Exit status: 0 no suspect, 3 a suspect link, 4 inconclusive (too few probes, loss
unconfirmed, or a destination that never answered), 2 bad input or a destination
that cannot be reached, 130 interrupted. See docs/trace.md.

Examples:
  synapse trace 192.0.2.10
  synapse trace 192.0.2.10:8080 --source-port 40000 --json
  synapse trace 192.0.2.10 --paths 16 --resolve";

#[cfg(test)]
mod tests {
    use super::trace_rate;

    #[test]
    fn a_trace_rate_is_a_rate_within_bounds() {
        assert_eq!(trace_rate("100"), Ok(100.0));
        assert_eq!(trace_rate("60/min"), Ok(1.0));
        assert!(trace_rate("20000/s").unwrap_err().contains("faster"));
        assert!(trace_rate("fast").is_err());
    }
}
