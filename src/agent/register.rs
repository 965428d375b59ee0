//! Registering Prometheus families: each under its name and help text,
//! in seconds where it is a time.

/// Registers each `"name", "help" => family;` in `r` (after `seconds:`,
/// with the unit seconds). The registry keeps a clone, which shares the
/// family's series with the one the agent records into.
macro_rules! register {
    ($r:expr, seconds: $($name:literal, $help:literal => $family:expr;)+) => {
        $($r.register_with_unit(
            $name,
            $help,
            prometheus_client::registry::Unit::Seconds,
            $family.clone(),
        );)+
    };
    ($r:expr, $($name:literal, $help:literal => $family:expr;)+) => {
        $($r.register($name, $help, $family.clone());)+
    };
}

pub(crate) use register;
