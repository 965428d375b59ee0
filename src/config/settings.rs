//! The options one layer sets (the command line, a profile, `[defaults]`),
//! read and checked against the command-line declaration itself.
//!
//! A table's keys are the options' ids (`warmup`, `timeout_ms`, …). Each
//! value is turned into the text its flag would take and run through that
//! flag's own value parser, so a setting means the same thing wherever it
//! is written, and no option is named here: adding one to the command line
//! adds it to every table.

use super::error::{ConfigError, Loc};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgGroup, ArgMatches, Command};
use std::any::TypeId;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use toml_edit::{Item, Table, Value};

/// One option as a layer sets it.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The text(s) its flag would take; `true`/`false` for switches.
    pub values: Vec<String>,
    /// As written in the file (strings quoted), for messages.
    pub written: String,
    /// Where in the file; 0:0 for the command line.
    pub loc: Loc,
}

/// The options one layer sets, by id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings(BTreeMap<String, Setting>);

/// The options of `schema` that can appear in a table: every one with a
/// long flag, in declaration order.
pub fn options(schema: &Command) -> impl Iterator<Item = &Arg> {
    schema
        .get_arguments()
        .filter(|a| a.get_long().is_some() && !a.is_positional())
}

/// Whether `arg` is a switch (no value on the command line).
fn is_switch(arg: &Arg) -> bool {
    !arg.get_action().takes_values()
}

fn type_of(arg: &Arg) -> TypeId {
    let id = arg.get_value_parser().type_id();
    [
        TypeId::of::<u64>(),
        TypeId::of::<u32>(),
        TypeId::of::<u16>(),
        TypeId::of::<usize>(),
        TypeId::of::<i64>(),
        TypeId::of::<f64>(),
        TypeId::of::<Duration>(),
    ]
    .into_iter()
    .find(|t| id == *t)
    .unwrap_or(TypeId::of::<String>())
}

/// Whether `arg` holds a whole number (a TOML integer).
fn is_integer(arg: &Arg) -> bool {
    let t = type_of(arg);
    t != TypeId::of::<String>() && t != TypeId::of::<f64>() && t != TypeId::of::<Duration>()
}

fn describe(item: &Item) -> &'static str {
    match item {
        Item::Value(Value::String(_)) => "a string",
        Item::Value(Value::Integer(_)) => "an integer",
        Item::Value(Value::Float(_)) => "a float",
        Item::Value(Value::Boolean(_)) => "a boolean",
        Item::Value(Value::Datetime(_)) => "a date",
        Item::Value(Value::Array(_)) => "an array",
        Item::Value(Value::InlineTable(_)) | Item::Table(_) => "a table",
        Item::ArrayOfTables(_) => "an array of tables",
        Item::None => "nothing",
    }
}

/// Runs `value` through `arg`'s own parser. The message is the parser's.
pub fn check(schema: &Command, arg: &Arg, value: &str) -> Result<ArgMatches, String> {
    let long = arg.get_long().unwrap_or_default();
    let token = if is_switch(arg) {
        format!("--{long}")
    } else {
        format!("--{long}={value}")
    };
    schema.clone().try_get_matches_from([token]).map_err(|e| {
        std::error::Error::source(&e).map_or_else(
            || {
                let text = e.render().to_string();
                let first = text.lines().next().unwrap_or("invalid value").to_string();
                first.trim_start_matches("error: ").to_string()
            },
            ToString::to_string,
        )
    })
}

/// Reads one table's keys. `path`/`text` locate errors; `extra` are keys
/// the caller reads itself (skipped here, listed as known).
#[derive(Debug)]
pub struct TableReader<'a> {
    /// The file.
    pub path: &'a Path,
    /// Its text, for line and column.
    pub text: &'a str,
    /// The options a table may set.
    pub schema: &'a Command,
}

