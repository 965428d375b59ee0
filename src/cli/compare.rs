//! `synapse compare` and `synapse plot`: their options, declared once.

use clap::Args;
use std::path::PathBuf;
use synapse_units::percent;

/// The margin of a comparison and what an inconclusive one does:
/// `synapse compare` and the client's `--fail-on-regression` share them.
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct EffectArgs {
    /// The change that matters, in percent of A's figure (the baseline's):
    /// a regression is a change whose whole interval lies beyond it, no
    /// regression one whose whole interval lies within ±it (without it, no
    /// regression is never claimed). Against a baseline without interval
    /// logs (set before Synapse kept them), `--fail-on-regression` falls
    /// back to the old rule: p50 or p99 worse by more than this.
    #[arg(long, value_name = "PERCENT", value_parser = percent)]
    pub min_effect: Option<f64>,

    /// Treat an inconclusive comparison (neither a regression nor its
    /// absence shown) as a failure: exit 3 instead of 4.
    #[arg(long)]
    pub fail_on_inconclusive: bool,
}

/// `synapse compare`.
#[derive(Debug, Args)]
#[command(after_long_help = COMPARE_AFTER_HELP)]
pub struct CompareArgs {
    /// The runs: A, then each run compared with it (`compare A B C` is B
    /// against A and C against A). With `--`, the runs before it are side
    /// A and those after it side B (`compare A1 A2 A3 -- B1 B2 B3`). Each
    /// is a JSON report (`--json > run.json`), an interval log
    /// (`--hdr-log`), or `baseline:PROFILE` (a profile's stored baseline,
    /// all its runs).
    #[arg(value_name = "INPUT", required = true, num_args = 1..)]
    pub a: Vec<String>,

    /// Side B, after `--`.
    #[arg(value_name = "INPUT", last = true)]
    pub b: Vec<String>,

    #[command(flatten)]
    pub effect: EffectArgs,

    /// An agent's interval log: compare this peer's series (`PEER/rtt`).
    #[arg(long, value_name = "NAME")]
    pub peer: Option<String>,

    /// One JSON object on stdout instead of the text.
    #[arg(long)]
    pub json: bool,

    /// Configuration file, for `baseline:PROFILE` [default:
    /// $XDG_CONFIG_HOME/synapse/config.toml].
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

const COMPARE_AFTER_HELP: &str = "\
For p50, p90, p99, p99.9, the mean and the loss: B − A with a 95 % confidence
interval (simultaneous over the six figures) and a verdict: regression (the
interval beyond --min-effect, or beyond zero), no regression (the interval
within ±--min-effect; never without it) or inconclusive. The interval holds
each run's own noise (a block bootstrap over its slices of consecutive
requests) and the variation between runs: from the runs themselves when a side
has several, else this host's (synapse calibrate) or an assumed allowance.
Exit status: 0 no regression, 3 regression, 4 inconclusive (3 with
--fail-on-inconclusive), 2 bad input. See docs/compare.md.";

/// `synapse plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// The runs to draw: interval logs (`--hdr-log`), `baseline:PROFILE`,
    /// or JSON reports (over time from their slices; a report without
    /// slices, by its percentiles only).
    #[arg(value_name = "INPUT", required = true, num_args = 1..)]
    pub inputs: Vec<String>,

    /// The picture: FILE.svg or FILE.png. An existing FILE is refused,
    /// unless --force.
    #[arg(short, long, value_name = "FILE.svg|FILE.png")]
    pub output: PathBuf,

    /// Replace an existing picture.
    #[arg(long)]
    pub force: bool,

    /// What to draw: `percentiles` (the distribution on HdrHistogram's
    /// 1/(1−q) axis, the runs overlaid), `time` (per-interval p50, p99 and
    /// max; intervals without replies left as gaps and shaded, loss and
    /// outages marked), `split` (the segments of the round trip, stacked
    /// per interval, one pane per run that has them), `load` (a load run's
    /// JSON report: the load each way and the round trip over time, phases
    /// marked, and each phase's stage split; what `all` draws of load
    /// runs), or `all` (each that the runs can give, one above the other; a
    /// note says what was left out and why).
    #[arg(long, value_name = "KIND", default_value = "all", value_parser = ["percentiles", "time", "split", "load", "all"])]
    pub kind: String,

    /// An agent's interval log: draw this peer's series.
    #[arg(long, value_name = "NAME")]
    pub peer: Option<String>,

    /// Picture width in pixels.
    #[arg(long, value_name = "PX", default_value_t = 1200, value_parser = clap::value_parser!(u32).range(400..=8000))]
    pub width: u32,

    /// Configuration file, for `baseline:PROFILE`.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}
