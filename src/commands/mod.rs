//! The front ends that need no folder of their own: running a client or a
//! server without the live display, and the subcommands `compare`, `plot`,
//! `profiles` and `interfaces`. (The live display is `ui`, the fleet agent
//! `agent`, `synapse calibrate` is `calibrate`.)

pub mod compare;
pub mod headless;
pub mod interfaces;
pub mod plot;
mod plot_load;
pub mod profiles;
