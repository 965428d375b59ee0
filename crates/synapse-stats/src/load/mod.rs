//! Latency under load: a run's probes tagged by the phase they left in,
//! reduced to each phase's figures.
//!
//! - [`probe`]: one probe, its round trip and the stages its stamps cut
//!   it into; [`phase`]: the phases as they ran.
//! - [`saturation`]: the IETF draft's rule (streams added until goodput
//!   is stable, then latency until it is stable too) and its confidence.
//! - [`inflation`]: loaded less idle percentiles with 95 % intervals
//!   (the comparison's block bootstrap); [`stages`]: each stage's mean
//!   inflation and share; [`clock`]: drift between the idle phases, and
//!   steps; [`rpm`]: round trips per minute, probe-based.
//! - [`figures`]: all of it, phase by phase, for the reports.

pub mod clock;
pub mod compare;
pub mod figures;
pub mod inflation;
pub mod phase;
pub mod probe;
pub mod rpm;
pub mod saturation;
pub mod stages;
pub mod timeline;

pub use figures::{LoadFigures, PhaseFigures};
pub use phase::{Confidence, Goodput, LoadInterval, PhaseEnd, PhaseKind, PhaseRecord, Way};
pub use probe::{Probe, STAGES, Stage};
