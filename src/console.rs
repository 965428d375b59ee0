//! The one way Synapse writes a line to stderr: `synapse: error: …`,
//! `synapse: warning: …`, `synapse: note: …`. Each line goes out in a
//! single `write`, so lines from processes sharing a terminal never
//! interleave, and no colour codes ever reach a file or a pipe.

use std::io::Write;

fn line(kind: &str, message: &str) {
    let text = format!("synapse: {kind}: {message}\n");
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Something stopped Synapse, or a part of what it was asked to do.
pub fn error(message: &str) {
    line("error", message);
}

/// Something the user asked for could not be done as asked; Synapse
/// carried on.
pub fn warning(message: &str) {
    line("warning", message);
}

/// Something the user should know.
pub fn note(message: &str) {
    line("note", message);
}
