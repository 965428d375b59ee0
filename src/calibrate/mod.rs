//! `synapse calibrate`: this host's floor, measured (see
//! [`synapse_engine::floor`]), its latency settings audited, the result kept
//! so runs can be explained against it.

pub mod audit;
pub mod host;
mod measure;
pub mod store;
mod text;

pub use synapse_engine::floor::{Calibration, Figures};

use crate::cli::CalibrateArgs;
use crate::error::AppError;
use audit::Finding;
use host::Host;
use serde::Serialize;
use synapse_engine::StopFlag;
use synapse_engine::floor::Effort;

/// What `--json` prints.
#[derive(Serialize)]
struct JsonOutput<'a> {
    #[serde(flatten)]
    calibration: &'a Calibration,
    audit: &'a [Finding],
    kept: Option<String>,
    /// Stopped before every figure was measured (the rest are null).
    interrupted: bool,
}

/// Runs `synapse calibrate`. Stopped (Ctrl-C), it reports what it
/// measured, keeps nothing, and returns [`crate::error::exit::INTERRUPTED`].
pub fn run(args: &CalibrateArgs, stop: &StopFlag) -> Result<i32, AppError> {
    let host = Host::this();
    let (a, b) = cpus(args.cpus)?;
    let effort = if args.quick {
        Effort::Quick
    } else {
        Effort::Full
    };
    let progress = |what: &str| {
        if !args.json {
            crate::console::note(&format!("measuring {what}…"));
        }
    };
    let measured = measure::measure(a, b, effort, progress, stop)?;
    let calibration = Calibration {
        synapse_version: env!("CARGO_PKG_VERSION").into(),
        host: host.name(),
        kernel: host.kernel(),
        calibrated_at: crate::config::rfc3339_utc(std::time::SystemTime::now()),
        quick: args.quick,
        cpus: std::iter::once(a).chain(b).collect(),
        p50: measured.p50,
        p99: measured.p99,
        run_to_run: measured.run_to_run.clone(),
    };
    let findings = audit::audit(&host, b.unwrap_or(a));
    // Part of a calibration must not replace a whole one.
    let kept = if measured.interrupted {
        None
    } else {
        keep(args, &calibration)
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let doc = JsonOutput {
            calibration: &calibration,
            audit: &findings,
            kept: kept.as_ref().map(|p| p.display().to_string()),
            interrupted: measured.interrupted,
        };
        serde_json::to_writer(&mut out, &doc).map_err(anyhow::Error::from)?;
        std::io::Write::write_all(&mut out, b"\n")?;
    } else {
        let outcome = text::Outcome {
            kept: kept.as_deref(),
            interrupted: measured.interrupted,
        };
        text::write(&mut out, &calibration, &findings, outcome)?;
    }
    Ok(if measured.interrupted {
        crate::error::exit::INTERRUPTED
    } else {
        crate::error::exit::PASS
    })
}

/// The two CPUs: asked for (and allowed), else the first two allowed.
fn cpus(asked: Option<(usize, usize)>) -> Result<(usize, Option<usize>), AppError> {
    let allowed = synapse_engine::allowed_cpus().map_err(anyhow::Error::from)?;
    match asked {
        Some((a, b)) => {
            for c in [a, b] {
                if !allowed.contains(&c) {
                    return Err(AppError::Usage(format!(
                        "--cpus: CPU {c} is not one this process may run on (allowed: {allowed:?})"
                    )));
                }
            }
            Ok((a, Some(b)))
        }
        None => match allowed.as_slice() {
            [] => Err(AppError::Usage("no CPU to run on".into())),
            [only] => Ok((*only, None)),
            [a, b, ..] => Ok((*a, Some(*b))),
        },
    }
}

/// Keeps the calibration unless told not to; a failure is a warning (the
/// figures are printed either way).
fn keep(args: &CalibrateArgs, c: &Calibration) -> Option<std::path::PathBuf> {
    if args.no_save {
        return None;
    }
    let path = store::path(args.state.as_deref())?;
    match store::save(&path, c) {
        Ok(()) => Some(path),
        Err(e) => {
            crate::console::warning(&format!(
                "cannot keep the calibration at {}: {e}",
                path.display()
            ));
            None
        }
    }
}

/// The run-to-run spread a comparison starts from: the assumed allowance,
/// or this host's (measured by `synapse calibrate`) where that is wider.
pub fn spread_for_this_host() -> synapse_stats::significance::Spread {
    let kept = kept_for_this_host().and_then(|c| c.run_to_run);
    synapse_stats::significance::Spread::for_comparison(kept.as_ref().map(|r| &r.spread))
}

/// The calibration kept for this host, if any (a note says why one that
/// exists cannot be used).
pub fn kept_for_this_host() -> Option<Calibration> {
    let path = store::path(None)?;
    let c = match store::load(&path) {
        Ok(c) => c?,
        Err(e) => {
            crate::console::note(&format!("calibration ignored: {e}"));
            return None;
        }
    };
    let host = Host::this();
    (c.host == host.name() && c.kernel == host.kernel()).then_some(c)
}
