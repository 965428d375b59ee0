//! The integration tests, as one test binary (one link of the whole crate
//! instead of one per file): each module drives the real binary, or the
//! engine through its API, as its doc comment says. `common` holds the
//! helpers they share.
//!
//! Cargo runs the tests of one binary in parallel (as many at once as
//! there are CPUs). Tests that measure time, or load the machine enough to
//! disturb one that does, hold [`common::one_at_a_time`] while they run.
//! The lab (`tests/lab.rs`) and the documentation checks (`tests/docs/`)
//! are binaries of their own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod agent;
mod agent_fleet;
mod architecture;
mod assets;
mod calibrate;
mod cli;
mod clocks_netns;
mod compare;
mod cos_netns;
mod defined;
mod edges;
mod engine;
mod fail_on_regression;
mod far_side;
mod hdr;
mod instructions;
mod interop;
mod interop_tlv;
mod json_stream;
mod limits;
mod load;
mod load_clocks;
mod load_faults;
mod load_lab;
mod location_netns;
mod logs;
mod multicast;
mod paced;
mod plot;
mod profiles;
mod server;
mod small;
mod soak;
mod stamp;
mod stamp_tlv;
mod syscalls;
mod tcp;
mod timestamps;
mod trace;
mod tui;
