//! Synapse: application-to-application UDP round-trip measurement.
//!
//! - [`engine`]: sockets, the pinned client and reflector loops, the wire
//!   protocol. No UI dependency.
//! - [`stats`]: histogram and counters, shared by every consumer.
//! - [`report`]: headless text/JSON output and progress.
//! - [`packet_log`]: the per-packet CSV logs, written off the hot path.
//! - [`cli`], [`plan`]: the command line (the one declaration of every
//!   option) and its validation.
//! - [`config`], [`profiles`]: the TOML file, layered over the defaults.
//! - [`session`]: starting, watching and ending measurements; every front
//!   end drives these.
//! - Front ends: [`headless`] (reports), [`ui`] (the live display, ratatui +
//!   tokio), [`agent`] (many peers, all the time, served to Prometheus).

pub mod agent;
pub mod calibrate;
pub mod cli;
pub mod compare;
pub mod config;
pub mod console;
pub mod engine;
pub mod error;
pub mod files;
pub mod hdr_log;
pub mod headless;
pub mod interfaces;
pub mod key_file;
pub mod packet_log;
pub mod plan;
pub mod plot;
pub mod profiles;
pub mod report;
pub mod runs;
pub mod session;
pub mod stats;
pub mod ui;
pub mod units;
