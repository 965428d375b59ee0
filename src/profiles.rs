//! `synapse profiles list|show|rm`, and what a run saves afterwards
//! (`--save-profile`, `--set-baseline`).

use crate::cli::{ProfilesAction, ProfilesArgs};
use crate::config::{self, Baseline, ConfigError, Profile, store};
use crate::error::AppError;
use crate::plan::ClientPlan;
use crate::stats::Summary;
use crate::units::{format_ns, format_ns_plain};
use std::io::Write;
use std::time::SystemTime;

fn host_pair(p: &Profile) -> String {
    let s = &p.settings;
    format!(
        "{} → {}",
        s.bind.as_deref().unwrap_or("any"),
        s.server.as_deref().unwrap_or("127.0.0.1:8080")
    )
}

fn baseline_line(b: &Baseline) -> String {
    format!(
        "{}: p50 {}, p99 {}, p99.9 {}, loss {:.2} %, {} timestamps",
        b.date,
        format_ns(b.p50_ns as f64),
        format_ns(b.p99_ns as f64),
        format_ns(b.p999_ns as f64),
        b.loss_percent,
        b.timestamp_source
    )
}

/// Runs `synapse profiles …`.
pub fn run_command(args: &ProfilesArgs, out: &mut impl Write) -> Result<(), AppError> {
    let cfg = config::load(args.config.as_ref(), false)?;
    match &args.action {
        ProfilesAction::List => {
            if cfg.profiles.is_empty() {
                writeln!(
                    out,
                    "No profiles in {} (save one with: synapse client ADDR --save-profile NAME)",
                    cfg.path.display()
                )?;
            }
            let width = cfg.profiles.keys().map(String::len).max().unwrap_or(0);
            for (name, p) in &cfg.profiles {
                let baseline = p.baseline.as_ref().map_or("no baseline".to_string(), |b| {
                    format!("baseline {} p50 {}", b.date, format_ns(b.p50_ns as f64))
                });
                writeln!(out, "{name:<width$}  {}  ({baseline})", host_pair(p))?;
            }
        }
        ProfilesAction::Show { name } => {
            let p = cfg.profile(name)?;
            writeln!(out, "[profiles.{name}]  in {}", cfg.path.display())?;
            let s = &p.settings;
            let mut row = |k: &str, v: Option<String>| -> std::io::Result<()> {
                match v {
                    Some(v) => writeln!(out, "  {k:<11} {v}"),
                    None => Ok(()),
                }
            };
            row("bind", s.bind.clone())?;
            row("server", s.server.clone())?;
            row("packets", s.packets.map(|v| v.to_string()))?;
            row("duration", s.duration.map(|v| format!("{v:?}")))?;
            row("warmup", s.warmup.map(|v| v.to_string()))?;
            row("timeout_ms", s.timeout_ms.map(|v| v.to_string()))?;
            row("update", s.update.map(|v| v.to_string()))?;
            row("size", s.size.map(|v| v.to_string()))?;
            row("cpu", s.cpu.map(|v| v.to_string()))?;
            row("busy_poll", s.busy_poll.map(|v| v.to_string()))?;
            row("rt", s.rt.map(|v| v.to_string()))?;
            row(
                "threshold",
                s.threshold.map(|v| format_ns_plain(v.as_nanos() as u64)),
            )?;
            row("fps", s.fps.map(|v| v.to_string()))?;
            row("timestamps", s.timestamps.map(|v| v.name().to_string()))?;
            row("stamp", s.stamp.map(|v| v.to_string()))?;
            match &p.baseline {
                Some(b) => writeln!(out, "  baseline    {}", baseline_line(b))?,
                None => writeln!(out, "  baseline    none (set one with --set-baseline)")?,
            }
        }
        ProfilesAction::Rm { name } => {
            // Unknown names get the same error as everywhere else.
            cfg.profile(name)?;
            store::remove_profile(&cfg.path, name)?;
            writeln!(out, "removed profile '{name}' from {}", cfg.path.display())?;
        }
    }
    Ok(())
}

/// Saves what the run asked to keep. Returns one line per thing saved.
pub fn after_run(
    plan: &ClientPlan,
    summary: &Summary,
    source: &str,
) -> Result<Vec<String>, ConfigError> {
    let path = &plan.profile.config_path;
    let mut done = Vec::new();
    if let Some(name) = &plan.profile.save_as {
        store::save_profile(path, name, &plan.settings())?;
        done.push(format!("saved profile '{name}' in {}", path.display()));
    }
    if plan.profile.set_baseline
        && let Some(name) = plan.baseline_profile()
    {
        match Baseline::from_summary(summary, source, SystemTime::now()) {
            Some(b) => {
                store::save_baseline(path, name, &b)?;
                done.push(format!(
                    "baseline of profile '{name}' set: {}",
                    baseline_line(&b)
                ));
            }
            None => done.push(format!(
                "no replies, so the baseline of profile '{name}' was left as it was"
            )),
        }
    }
    Ok(done)
}
