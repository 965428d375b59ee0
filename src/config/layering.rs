//! The one place where settings are layered: command line > selected
//! profile > file defaults > built-in defaults.

use super::schema::Settings;
use crate::cli::RunArgs;

/// Which options the user typed on the command line (as opposed to clap
/// filling in a default). Ids are the CLI's field names.
pub trait Explicit {
    /// Whether `id` was given on the command line.
    fn given(&self, id: &str) -> bool;
}

impl<F: Fn(&str) -> bool> Explicit for F {
    fn given(&self, id: &str) -> bool {
        self(id)
    }
}

/// The outcome of layering.
#[derive(Debug, Clone)]
pub struct Layered {
    /// Every run option, resolved.
    pub run: RunArgs,
    /// Local address, if any layer set one.
    pub bind: Option<String>,
    /// Reflector address, if any layer set one.
    pub server: Option<String>,
    /// What the user should know: where the command line overrode a profile.
    pub notes: Vec<String>,
}

/// A named profile's settings.
pub type Named<'a> = (&'a str, &'a Settings);

/// Layers the command line over a profile, the file's defaults and the
/// built-in defaults (which clap has already put in `cli` for options the
/// user did not give).
pub fn layer(
    cli: &RunArgs,
    cli_bind: Option<String>,
    cli_server: Option<String>,
    explicit: &dyn Explicit,
    profile: Option<Named>,
    defaults: &Settings,
) -> Layered {
    let mut notes = Vec::new();
    let mut run = cli.clone();
    let prof = profile.map(|(_, s)| s);
    // Picks the first layer that sets an option, noting profile overrides.
    macro_rules! pick {
        ($id:literal, $flag:literal, $field:ident, $cli:expr, $show:expr) => {{
            let from_profile = prof.and_then(|p| p.$field.clone());
            if explicit.given($id) {
                if let (Some((name, _)), Some(p)) = (profile, from_profile) {
                    if p != $cli {
                        notes.push(format!(
                            "{} on the command line wins over profile '{name}' ({} = {})",
                            $flag,
                            stringify!($field),
                            $show(&p)
                        ));
                    }
                }
                $cli
            } else {
                from_profile
                    .or_else(|| defaults.$field.clone())
                    .unwrap_or($cli)
            }
        }};
    }
    let plain = |v: &dyn std::fmt::Display| v.to_string();
    let quoted = |v: &String| format!("\"{v}\"");
    let dur = |d: &std::time::Duration| format!("{d:?}");
    run.warmup = pick!("warmup", "--warmup", warmup, cli.warmup, |v: &u64| plain(v));
    run.timeout = pick!(
        "timeout",
        "--timeout",
        timeout_ms,
        cli.timeout,
        |v: &u64| plain(v)
    );
    run.update = pick!("update", "--update", update, cli.update, |v: &u64| plain(v));
    run.size = pick!("size", "--size", size, cli.size, |v: &usize| plain(v));
    run.fps = pick!("fps", "--fps", fps, cli.fps, |v: &u32| plain(v));
    run.timestamps = pick!(
        "timestamps",
        "--timestamps",
        timestamps,
        cli.timestamps,
        |v: &crate::engine::TimestampMode| format!("\"{}\"", v.name())
    );
    run.stamp = pick!("stamp", "--stamp", stamp, cli.stamp, |v: &bool| plain(v));
    run.threshold = pick!("threshold", "--threshold", threshold, cli.threshold, dur);
    run.thread.busy_poll = pick!(
        "busy_poll",
        "--busy-poll",
        busy_poll,
        cli.thread.busy_poll,
        |v: &bool| plain(v)
    );
    run.thread.rt = pick!("rt", "--rt", rt, cli.thread.rt, |v: &bool| plain(v));
    run.thread.cpu = if explicit.given("cpu") {
        pick!(
            "cpu",
            "--cpu",
            cpu,
            cli.thread.cpu.unwrap_or_default(),
            |v: &usize| plain(v)
        );
        cli.thread.cpu
    } else {
        prof.and_then(|p| p.cpu).or(defaults.cpu)
    };
    let bind = match cli_bind {
        Some(b) => {
            pick!("bind", "--bind", bind, b.clone(), quoted);
            Some(b)
        }
        None => prof
            .and_then(|p| p.bind.clone())
            .or_else(|| defaults.bind.clone()),
    };
    let server = cli_server
        .or_else(|| prof.and_then(|p| p.server.clone()))
        .or_else(|| defaults.server.clone());

    // Packets and duration are one choice: the highest layer that makes it wins.
    let budget = |s: &Settings| {
        (s.packets.is_some() || s.duration.is_some()).then_some((s.packets, s.duration))
    };
    if explicit.given("packets") || explicit.given("duration") {
        if let (Some((name, p)), Some(_)) = (profile, prof.and_then(budget)) {
            let flag = if explicit.given("packets") {
                "--packets"
            } else {
                "--duration"
            };
            let theirs = match (p.packets, p.duration) {
                (Some(n), _) => format!("packets = {n}"),
                (_, Some(d)) => format!("duration = {d:?}"),
                _ => unreachable!("budget() checked one is set"),
            };
            let same = (run.packets, run.duration) == (p.packets, p.duration);
            if !same {
                notes.push(format!(
                    "{flag} on the command line wins over profile '{name}' ({theirs})"
                ));
            }
        }
    } else if let Some((packets, duration)) = prof.and_then(budget).or_else(|| budget(defaults)) {
        run.packets = packets;
        run.duration = duration;
    }
    Layered {
        run,
        bind,
        server,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn given(ids: &'static [&'static str]) -> impl Fn(&str) -> bool {
        move |id| ids.contains(&id)
    }

    fn profile() -> Settings {
        Settings {
            server: Some("10.0.0.2:8080".into()),
            size: Some(1400),
            warmup: Some(10),
            packets: Some(1_000),
            busy_poll: Some(true),
            ..Settings::default()
        }
    }

    #[test]
    fn command_line_beats_profile_beats_defaults_beats_builtin() {
        let mut cli = RunArgs::defaults();
        cli.size = 64;
        let defaults = Settings {
            size: Some(256),
            timeout_ms: Some(250),
            warmup: Some(99),
            ..Settings::default()
        };
        let p = profile();
        let l = layer(
            &cli,
            None,
            None,
            &given(&["size"]),
            Some(("lab", &p)),
            &defaults,
        );
        assert_eq!(l.run.size, 64, "command line");
        assert_eq!(l.run.warmup, 10, "profile over defaults");
        assert_eq!(l.run.timeout, 250, "defaults over built-in");
        assert_eq!(l.run.update, 100, "built-in");
        assert!(l.run.thread.busy_poll);
        assert_eq!(l.run.packets, Some(1_000));
        assert_eq!(l.server.as_deref(), Some("10.0.0.2:8080"));
        assert_eq!(
            l.notes,
            vec!["--size on the command line wins over profile 'lab' (size = 1400)"]
        );
    }

    #[test]
    fn a_duration_on_the_command_line_replaces_the_profiles_packet_count() {
        let mut cli = RunArgs::defaults();
        cli.duration = Some(Duration::from_secs(5));
        let p = profile();
        let l = layer(
            &cli,
            None,
            None,
            &given(&["duration"]),
            Some(("lab", &p)),
            &Settings::default(),
        );
        assert_eq!(
            (l.run.packets, l.run.duration),
            (None, Some(Duration::from_secs(5)))
        );
        assert_eq!(
            l.notes,
            vec!["--duration on the command line wins over profile 'lab' (packets = 1000)"]
        );
    }

    #[test]
    fn the_same_value_on_both_sides_is_not_a_conflict() {
        let mut cli = RunArgs::defaults();
        cli.size = 1400;
        let p = profile();
        let l = layer(
            &cli,
            None,
            None,
            &given(&["size"]),
            Some(("lab", &p)),
            &Settings::default(),
        );
        assert!(l.notes.is_empty(), "{:?}", l.notes);
    }

    #[test]
    fn without_a_profile_the_defaults_table_applies() {
        let cli = RunArgs::defaults();
        let defaults = Settings {
            duration: Some(Duration::from_secs(3)),
            fps: Some(10),
            ..Settings::default()
        };
        let l = layer(&cli, None, None, &given(&[]), None, &defaults);
        assert_eq!(l.run.duration, Some(Duration::from_secs(3)));
        assert_eq!(l.run.fps, 10);
        assert!(l.notes.is_empty());
    }
}
