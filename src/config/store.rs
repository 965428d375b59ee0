//! Writing the configuration: edits go through `toml_edit`, so every
//! comment and blank line the user wrote stays where it was, and the new
//! text replaces the old by rename, so the file is never half-written.

use super::baseline::Baseline;
use super::error::ConfigError;
use super::settings::{Settings, options};
use clap::Command;
use std::io::Write;
use std::path::Path;
use toml_edit::{DocumentMut, Item, Table, value};

fn read_doc(path: &Path) -> Result<DocumentMut, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(ConfigError::io(path, &e)),
    };
    text.parse::<DocumentMut>().map_err(|e| ConfigError {
        path: path.to_path_buf(),
        line: 0,
        column: 0,
        key: String::new(),
        message: format!("not valid TOML: {}", e.message().trim()),
    })
}

/// Writes `doc` to `path` via a temporary file in the same directory and a
/// rename: readers see the old file or the new one, never a mix. The old
/// file's permissions carry over.
fn write_doc(path: &Path, doc: &DocumentMut) -> Result<(), ConfigError> {
    let io_err = |e: std::io::Error| ConfigError::io(path, &e);
    let dir = parent_dir(path);
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io_err)?;
    if let Ok(meta) = std::fs::metadata(path) {
        tmp.as_file()
            .set_permissions(meta.permissions())
            .map_err(io_err)?;
    }
    tmp.write_all(doc.to_string().as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(io_err)?;
    tmp.persist(path).map_err(|e| io_err(e.error))?;
    // The rename itself is durable only once the directory is.
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err)
}

fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Where the file really is: a symlink is followed, even when its target
/// does not exist yet (a dotfile manager's link to a file still to come).
fn real_path(path: &Path) -> std::path::PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    match std::fs::read_link(path) {
        Ok(target) if target.is_absolute() => target,
        Ok(target) => parent_dir(path).join(target),
        Err(_) => path.to_path_buf(),
    }
}

/// Read, change, write, under an exclusive lock so that two runs saving at
/// once do not lose each other's edits. A symlinked file (dotfile
/// managers) is edited where it really lives. `change` says whether it
/// changed anything.
fn edit(
    path: &Path,
    change: impl FnOnce(&mut DocumentMut) -> Result<bool, ConfigError>,
) -> Result<bool, ConfigError> {
    let io_err = |e: std::io::Error| ConfigError::io(path, &e);
    let real = real_path(path);
    std::fs::create_dir_all(parent_dir(&real)).map_err(io_err)?;
    // The lock is taken on the directory, which is there anyway: nothing
    // is left behind, and the file itself is replaced by rename, so a lock
    // on it would not hold across writers.
    let lock = std::fs::File::open(parent_dir(&real)).map_err(io_err)?;
    lock.lock().map_err(io_err)?;
    let mut doc = read_doc(&real)?;
    let changed = change(&mut doc)?;
    if changed {
        write_doc(&real, &doc)?;
    }
    Ok(changed)
}

/// Replaces the file's text with `new` if it still reads `old` (under the
/// same lock as every edit); whether it did.
pub fn replace_text(path: &Path, old: &str, new: &str) -> Result<bool, ConfigError> {
    edit(path, |doc| {
        if doc.to_string() != old {
            return Ok(false);
        }
        *doc = new.parse::<DocumentMut>().map_err(|e| ConfigError {
            path: path.to_path_buf(),
            line: 0,
            column: 0,
            key: String::new(),
            message: format!("not valid TOML: {}", e.message().trim()),
        })?;
        Ok(true)
    })
}

/// The `[profiles.NAME]` table, created (implicitly, as a dotted header)
/// when missing.
fn profile_table<'d>(doc: &'d mut DocumentMut, name: &str) -> Result<&'d mut Table, ConfigError> {
    let path_err = |what: &str| ConfigError {
        path: Default::default(),
        line: 0,
        column: 0,
        key: format!("profiles.{name}"),
        message: format!("{what} is not a table"),
    };
    let profiles = doc
        .entry("profiles")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| path_err("profiles"))?;
    profiles
        .entry(name)
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_mut()
        .ok_or_else(|| path_err("the profile"))
}

/// Saves `settings` as profile `name`: every option of `schema` it sets
/// is written (existing keys keep their comments), options it leaves unset
/// are removed, and the baseline, if any, is kept.
pub fn save_profile(
    path: &Path,
    name: &str,
    settings: &Settings,
    schema: &Command,
) -> Result<(), ConfigError> {
    edit(path, |doc| {
        write_settings(doc, path, name, settings, schema)?;
        Ok(true)
    })
    .map(|_| ())
}

fn write_settings(
    doc: &mut DocumentMut,
    path: &Path,
    name: &str,
    settings: &Settings,
    schema: &Command,
) -> Result<(), ConfigError> {
    let t = profile_table(doc, name).map_err(|e| ConfigError {
        path: path.to_path_buf(),
        ..e
    })?;
    for arg in options(schema) {
        let key = arg.get_id().as_str();
        match settings.toml_value(schema, key) {
            Some(v) => match t.get_mut(key).and_then(Item::as_value_mut) {
                // Replace the value in place, keeping the comment after it.
                Some(old) => {
                    let decor = old.decor().clone();
                    *old = v;
                    *old.decor_mut() = decor;
                }
                None => {
                    t.insert(key, value(v));
                }
            },
            None => {
                t.remove(key);
            }
        }
    }
    Ok(())
}

