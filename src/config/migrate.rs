//! Files saved before every duration needed its unit (issue 51): a bare
//! number meant milliseconds to some options and seconds to others
//! ([`crate::cli::BARE_NUMBERS_WERE`]). Such a value is read as it was
//! meant, and the file is rewritten with the unit spelled out (comments
//! and layout kept), so it reads the same under the one rule from now on.
//! A note says what changed; a file that cannot be rewritten is still
//! read right, and the note says so.

use super::store;
use crate::cli::BARE_NUMBERS_WERE;
use std::path::Path;
use toml_edit::{DocumentMut, Item, Table, Value};

/// One value given its unit: where, what it was, what it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migrated {
    /// `profiles.lab.timeout_ms`.
    pub key: String,
    /// As it was written: `100`.
    pub was: String,
    /// As it is now: `"100ms"`.
    pub now: String,
}

/// `text` with every bare duration given its old unit, and what changed
/// (nothing: `text` as it was). Not TOML: unchanged, for the parser to
/// say why.
pub fn bare_durations(text: &str) -> (String, Vec<Migrated>) {
    let Ok(mut doc) = text.parse::<DocumentMut>() else {
        return (text.to_string(), Vec::new());
    };
    let mut done = Vec::new();
    migrate_table(doc.as_table_mut(), "", &mut done);
    if done.is_empty() {
        return (text.to_string(), done);
    }
    (doc.to_string(), done)
}

fn migrate_table(t: &mut Table, prefix: &str, done: &mut Vec<Migrated>) {
    for (key, item) in t.iter_mut() {
        let name = format!("{prefix}{key}");
        match item {
            Item::Table(sub) => migrate_table(sub, &format!("{name}."), done),
            Item::Value(v) => {
                let Some(&(_, was)) = BARE_NUMBERS_WERE.iter().find(|(id, _)| *id == key.get())
                else {
                    continue;
                };
                if let Some(new) = migrated(v, was) {
                    done.push(Migrated {
                        key: name,
                        was: written(v),
                        now: written(&new),
                    });
                    let decor = v.decor().clone();
                    *v = new;
                    *v.decor_mut() = decor;
                }
            }
            _ => {}
        }
    }
}

/// A value as written, without the comment and spaces around it.
fn written(v: &Value) -> String {
    let mut v = v.clone();
    v.decor_mut().clear();
    v.to_string()
}

/// A value with its unit where it had none (an array: each item).
fn migrated(v: &Value, was: synapse_units::DefaultUnit) -> Option<Value> {
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.value().clone()),
        Value::Integer(n) => Some(n.value().to_string()),
        Value::Float(f) => Some(f.value().to_string()),
        _ => None,
    };
    if let Value::Array(items) = v {
        let new: Vec<Option<String>> = items
            .iter()
            .map(|i| text(i).and_then(|t| synapse_units::with_old_unit(&t, was)))
            .collect();
        if new.iter().all(Option::is_none) {
            return None;
        }
        let mut out = toml_edit::Array::new();
        for (old, new) in items.iter().zip(new) {
            match new {
                Some(n) => out.push(n),
                None => out.push(old.clone()),
            }
        }
        return Some(Value::Array(out));
    }
    synapse_units::with_old_unit(&text(v)?, was).map(Value::from)
}

/// Reads `text` (the file at `path`) under the one rule: bare durations
/// get their old units, the file is rewritten, and a note says so.
/// Returns the text to parse.
pub fn read(path: &Path, text: String) -> String {
    let (new, done) = bare_durations(&text);
    if done.is_empty() {
        return text;
    }
    let list: Vec<String> = done
        .iter()
        .map(|m| format!("{} = {} → {}", m.key, m.was, m.now))
        .collect();
    let kept = match store::replace_text(path, &text, &new) {
        Ok(true) => "rewritten with their units".to_string(),
        Ok(false) => "read so (the file changed meanwhile; it was left alone)".to_string(),
        Err(e) => format!("read so (the file could not be rewritten: {})", e.message),
    };
    crate::console::note(&format!(
        "{}: durations saved without a unit, read as they were meant and {kept}: {}",
        path.display(),
        list.join("; ")
    ));
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_durations_get_their_old_units_and_keep_their_comments() {
        let old = "\
[defaults]
timeout_ms = 100 # patient
duration = 30

[profiles.lab]
threshold = [\"p99=5\", \"2ms\"]
max_outage = \"500\"
warmup = 50
timeout_ms = \"250us\"

[agent]
report_every = 10
";
        let (new, done) = bare_durations(old);
        assert!(new.contains("timeout_ms = \"100ms\" # patient\n"), "{new}");
        assert!(new.contains("duration = \"30s\"\n"), "{new}");
        assert!(new.contains("threshold = [\"p99=5ms\", \"2ms\"]"), "{new}");
        assert!(new.contains("max_outage = \"500ms\"\n"), "{new}");
        assert!(new.contains("warmup = 50\n"), "not a duration: {new}");
        assert!(
            new.contains("timeout_ms = \"250us\"\n"),
            "had its unit: {new}"
        );
        assert!(new.contains("report_every = \"10s\"\n"), "{new}");
        let keys: Vec<&str> = done.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "defaults.timeout_ms",
                "defaults.duration",
                "profiles.lab.threshold",
                "profiles.lab.max_outage",
                "agent.report_every"
            ]
        );
        assert_eq!(
            (done[0].was.as_str(), done[0].now.as_str()),
            ("100", "\"100ms\"")
        );
        let (again, none) = bare_durations(&new);
        assert_eq!((again, none), (new, Vec::new()), "migrated once");
    }

    #[test]
    fn a_saved_profile_is_rewritten_and_read_as_it_was_meant() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let old = "[profiles.lab]\nserver = \"10.0.0.2:8080\"\ntimeout_ms = 100\nduration = 30\n";
        std::fs::write(&path, old).unwrap();
        let schema = crate::cli::settings_schema();
        let f = super::super::load(Some(&path), false, &schema).unwrap();
        let s = &f.profile("lab").unwrap().settings;
        assert_eq!(
            (s.text("timeout_ms"), s.text("duration")),
            (Some("100ms"), Some("30s"))
        );
        let now = std::fs::read_to_string(&path).unwrap();
        assert!(
            now.contains("timeout_ms = \"100ms\"") && now.contains("duration = \"30s\""),
            "{now}"
        );
    }
}
