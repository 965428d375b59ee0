//! How a reflector stamps (`synapse server --timestamps`): in the kernel
//! (software), or on the NIC as well (hardware), on the interface its
//! address belongs to or the one named.

use super::{EngineError, TimestampMode, Timestamping, choose_on};
use crate::sys;
use std::net::IpAddr;

/// The reflector's stamping, as asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReflectorStamping {
    /// `software`, `auto` or `hardware`.
    pub mode: TimestampMode,
    /// The NIC to stamp on (`=IFACE`); `None`: the bind address's.
    pub interface: Option<String>,
}

impl Default for ReflectorStamping {
    fn default() -> Self {
        Self {
            mode: TimestampMode::Software,
            interface: None,
        }
    }
}

impl std::fmt::Display for ReflectorStamping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.interface {
            Some(i) => write!(f, "{}={i}", self.mode),
            None => write!(f, "{}", self.mode),
        }
    }
}

impl std::str::FromStr for ReflectorStamping {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (mode, interface) = match s.split_once('=') {
            Some((m, i)) if !i.is_empty() => (m, Some(i.to_string())),
            Some((m, _)) => return Err(format!("'{m}=' names no interface (e.g. {m}=eth0)")),
            None => (s, None),
        };
        let mode = match mode {
            "software" if interface.is_none() => TimestampMode::Software,
            "auto" => TimestampMode::Auto,
            "hardware" => TimestampMode::Hardware,
            _ => {
                return Err(format!(
                    "'{s}' is not a reflector timestamp source (expected software, auto[=IFACE] or hardware[=IFACE])"
                ));
            }
        };
        Ok(Self { mode, interface })
    }
}

impl ReflectorStamping {
    /// Resolves the stamping for a reflector bound to `bind`: the named
    /// interface, else the one holding `bind`'s address. A wildcard
    /// address has no one NIC: hardware then needs `=IFACE`, and auto
    /// stays in software.
    pub fn resolve(&self, bind: IpAddr) -> Result<Timestamping, EngineError> {
        self.resolve_for(bind, "--timestamps")
    }

    /// The same, its errors naming the option as the user typed it
    /// (`--reflect-timestamps` for the agent's reflector).
    pub fn resolve_for(&self, bind: IpAddr, option: &str) -> Result<Timestamping, EngineError> {
        let interface = match &self.interface {
            Some(i) => Some(i.clone()),
            None if bind.is_unspecified() => None,
            None => sys::interfaces::interface_with_address(bind).ok().flatten(),
        };
        if interface.is_none() && self.mode != TimestampMode::Software {
            return match self.mode {
                TimestampMode::Hardware => Err(EngineError::Timestamps(format!(
                    "{option} hardware: {} is not one NIC's address; name the NIC (hardware=IFACE)",
                    if bind.is_unspecified() { "the wildcard address" } else { "the bind address" }
                ))),
                _ => choose_on(TimestampMode::Software, option, None).map(|t| Timestamping {
                    note: Some(
                        "no hardware timestamps (listening on every address: name the NIC with auto=IFACE): using software"
                            .into(),
                    ),
                    ..t
                }),
            };
        }
        choose_on(self.mode, option, interface)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::Source;

    #[test]
    fn sources_parse_with_and_without_an_interface() {
        let p = |s: &str| s.parse::<ReflectorStamping>();
        assert_eq!(p("software"), Ok(ReflectorStamping::default()));
        let hw = p("hardware=eth1").unwrap();
        assert_eq!(
            (hw.mode, hw.interface.as_deref()),
            (TimestampMode::Hardware, Some("eth1"))
        );
        assert_eq!(hw.to_string(), "hardware=eth1");
        assert_eq!(p("auto").unwrap().mode, TimestampMode::Auto);
        assert_eq!(
            p("hardware=").unwrap_err(),
            "'hardware=' names no interface (e.g. hardware=eth0)"
        );
        for bad in ["user", "software=eth0", "nic"] {
            assert!(
                p(bad)
                    .unwrap_err()
                    .contains("expected software, auto[=IFACE]"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_wildcard_reflector_needs_a_named_nic_for_hardware() {
        let any: IpAddr = "0.0.0.0".parse().unwrap();
        let hw = ReflectorStamping {
            mode: TimestampMode::Hardware,
            interface: None,
        };
        let e = hw.resolve(any).unwrap_err().to_string();
        assert!(e.contains("name the NIC (hardware=IFACE)"), "{e}");
        let auto = ReflectorStamping {
            mode: TimestampMode::Auto,
            interface: None,
        };
        let t = auto.resolve(any).unwrap();
        assert_eq!(t.source, Source::Software);
        assert!(t.note.unwrap().contains("auto=IFACE"));
        assert!(t.hardware.is_none() && t.clock.is_none());
    }

    #[test]
    fn loopback_has_no_clock_to_stamp_with() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let hw = ReflectorStamping {
            mode: TimestampMode::Hardware,
            interface: None,
        };
        let e = hw.resolve(lo).unwrap_err().to_string();
        assert!(e.contains("lo: no hardware clock"), "{e}");
        let e = hw
            .resolve_for(lo, "--reflect-timestamps")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--reflect-timestamps hardware: lo: no hardware clock (try --reflect-timestamps software, or auto)"
        );
        let t = ReflectorStamping::default().resolve(lo).unwrap();
        assert_eq!(t.source, Source::Software);
    }
}
