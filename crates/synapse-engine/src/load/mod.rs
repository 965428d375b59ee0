//! Load for latency under load (`synapse client --load`): bulk TCP
//! between the client and the reflector's load port, on threads of their
//! own, while the paced probes measure beside it.
//!
//! - [`wire`]: the control protocol, versioned, one short text line each.
//! - [`server`]: the reflector's load server and its admission
//!   (`--allow`, the key, sessions, seconds, streams, a rate cap);
//!   `server_session`: a session's control connection and its streams.
//! - [`client`]: the client's session and each phase's streams.
//! - `bulk`: the loops that move the bytes, and the rate cap; `line`:
//!   one control line at a time.

mod bulk;
pub mod client;
mod line;
pub mod server;
mod server_session;
mod server_state;
pub mod wire;

pub use client::{LoadClient, LoadClientConfig, LoadSample};
pub use server::{
    LoadEvent, LoadServerConfig, LoadServerRun, LoadServerTotals, default_cc, start_load_server,
};
pub use wire::{Grant, Info, PhaseKind, Way};

#[cfg(test)]
mod tests;
