//! Configuration: the TOML file, its profiles per host pair, and baselines.
//!
//! - [`settings`]: one layer's options, read and checked against the
//!   command line's own declaration (keys are option ids, values go through
//!   each flag's parser), so no option is named in this module.
//! - [`file`]: the file's tables (`[defaults]`, `[profiles.NAME]`).
//! - [`error`]: errors that name file, line, column and key.
//! - [`layering`]: command line > profile > file defaults > built-in, in one
//!   place.
//! - [`store`]: edits that keep the user's comments and formatting, written
//!   atomically.
//! - [`baseline`]: what "normal" looked like, and how a run compares.
//! - [`key_file`]: the STAMP key file (`--hmac-key-file`).

pub mod baseline;
pub mod baseline_runs;
pub mod error;
pub mod file;
pub mod key_file;
pub mod layering;
pub mod migrate;
pub mod run_kind;
pub mod settings;
pub mod store;

pub use baseline::{Baseline, BaselineComparison, RegressionRule, rfc3339_utc};
pub use error::{ConfigError, Loc};
pub use file::{ConfigFile, Profile};
pub use run_kind::RunKind;
pub use settings::Settings;

use clap::Command;
use std::path::PathBuf;

/// Where the configuration lives: `--config`, else
/// `$XDG_CONFIG_HOME/synapse/config.toml`, else `~/.config/synapse/config.toml`.
pub fn config_path(explicit: Option<&PathBuf>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.clone());
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("synapse").join("config.toml"))
}

/// Loads the configuration, checking every table against `schema` (the
/// options a table may set). A missing file at the default location is an
/// empty configuration; a missing file named by `--config` is an error,
/// unless the run is about to create it (`will_save`).
pub fn load(
    explicit: Option<&PathBuf>,
    will_save: bool,
    schema: &Command,
) -> Result<ConfigFile, ConfigError> {
    let Some(path) = config_path(explicit) else {
        return Ok(ConfigFile::empty(PathBuf::from("config.toml")));
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let text = migrate::read(&path, text);
            ConfigFile::parse(path, &text, schema)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && (explicit.is_none() || will_save) => {
            Ok(ConfigFile::empty(path))
        }
        Err(e) => Err(ConfigError::io(&path, &e)),
    }
}
