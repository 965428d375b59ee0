//! Synapse: application-to-application UDP round-trip measurement.
//!
//! - [`engine`]: sockets, the pinned client and reflector loops, the wire
//!   protocol. No UI dependency.
//! - [`stats`]: histogram and counters, shared by every consumer.
//! - [`report`]: headless text/JSON output and progress.
//! - [`cli`], [`plan`]: the command line and its validation.
//! - [`launch`], [`headless`]: wiring a plan to the engine.
//! - [`ui`]: the live display (ratatui + tokio), reading the same stats.

pub mod cli;
pub mod config;
pub mod engine;
pub mod error;
pub mod headless;
pub mod interfaces;
pub mod launch;
pub mod plan;
pub mod profiles;
pub mod report;
pub mod stats;
pub mod ui;
pub mod units;
