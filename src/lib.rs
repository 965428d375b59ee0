//! Synapse, the application: application-to-application round trips (UDP
//! and TCP) measured by the engine, planned, watched and reported.
//!
//! The measurement itself lives in crates of its own: [`synapse_engine`]
//! (sockets, kernel timestamps, wire formats, the client and reflector
//! loops), [`synapse_stats`] (records, histograms, segments, the comparison
//! of runs) and [`synapse_units`] (times and counts as text). This crate is
//! everything above them, in layers (docs/architecture.md):
//!
//! - Front ends: [`ui`] (the live display, ratatui + tokio), [`agent`] (many
//!   peers, all the time, served to Prometheus), [`calibrate`], and
//!   [`commands`] (runs without the display, `compare`, `plot`, `profiles`,
//!   `interfaces`).
//! - [`report`]: headless text/JSON output and progress, and runs read back.
//! - [`session`]: starting, watching and ending measurements; every front
//!   end drives these.
//! - [`plan`]: the command line, a profile and the file, layered into one
//!   validated plan; [`error`]: the errors and their exit codes.
//! - [`cli`], [`config`]: the command line (the one declaration of every
//!   option) and the TOML file, layered over the defaults.
//! - [`packet_log`], [`hdr_log`]: the per-packet CSV logs, written off the
//!   hot path, and HdrHistogram interval logs.
//! - [`console`]: the one way a line reaches stderr.

pub mod agent;
pub mod calibrate;
pub mod cli;
pub mod commands;
pub mod config;
pub mod console;
pub mod error;
pub mod files;
pub mod hdr_log;
pub mod packet_log;
pub mod plan;
pub mod report;
pub mod session;
pub mod ui;
