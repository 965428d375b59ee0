//! What can be wrong with the configuration file, and where: every error
//! names the file, the line and column, and the dotted key.

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem with the configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line, 0 when unknown.
    pub line: usize,
    /// 1-based column, 0 when unknown.
    pub column: usize,
    /// The dotted key, e.g. `profiles.lab.warmup`.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.path.display();
        match (self.line, self.key.is_empty()) {
            (0, true) => write!(f, "{p}: {}", self.message),
            (0, false) => write!(f, "{p}: {}: {}", self.key, self.message),
            (_, true) => write!(f, "{p}:{}:{}: {}", self.line, self.column, self.message),
            (_, false) => write!(
                f,
                "{p}:{}:{}: {}: {}",
                self.line, self.column, self.key, self.message
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    pub(crate) fn io(path: &Path, e: &std::io::Error) -> Self {
        Self {
            path: path.to_path_buf(),
            line: 0,
            column: 0,
            key: String::new(),
            message: e.to_string(),
        }
    }

    pub(crate) fn at(path: &Path, loc: Loc, key: &str, message: impl Into<String>) -> Self {
        Self {
            path: path.to_path_buf(),
            line: loc.line,
            column: loc.column,
            key: key.to_string(),
            message: message.into(),
        }
    }
}

/// A place in the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loc {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

impl Loc {
    /// The place of a byte range (a span `toml_edit` reports) in `text`.
    pub fn of(text: &str, span: Option<std::ops::Range<usize>>) -> Self {
        let Some(span) = span else {
            return Self::default();
        };
        let before = &text[..span.start.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Self { line, column }
    }
}
