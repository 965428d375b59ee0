//! The user documentation against the program it documents.
//!
//! - `docs/options.md` is generated from the command line's definition
//!   (`options_md`); a test fails when the file differs from it, and
//!   `UPDATE_DOCS=1 cargo test --test docs` writes it anew.
//! - The real binary's `--help` of every command lists the options
//!   `docs/options.md` lists for it (`help_matches`, against the rendering).
//! - README.md and every `docs/*.md` name only options that exist
//!   (`option_names`).
//! - Their example outputs are what the program prints (`examples`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../it/common/announce.rs"]
#[allow(dead_code)]
mod announce;
mod examples;
mod help_matches;
mod option_names;
mod options_md;

use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `docs/options.md`.
fn options_md_path() -> PathBuf {
    root().join("docs/options.md")
}

/// A document's text; `docs/options.md` as rendered (the test that compares
/// the file with its rendering runs alongside, and may be rewriting it).
fn read_doc(path: &Path) -> String {
    if path == options_md_path() {
        options_md::render(&command())
    } else {
        std::fs::read_to_string(path).unwrap()
    }
}

/// The whole command line, built (subcommands know their full names, global
/// options are propagated, `--help` and `--version` are added).
fn command() -> clap::Command {
    let mut cmd = synapse::cli::command();
    cmd.build();
    cmd
}

/// The command and every subcommand below it, depth first, without clap's
/// own `help` subcommand.
fn commands(cmd: &clap::Command) -> Vec<&clap::Command> {
    let mut all = vec![cmd];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        all.extend(commands(sub));
    }
    all
}

/// A command's full name as typed: `synapse profiles show`.
fn full_name(cmd: &clap::Command) -> String {
    cmd.get_bin_name().unwrap_or(cmd.get_name()).to_string()
}
