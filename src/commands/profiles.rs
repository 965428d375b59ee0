//! `synapse profiles list|show|rm`, and what a run saves afterwards
//! (`--save-profile`, `--set-baseline`).

use crate::cli::{ProfilesAction, ProfilesArgs, settings_schema};
use crate::config::{
    self, Baseline, ConfigError, Profile, baseline_runs, settings::options, store,
};
use crate::error::AppError;
use crate::plan::ClientPlan;
use crate::report::Report;
use std::io::Write;
use std::time::SystemTime;
use synapse_units::format_ns;

fn host_pair(p: &Profile) -> String {
    let s = &p.settings;
    format!(
        "{} → {}",
        s.text("bind").unwrap_or("any"),
        s.text("server").unwrap_or("127.0.0.1:8080")
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
    let schema = settings_schema();
    let cfg = config::load(args.config.as_ref(), false, &schema)?;
    let Some(action) = &args.action else {
        // clap shows the help when no action is given; nothing to do here.
        return Ok(());
    };
    match action {
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
            let mut rows: Vec<(&str, String)> = options(&schema)
                .filter_map(|arg| {
                    let key = arg.get_id().as_str();
                    p.settings.shown(&schema, key).map(|v| (key, v))
                })
                .collect();
            rows.push((
                "baseline",
                p.baseline.as_ref().map_or_else(
                    || "none (set one with --set-baseline)".to_string(),
                    baseline_line,
                ),
            ));
            // One column for the values, as wide as the longest key.
            let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
            for (key, v) in rows {
                writeln!(out, "  {key:<width$}  {v}")?;
            }
        }
        ProfilesAction::Rm { name } => {
            // Unknown names get the same error as everywhere else.
            cfg.profile(name)?;
            store::remove_profile(&cfg.path, name)?;
            baseline_runs::remove(&cfg.path, name)?;
            writeln!(out, "removed profile '{name}' from {}", cfg.path.display())?;
        }
    }
    Ok(())
}

/// Saves what the run asked to keep. Returns one line per thing saved.
pub fn after_run(plan: &ClientPlan, report: &Report) -> Result<Vec<String>, ConfigError> {
    let (summary, source) = (&report.summary, report.config.timestamps);
    let path = &plan.profile.config_path;
    let mut done = Vec::new();
    if let Some(name) = &plan.profile.save_as {
        store::save_profile(path, name, &plan.profile.settings, &settings_schema())?;
        done.push(format!("saved profile '{name}' in {}", path.display()));
    }
    if plan.profile.set_baseline
        && let Some(name) = plan.baseline_profile()
    {
        match Baseline::from_summary(summary, source, SystemTime::now()) {
            Some(b) => {
                let b = b.of_kind(plan.run_kind());
                store::save_baseline(path, name, &b)?;
                let replace = !plan.profile.add_to_baseline;
                let runs = baseline_runs::save(
                    path,
                    name,
                    &report.slices_as_intervals(),
                    SystemTime::now(),
                    replace,
                )?;
                done.push(format!(
                    "baseline of profile '{name}' {}: {} ({} kept in {})",
                    if replace { "set" } else { "run added" },
                    baseline_line(&b),
                    synapse_units::count_of(runs as u64, "run"),
                    baseline_runs::dir(path, name).display()
                ));
            }
            None => done.push(format!(
                "no replies, so the baseline of profile '{name}' was left as it was"
            )),
        }
    }
    Ok(done)
}