/// Stores `baseline` in profile `name`, which must exist.
pub fn save_baseline(path: &Path, name: &str, baseline: &Baseline) -> Result<(), ConfigError> {
    edit(path, |doc| {
        if doc.get("profiles").and_then(|p| p.get(name)).is_none() {
            return Err(ConfigError {
                path: path.to_path_buf(),
                line: 0,
                column: 0,
                key: format!("profiles.{name}"),
                message: "no such profile to hold a baseline".into(),
            });
        }
        let t = profile_table(doc, name).map_err(|e| ConfigError {
            path: path.to_path_buf(),
            ..e
        })?;
        t.insert("baseline", Item::Table(baseline.to_table()));
        Ok(true)
    })
    .map(|_| ())
}

/// Deletes profile `name`. Returns whether it existed.
pub fn remove_profile(path: &Path, name: &str) -> Result<bool, ConfigError> {
    edit(path, |doc| {
        Ok(doc
            .get_mut("profiles")
            .and_then(Item::as_table_mut)
            .and_then(|p| p.remove(name))
            .is_some())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::settings_schema;
    use crate::config::ConfigFile;

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        Settings::of(pairs)
    }

    fn save(path: &Path, name: &str, s: &Settings) -> Result<(), ConfigError> {
        save_profile(path, name, s, &settings_schema())
    }

    fn parse(path: &Path, text: &str) -> ConfigFile {
        ConfigFile::parse(path.to_path_buf(), text, &settings_schema()).unwrap()
    }

    const COMMENTED: &str = "\
# My Synapse setup. Keep this comment!
[defaults]
warmup = 500 # generous warm-up

# The lab pair
[profiles.lab]
server = \"10.0.0.2:8080\" # the far box
size = 64
duration = \"10s\"
";

    #[test]
    fn saving_keeps_comments_and_formatting() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, COMMENTED).unwrap();
        let s = settings(&[
            ("server", "10.0.0.2:8080"),
            ("size", "128"),
            ("packets", "5000"),
        ]);
        save(&path, "lab", &s).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# My Synapse setup. Keep this comment!\n[defaults]\nwarmup = 500 # generous warm-up\n"), "{text}");
        assert!(text.contains("# The lab pair\n[profiles.lab]\n"), "{text}");
        assert!(
            text.contains("server = \"10.0.0.2:8080\" # the far box\n"),
            "{text}"
        );
        assert!(text.contains("size = 128\n"), "{text}");
        assert!(text.contains("packets = 5000\n"), "{text}");
        assert!(!text.contains("duration"), "unset keys are removed: {text}");
        let f = parse(&path, &text);
        assert_eq!(f.profile("lab").unwrap().settings.text("size"), Some("128"));
    }

    #[test]
    fn a_new_profile_and_baseline_go_into_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/config.toml");
        let s = settings(&[("server", "[::1]:9"), ("threshold", "250us")]);
        save(&path, "v6", &s).unwrap();
        let b = Baseline {
            date: "2026-11-21T10:00:00Z".into(),
            p50_ns: 1,
            p99_ns: 2,
            p999_ns: 3,
            loss_percent: 0.5,
            timestamp_source: "user".into(),
            kind: None,
        };
        save_baseline(&path, "v6", &b).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let f = parse(&path, &text);
        let p = f.profile("v6").unwrap();
        assert_eq!(p.settings.text("threshold"), Some("250us"));
        assert_eq!(p.baseline.as_ref(), Some(&b));
        // Saving the settings again keeps the baseline.
        save(&path, "v6", &s).unwrap();
        let f = parse(&path, &std::fs::read_to_string(&path).unwrap());
        assert_eq!(f.profile("v6").unwrap().baseline.as_ref(), Some(&b));
    }

    #[test]
    fn removing_deletes_only_that_profile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(
            &path,
            "[profiles.a]\nsize = 9\n\n# keep\n[profiles.b]\nsize = 10\n",
        )
        .unwrap();
        assert!(remove_profile(&path, "a").unwrap());
        assert!(!remove_profile(&path, "a").unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        // The blank line before "# keep" belongs to profile b's comment.
        assert_eq!(text, "\n# keep\n[profiles.b]\nsize = 10\n");
    }

    #[test]
    fn a_symlinked_file_is_edited_in_place_and_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles").join("synapse.toml");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "# mine\n[defaults]\nwarmup = 1\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("config.toml");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        save(&link, "p", &settings(&[("size", "9")])).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink(),
            "the link stays a link"
        );
        let text = std::fs::read_to_string(&real).unwrap();
        assert!(
            text.starts_with("# mine\n") && text.contains("size = 9"),
            "{text}"
        );
        assert_eq!(
            std::fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o640
        );
    }

    #[test]
    fn a_dangling_symlink_gets_its_target_created() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("dotfiles").join("synapse.toml");
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        let link = dir.path().join("config.toml");
        std::os::unix::fs::symlink("dotfiles/synapse.toml", &link).unwrap();
        save(&link, "p", &settings(&[("size", "9")])).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(
            std::fs::read_to_string(&target)
                .unwrap()
                .contains("size = 9")
        );
    }

    #[test]
    fn concurrent_saves_keep_every_profile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let s = settings(&[("size", &(8 + i).to_string())]);
                    save(&path, &format!("p{i}"), &s).unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let f = parse(&path, &std::fs::read_to_string(&path).unwrap());
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["config.toml"], "no lock file left behind");
        assert_eq!(f.profiles.len(), 8, "{:?}", f.profiles.keys());
    }

    #[test]
    fn a_baseline_needs_its_profile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let b = Baseline {
            date: String::new(),
            p50_ns: 0,
            p99_ns: 0,
            p999_ns: 0,
            loss_percent: 0.0,
            timestamp_source: "user".into(),
            kind: None,
        };
        let e = save_baseline(&path, "ghost", &b).unwrap_err().to_string();
        assert!(
            e.ends_with("profiles.ghost: no such profile to hold a baseline"),
            "{e}"
        );
    }
}
