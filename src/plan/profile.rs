//! The configuration file's part in a client run: the layers of settings
//! (defaults, a profile, the command line), the profile chosen or matched,
//! its baseline and what `--fail-on-regression` needs of it.

use super::client::{client_plan, group_size_note, stamp_size_note};
use super::*;

pub(super) fn loopback_plan(output: &OutputArgs, typed: &Settings) -> Result<Plan, AppError> {
    let schema = settings_schema();
    let cfg = config::load(output.config.as_ref(), false, &schema)?;
    let l = layer(&schema, typed, None, &cfg.defaults);
    let run: RunArgs = l.parse(&schema).map_err(AppError::Usage)?;
    let note = stamp_size_note(&run, &l.chosen);
    let mut p = client_plan(Target::Loopback, None, run, output)?;
    super::load::apply(&mut p, &l.chosen)?;
    p.profile.notes.extend(note);
    p.profile.config_path = cfg.path;
    p.profile.settings = l.chosen.with_defaults(&schema);
    p.profile.defaults = cfg.defaults;
    Ok(Plan::Client(p))
}

/// Picks the profile: the one named, or the only one whose host pair
/// matches the address given.
fn choose_profile<'c>(
    cfg: &'c ConfigFile,
    named: Option<&str>,
    addr: Option<&str>,
    bind: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<Option<Named<'c>>, AppError> {
    if let Some(name) = named {
        cfg.profile(name)?; // the error that lists the known profiles
        return Ok(cfg
            .profiles
            .get_key_value(name)
            .map(|(k, p)| (k.as_str(), &p.settings)));
    }
    let Some(addr) = addr else { return Ok(None) };
    let Ok(wanted) = resolve(addr, DEFAULT_PORT) else {
        return Ok(None);
    };
    let same = |text: Option<&str>, port| text.and_then(|t| resolve(t, port).ok());
    let matching: Vec<(&str, &Settings)> = cfg
        .profiles
        .iter()
        .map(|(n, p)| (n.as_str(), &p.settings))
        .filter(|(_, s)| same(s.text("server"), DEFAULT_PORT) == Some(wanted))
        .filter(|(_, s)| match (bind, s.text("bind")) {
            (Some(b), Some(theirs)) => resolve(b, 0).ok() == same(Some(theirs), 0),
            _ => true,
        })
        .collect();
    match matching.as_slice() {
        [(name, s)] => {
            notes.push(format!(
                "using profile '{name}': its host pair matches {wanted} (--profile to choose another)"
            ));
            Ok(Some((name, s)))
        }
        [] => Ok(None),
        several => {
            let names: Vec<&str> = several.iter().map(|(n, _)| *n).collect();
            notes.push(format!(
                "profiles {} all match {wanted}; none used (choose one with --profile)",
                names.join(", ")
            ));
            Ok(None)
        }
    }
}

pub(super) fn remote_client_plan(args: ClientArgs, mut typed: Settings) -> Result<Plan, AppError> {
    let schema = settings_schema();
    let cfg = config::load(
        args.output.config.as_ref(),
        args.save_profile.is_some(),
        &schema,
    )?;
    let mut notes = Vec::new();
    if let Some(addr) = &args.addr {
        old_fail_on_regression(args.fail_on_regression, addr)?;
        typed.set("server", vec![addr.clone()]);
    }
    let chosen = choose_profile(
        &cfg,
        args.profile.as_deref(),
        typed.text("server"),
        typed.text("bind"),
        &mut notes,
    )?;
    let l = layer(&schema, &typed, chosen, &cfg.defaults);
    notes.extend(l.notes.iter().cloned());
    let run: RunArgs = l.parse(&schema).map_err(AppError::Usage)?;
    let hosts: TargetArgs = l.parse(&schema).map_err(AppError::Usage)?;
    // An address that came from the file is reported with its place there.
    let located = |key: &str, e: EngineError| -> AppError {
        match chosen.and_then(|(n, s)| s.get(key).map(|set| (n, set.loc))) {
            Some((name, loc)) if typed.get(key).is_none() => config::ConfigError::at(
                &cfg.path,
                loc,
                &format!("profiles.{name}.{key}"),
                e.to_string(),
            )
            .into(),
            _ => e.into(),
        }
    };
    // A STAMP session-reflector listens on STAMP's port unless told.
    let port = if run.packet.stamp {
        stamp::DEFAULT_PORT
    } else {
        DEFAULT_PORT
    };
    let text = hosts.server.unwrap_or_else(|| format!("127.0.0.1:{port}"));
    let server = resolve(&text, port).map_err(|e| located("server", e))?;
    // Port 0 is "any port" to bind, never a port anyone listens on: said
    // now, not as the ICMP error a datagram sent there comes back with.
    if server.port() == 0 {
        return Err(AppError::Usage(format!(
            "{text}: port 0 is no reflector's port (it means \"any\" only when binding): give the port it listens on, or none for {port}"
        )));
    }
    let bind = hosts
        .bind
        .map(|b| resolve(&b, 0).map_err(|e| located("bind", e)))
        .transpose()?;
    let (name, baseline, set_baseline) = profile_baseline(&args, &cfg, chosen, &mut notes)?;
    notes.extend(stamp_size_note(&run, &l.chosen));
    notes.extend(group_size_note(&run, &l.chosen, server.ip().is_multicast()));
    let mut p = client_plan(Target::Remote(server), bind, run, &args.output)?;
    super::load::apply(&mut p, &l.chosen)?;
    let mut settings = l.chosen.with_defaults(&schema);
    if settings.get("server").is_none() {
        settings.set("server", vec![server.to_string()]);
    }
    p.profile = ProfileUse {
        config_path: cfg.path.clone(),
        name,
        baseline,
        save_as: args.save_profile,
        set_baseline,
        add_to_baseline: args.add_to_baseline,
        fail_on_regression: args.fail_on_regression,
        min_effect: args.effect.min_effect,
        fail_on_inconclusive: args.effect.fail_on_inconclusive,
        notes,
        settings,
        defaults: cfg.defaults.clone(),
    };
    like_the_baseline(&p)?;
    Ok(Plan::Client(p))
}

