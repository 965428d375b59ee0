//! The one place where settings are layered: command line > selected
//! profile > file defaults > built-in defaults. Generic over the options'
//! declaration: the chosen texts are handed back to clap, which parses them
//! with the same parsers and defaults as a typed command line.

use super::settings::{Settings, options};
use clap::{ArgGroup, ArgMatches, Command, FromArgMatches};
use std::collections::BTreeSet;

/// A named profile's settings.
pub type Named<'a> = (&'a str, &'a Settings);

/// The outcome of layering.
#[derive(Debug, Clone)]
pub struct Layered {
    /// What each option was set to, by the highest layer that set it.
    pub chosen: Settings,
    /// What the user should know: where the command line overrode a profile.
    pub notes: Vec<String>,
}

/// Layers the command line over a profile and the file's defaults.
/// Options that exclude each other (a clap group, such as a packet count
/// and a time budget) are one choice: the highest layer that makes it wins
/// for all of them.
pub fn layer(
    schema: &Command,
    cli: &Settings,
    profile: Option<Named>,
    defaults: &Settings,
) -> Layered {
    let mut notes = Vec::new();
    let mut group_notes = Vec::new();
    // Options a lower layer may not set, because a higher one made the
    // choice for their group.
    let mut masked_profile = BTreeSet::new();
    let mut masked_defaults = BTreeSet::new();
    for group in schema
        .get_groups()
        .filter(|g| !ArgGroup::clone(g).is_multiple())
    {
        let members: Vec<&str> = group.get_args().map(clap::Id::as_str).collect();
        let sets = |s: &Settings| members.iter().any(|m| s.get(m).is_some());
        let in_profile = profile.is_some_and(|(_, p)| sets(p));
        if sets(cli) {
            masked_profile.extend(members.iter().copied());
            masked_defaults.extend(members.iter().copied());
            if let Some((name, p)) = profile.filter(|_| in_profile) {
                let mine = members.iter().find(|m| cli.get(m).is_some());
                let theirs = members.iter().find(|m| p.get(m).is_some());
                if let (Some(mine), Some(theirs)) = (mine, theirs)
                    && (mine != theirs
                        || cli.get(mine).map(|s| &s.values) != p.get(mine).map(|s| &s.values))
                {
                    let written = p.get(theirs).map_or("", |s| s.written.as_str());
                    group_notes.push(format!(
                        "{} on the command line wins over profile '{name}' ({theirs} = {written})",
                        flag(schema, mine)
                    ));
                }
            }
        } else if in_profile {
            masked_defaults.extend(members.iter().copied());
        }
    }
    let mut chosen = Settings::default();
    for arg in options(schema) {
        let id = arg.get_id().as_str();
        let from_profile = profile
            .filter(|_| !masked_profile.contains(id))
            .and_then(|(name, p)| p.get(id).map(|s| (name, s)));
        let picked = match (cli.get(id), from_profile) {
            (Some(mine), Some((name, theirs))) => {
                if mine.values != theirs.values && !masked_profile.contains(id) {
                    notes.push(format!(
                        "{} on the command line wins over profile '{name}' ({id} = {})",
                        flag(schema, id),
                        theirs.written
                    ));
                }
                Some(mine)
            }
            (Some(mine), None) => Some(mine),
            (None, Some((_, theirs))) => Some(theirs),
            (None, None) => defaults.get(id).filter(|_| !masked_defaults.contains(id)),
        };
        if let Some(s) = picked {
            chosen.set(id, s.values.clone());
        }
    }
    notes.extend(group_notes);
    Layered { chosen, notes }
}

/// `--long` of option `id`.
fn flag(schema: &Command, id: &str) -> String {
    options(schema)
        .find(|a| a.get_id() == id)
        .and_then(clap::Arg::get_long)
        .map_or_else(|| id.to_string(), |l| format!("--{l}"))
}

impl Layered {
    /// The layered options as clap would have parsed them from a command
    /// line: typed, with the declaration's defaults for the rest.
    pub fn parse<T: FromArgMatches>(&self, schema: &Command) -> Result<T, String> {
        let matches = self.matches(schema)?;
        T::from_arg_matches(&matches).map_err(|e| e.to_string())
    }