impl TableReader<'_> {
    fn err(&self, span: Option<std::ops::Range<usize>>, key: &str, msg: String) -> ConfigError {
        ConfigError::at(self.path, Loc::of(self.text, span), key, msg)
    }

    /// The settings of `table` (keys under `prefix`, e.g. `profiles.lab`).
    pub fn read(
        &self,
        table: &Table,
        prefix: &str,
        extra: &[&str],
    ) -> Result<Settings, ConfigError> {
        let mut out = Settings::default();
        for (name, item) in table.iter() {
            if extra.contains(&name) {
                continue;
            }
            let key = format!("{prefix}.{name}");
            let span = table.key(name).and_then(toml_edit::Key::span);
            let Some(arg) = options(self.schema).find(|a| a.get_id() == name) else {
                let known: Vec<&str> = options(self.schema)
                    .map(|a| a.get_id().as_str())
                    .chain(extra.iter().copied())
                    .collect();
                let msg = format!("unknown key '{name}' (known: {})", known.join(", "));
                return Err(self.err(span.or_else(|| item.span()), &key, msg));
            };
            let values = self.values(arg, item, &key)?;
            for v in &values {
                check(self.schema, arg, v).map_err(|m| self.err(item.span(), &key, m))?;
            }
            let written = item.as_value().map_or_else(String::new, |v| v.to_string());
            out.0.insert(
                name.to_string(),
                Setting {
                    values,
                    written: written.trim().to_string(),
                    loc: Loc::of(self.text, span.or_else(|| item.span())),
                },
            );
        }
        self.check_groups(&out, prefix)?;
        Ok(out)
    }

    /// The text(s) of one value, by what the option holds.
    fn values(&self, arg: &Arg, item: &Item, key: &str) -> Result<Vec<String>, ConfigError> {
        let expected = |what: &str| {
            self.err(
                item.span(),
                key,
                format!("expected {what}, found {}", describe(item)),
            )
        };
        if is_switch(arg) {
            return item
                .as_bool()
                .map(|b| vec![b.to_string()])
                .ok_or_else(|| expected("true or false"));
        }
        if matches!(arg.get_action(), ArgAction::Append)
            && let Some(array) = item.as_array()
        {
            return array
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| expected("an array of strings"));
        }
        if is_integer(arg) {
            return item
                .as_integer()
                .map(|n| vec![n.to_string()])
                .ok_or_else(|| expected("an integer"));
        }
        match item.as_value() {
            Some(Value::String(s)) => Ok(vec![s.value().clone()]),
            Some(Value::Integer(n)) => Ok(vec![n.value().to_string()]),
            Some(Value::Float(f)) => Ok(vec![f.value().to_string()]),
            _ => Err(expected("a string")),
        }
    }

    /// Options that exclude each other (a clap group) cannot both be set.
    fn check_groups(&self, s: &Settings, prefix: &str) -> Result<(), ConfigError> {
        for group in self
            .schema
            .get_groups()
            .filter(|g| !ArgGroup::clone(g).is_multiple())
        {
            let set: Vec<&str> = group
                .get_args()
                .map(clap::Id::as_str)
                .filter(|id| s.get(id).is_some())
                .collect();
            if let [first, .., last] = set.as_slice() {
                let loc = s.get(last).map(|x| x.loc).unwrap_or_default();
                return Err(ConfigError::at(
                    self.path,
                    loc,
                    &format!("{prefix}.{last}"),
                    format!("{first} and {last} cannot both be set"),
                ));
            }
        }
        Ok(())
    }
}

impl Settings {
    /// The options typed on the command line (not filled in by clap).
    pub fn from_matches(matches: &ArgMatches, schema: &Command) -> Self {
        let mut out = Self::default();
        for arg in options(schema) {
            let id = arg.get_id().as_str();
            let typed = matches.try_contains_id(id).unwrap_or(false)
                && matches.value_source(id) == Some(ValueSource::CommandLine);
            if !typed {
                continue;
            }
            let values: Vec<String> = if is_switch(arg) {
                vec!["true".into()]
            } else {
                matches
                    .get_raw(id)
                    .into_iter()
                    .flatten()
                    .map(|v| v.to_string_lossy().into_owned())
                    .collect()
            };
            out.set(id, values);
        }
        out
    }

    /// Settings from `(id, text)` pairs, as the command line sets them.
    pub fn of(pairs: &[(&str, &str)]) -> Self {
        let mut s = Self::default();
        for (id, text) in pairs {
            s.set(id, vec![(*text).to_string()]);
        }
        s
    }

    /// Sets `id` from the command line (or the program itself).
    pub fn set(&mut self, id: &str, values: Vec<String>) {
        let written = values.join(" ");
        self.0.insert(
            id.to_string(),
            Setting {
                values,
                written,
                loc: Loc::default(),
            },
        );
    }

    /// Removes `id`.
    pub fn remove(&mut self, id: &str) {
        self.0.remove(id);
    }

    /// One option, if this layer sets it.
    pub fn get(&self, id: &str) -> Option<&Setting> {
        self.0.get(id)
    }

    /// One option's (first) text, if this layer sets it.
    pub fn text(&self, id: &str) -> Option<&str> {
        self.get(id)
            .and_then(|s| s.values.first())
            .map(String::as_str)
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every option set, by id.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Setting)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// This layer with every option it leaves unset filled in from the
    /// declaration's defaults: the full set a run used.
    #[must_use]
    pub fn with_defaults(mut self, schema: &Command) -> Self {
        for arg in options(schema) {
            let id = arg.get_id().as_str();
            if self.get(id).is_some() {
                continue;
            }
            let defaults: Vec<String> = arg
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into_owned())
                .collect();
            if is_switch(arg) {
                self.set(id, vec!["false".into()]);
            } else if !defaults.is_empty() {
                self.set(id, defaults);
            }
        }
        self
    }

    /// One option as `profiles show` prints it: durations in words, the
    /// rest as written.
    pub fn shown(&self, schema: &Command, id: &str) -> Option<String> {
        let s = self.get(id)?;
        let arg = options(schema).find(|a| a.get_id() == id)?;
        if type_of(arg) == TypeId::of::<Duration>()
            && let Some(d) = s
                .values
                .first()
                .and_then(|v| check(schema, arg, v).ok())
                .and_then(|m| m.get_one::<Duration>(id).copied())
        {
            return Some(synapse_units::format_ns_plain(d.as_nanos() as u64));
        }
        Some(s.values.join(", "))
    }

    /// One option as it belongs in a TOML file.
    pub fn toml_value(&self, schema: &Command, id: &str) -> Option<Value> {
        let s = self.get(id)?;
        let arg = options(schema).find(|a| a.get_id() == id)?;
        let first = s.values.first()?;
        if is_switch(arg) {
            return Some(Value::from(first == "true"));
        }
        if matches!(arg.get_action(), ArgAction::Append) {
            return Some(Value::Array(s.values.iter().map(String::as_str).collect()));
        }
        if is_integer(arg)
            && let Ok(n) = first.parse::<i64>()
        {
            return Some(Value::from(n));
        }
        Some(Value::from(first.as_str()))
    }
}