/// The profile's name and baseline, and whether this run sets one: a
/// baseline needs a profile to live in; a regression check without one
/// to compare is said, never passed.
fn profile_baseline(
    args: &ClientArgs,
    cfg: &ConfigFile,
    chosen: Option<Named<'_>>,
    notes: &mut Vec<String>,
) -> Result<(Option<String>, Option<config::Baseline>, bool), AppError> {
    let set_baseline = args.set_baseline || args.add_to_baseline;
    if set_baseline && args.profile.is_none() && args.save_profile.is_none() && chosen.is_none() {
        let option = if args.add_to_baseline {
            "--add-to-baseline"
        } else {
            "--set-baseline"
        };
        return Err(AppError::Usage(format!(
            "{option} needs a profile to keep it in (--profile NAME or --save-profile NAME)"
        )));
    }
    let name = chosen.map(|(n, _)| n.to_string());
    let baseline = name
        .as_deref()
        .and_then(|n| cfg.profiles.get(n))
        .and_then(|p| p.baseline.clone());
    if args.fail_on_regression
        && let (Some(n), Some(_)) = (&name, &baseline)
    {
        regression_needs(&cfg.path, n, args.effect.min_effect)?;
    }
    if args.fail_on_regression && baseline.is_none() && !set_baseline {
        notes.push(match &name {
            Some(n) => format!(
                "--fail-on-regression: profile '{n}' has no baseline yet, so there is nothing to compare"
            ),
            None => "--fail-on-regression: no profile is in use, so there is no baseline to compare (--profile NAME)".into(),
        });
    }
    Ok((name, baseline, set_baseline))
}

/// `--fail-on-regression` against a baseline of another kind of run (its
/// transport, pattern, protocol, size, interval, DSCP, IP version or
/// reflector): a clear error before anything is measured, not a verdict
/// on apples and pears. (Setting the baseline again in the same run
/// replaces it, so that is allowed.)
fn like_the_baseline(p: &ClientPlan) -> Result<(), AppError> {
    let u = &p.profile;
    let (true, false, Some(b)) = (u.fail_on_regression, u.set_baseline, &u.baseline) else {
        return Ok(());
    };
    let Some(kind) = &b.kind else {
        return Ok(());
    };
    let differ = kind.differences(&p.run_kind());
    if differ.is_empty() {
        return Ok(());
    }
    Err(AppError::Usage(format!(
        "--fail-on-regression: the baseline of profile '{}' is of another kind of run (this one has {}): set it again for this kind (--set-baseline) or use another profile",
        u.name.as_deref().unwrap_or_default(),
        differ.join(", ")
    )))
}

/// `--fail-on-regression 10` (a percentage, as the option once took) would
/// read the number as the reflector's address: say what it is now.
fn old_fail_on_regression(fail_on_regression: bool, addr: &str) -> Result<(), AppError> {
    if fail_on_regression && addr.trim_end_matches('%').parse::<f64>().is_ok() {
        return Err(AppError::Usage(format!(
            "--fail-on-regression takes no percentage now (it runs the significance test of `synapse compare`): write --fail-on-regression --min-effect {addr}"
        )));
    }
    Ok(())
}

/// `--fail-on-regression` against a baseline without stored runs can only
/// use the old rule on its stored p50 and p99, which needs `--min-effect`:
/// refused, rather than a verdict that passes on what it did not check. (A
/// baseline of one stored run is judged by the test, which answers
/// inconclusive where one run a side cannot tell.)
fn regression_needs(
    config: &std::path::Path,
    name: &str,
    min_effect: Option<f64>,
) -> Result<(), AppError> {
    if min_effect.is_some() || crate::config::baseline_runs::count(config, name) > 0 {
        return Ok(());
    }
    Err(AppError::Usage(format!(
        "--fail-on-regression: the baseline of profile '{name}' has no interval logs (it was set before Synapse kept them), so only the old rule on its stored p50 and p99 can judge it, and that rule needs --min-effect PERCENT (or set the baseline again)"
    )))
}
