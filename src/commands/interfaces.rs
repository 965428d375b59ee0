//! `synapse interfaces`: what each network interface can timestamp.

use crate::error::AppError;
use std::io::Write;
use synapse_engine::capabilities::{Capabilities, interface_names};

fn list(items: &[&str]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(" ")
    }
}

fn describe(out: &mut impl Write, name: &str, caps: &Capabilities) -> std::io::Result<()> {
    writeln!(out, "{name}")?;
    writeln!(
        out,
        "  capabilities:       {}",
        list(&caps.capability_names())
    )?;
    let phc = caps
        .phc()
        .map_or("none".to_string(), |i| format!("/dev/ptp{i}"));
    writeln!(out, "  PTP hardware clock: {phc}")?;
    writeln!(out, "  hardware transmit:  {}", list(&caps.tx_modes()))?;
    writeln!(out, "  hardware receive:   {}", list(&caps.rx_filters()))?;
    let best = caps.best().name();
    match caps.hardware_unavailable() {
        None => writeln!(out, "  best source:        {best}"),
        Some(why) => writeln!(out, "  best source:        {best} (hardware: {why})"),
    }
}

/// Prints every interface, or just `only`.
pub fn run_command(only: Option<&str>, out: &mut impl Write) -> Result<(), AppError> {
    if let Some(name) = only {
        let caps = Capabilities::probe(name).map_err(|e| match e.raw_os_error() {
            Some(libc::ENODEV) => AppError::Usage(format!("no interface named '{name}'")),
            _ => AppError::Usage(format!("cannot ask '{name}' about timestamping: {e}")),
        })?;
        describe(out, name, &caps)?;
        return Ok(());
    }
    let names = interface_names()
        .map_err(|e| AppError::Runtime(anyhow::anyhow!("cannot list interfaces: {e}")))?;
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        match Capabilities::probe(name) {
            Ok(caps) => describe(out, name, &caps)?,
            Err(e) => writeln!(out, "{name}\n  cannot ask about timestamping: {e}")?,
        }
    }
    Ok(())
}