    fn matches(&self, schema: &Command) -> Result<ArgMatches, String> {
        let mut argv = Vec::new();
        for arg in options(schema) {
            let id = arg.get_id().as_str();
            let (Some(long), Some(s)) = (arg.get_long(), self.chosen.get(id)) else {
                continue;
            };
            if arg.get_action().takes_values() {
                argv.extend(s.values.iter().map(|v| format!("--{long}={v}")));
            } else if s.values.first().is_some_and(|v| v == "true") {
                argv.push(format!("--{long}"));
            }
        }
        schema
            .clone()
            .try_get_matches_from(argv)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{RunArgs, settings_schema};
    use std::time::Duration;

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        Settings::of(pairs)
    }

    /// Layers the three and parses the run options.
    fn run_of(cli: &Settings, profile: Option<Named>, defaults: &Settings) -> (RunArgs, Layered) {
        let schema = settings_schema();
        let l = layer(&schema, cli, profile, defaults);
        (l.parse(&schema).unwrap(), l)
    }

    fn profile() -> Settings {
        settings(&[
            ("server", "10.0.0.2:8080"),
            ("size", "1400"),
            ("warmup", "10"),
            ("packets", "1000"),
            ("busy_poll", "true"),
        ])
    }

    #[test]
    fn command_line_beats_profile_beats_defaults_beats_builtin() {
        let cli = settings(&[("size", "64")]);
        let defaults = settings(&[("size", "256"), ("timeout_ms", "250ms"), ("warmup", "99")]);
        let p = profile();
        let (run, l) = run_of(&cli, Some(("lab", &p)), &defaults);
        assert_eq!(run.packet.size, 64, "command line");
        assert_eq!(run.warmup, Some(10), "profile over defaults");
        assert_eq!(
            run.clock.timeout_ms,
            Duration::from_millis(250),
            "defaults over built-in"
        );
        assert_eq!(run.update, None, "built-in: each consumer's own");
        assert!(run.thread.busy_poll);
        assert_eq!(run.packets, Some(1_000));
        assert_eq!(l.chosen.text("server"), Some("10.0.0.2:8080"));
        assert_eq!(
            l.notes,
            vec!["--size on the command line wins over profile 'lab' (size = 1400)"]
        );
    }

    #[test]
    fn a_duration_on_the_command_line_replaces_the_profiles_packet_count() {
        let cli = settings(&[("duration", "5s")]);
        let p = profile();
        let (run, l) = run_of(&cli, Some(("lab", &p)), &Settings::default());
        assert_eq!(
            (run.packets, run.duration),
            (None, Some(Duration::from_secs(5)))
        );
        assert_eq!(
            l.notes,
            vec!["--duration on the command line wins over profile 'lab' (packets = 1000)"]
        );
    }

    #[test]
    fn a_profiles_budget_hides_the_defaults_one() {
        let defaults = settings(&[("duration", "3s")]);
        let p = profile();
        let (run, _) = run_of(&Settings::default(), Some(("lab", &p)), &defaults);
        assert_eq!((run.packets, run.duration), (Some(1000), None));
    }

    #[test]
    fn the_same_value_on_both_sides_is_not_a_conflict() {
        let schema = settings_schema();
        let cli = settings(&[("size", "1400")]);
        let p = profile();
        let l = layer(&schema, &cli, Some(("lab", &p)), &Settings::default());
        assert!(l.notes.is_empty(), "{:?}", l.notes);
    }

    #[test]
    fn without_a_profile_the_defaults_table_applies() {
        let defaults = settings(&[("duration", "3s"), ("fps", "10")]);
        let (run, l) = run_of(&Settings::default(), None, &defaults);
        assert_eq!(run.duration, Some(Duration::from_secs(3)));
        assert_eq!(run.fps, 10);
        assert!(l.notes.is_empty());
    }

    #[test]
    fn switches_set_false_in_a_higher_layer_stay_off() {
        let cli = Settings::default();
        let p = settings(&[("busy_poll", "false")]);
        let defaults = settings(&[("busy_poll", "true")]);
        let (run, _) = run_of(&cli, Some(("lab", &p)), &defaults);
        assert!(!run.thread.busy_poll);
    }
}
