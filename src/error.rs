//! Application errors and the exit status each one maps to.

use synapse_engine::EngineError;

/// Exit statuses, as documented in docs/reports.md and `--help`.
pub mod exit {
    /// The verdict passed (or a command that has no verdict succeeded).
    pub const PASS: i32 = 0;
    /// Something failed while running.
    pub const RUNTIME: i32 = 1;
    /// Bad flags, bad configuration, or a peer that cannot be reached.
    pub const USAGE: i32 = 2;
    /// The measurement completed and the verdict failed.
    pub const FAIL: i32 = 3;
    /// Interrupted before it was complete: a run stopped before its first
    /// measured request, `synapse calibrate` stopped by Ctrl-C (what it
    /// measured is printed), or a second Ctrl-C anywhere.
    pub const INTERRUPTED: i32 = 130;
}

/// Anything that stops Synapse before it can report.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The user asked for something impossible.
    #[error("{0}")]
    Usage(String),
    /// The engine could not measure.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The configuration file is wrong.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// Anything else (terminal, output, …).
    #[error("{0:#}")]
    Runtime(#[from] anyhow::Error),
}

impl AppError {
    /// Standard output went to a pipe whose reader closed it (`synapse
    /// compare … | head -1`): the normal end of a filter, a quiet exit 0.
    pub fn is_broken_pipe(&self) -> bool {
        let AppError::Runtime(e) = self else {
            return false;
        };
        e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        })
    }

    /// The process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            AppError::Usage(_) | AppError::Config(_) => exit::USAGE,
            AppError::Engine(e) if e.is_usage() => exit::USAGE,
            AppError::Engine(_) | AppError::Runtime(_) => exit::RUNTIME,
        }
    }
}

impl From<crate::packet_log::LogError> for AppError {
    fn from(e: crate::packet_log::LogError) -> Self {
        use crate::packet_log::LogError;
        match e {
            // A path where no file can be made, or one that would be
            // overwritten, is the user's to fix; a full disk is not.
            LogError::Exists { .. } => AppError::Usage(e.to_string()),
            LogError::Open { ref source, .. } if crate::files::is_bad_path(source) => {
                AppError::Usage(e.to_string())
            }
            _ => AppError::Runtime(anyhow::anyhow!("{e}")),
        }
    }
}

impl From<std::io::Error> for AppError {
    fn from(e: std::io::Error) -> Self {
        AppError::Runtime(e.into())
    }
}

impl From<crate::hdr_log::HdrLogError> for AppError {
    fn from(e: crate::hdr_log::HdrLogError) -> Self {
        use crate::hdr_log::HdrLogError;
        match e {
            // A file that exists, a path where none can be made, or an
            // input that is not a log: the user's to fix.
            HdrLogError::Exists { .. } | HdrLogError::Format { .. } => {
                AppError::Usage(e.to_string())
            }
            HdrLogError::Io { ref source, .. } | HdrLogError::Read { ref source, .. }
                if crate::files::is_bad_path(source) =>
            {
                AppError::Usage(e.to_string())
            }
            // A full disk, an I/O error: the run failed (said once: the
            // message already holds the system's cause).
            HdrLogError::Io { .. } | HdrLogError::Read { .. } => {
                AppError::Runtime(anyhow::anyhow!("{e}"))
            }
        }
    }
}

impl From<crate::files::WriteError> for AppError {
    fn from(e: crate::files::WriteError) -> Self {
        if e.is_bad_path() {
            AppError::Usage(e.to_string())
        } else {
            // Said once: the message already holds the system's cause.
            AppError::Runtime(anyhow::anyhow!("{e}"))
        }
    }
}
