//! Kernel and NIC timestamps: choosing the client's source (`--timestamps
//! auto|user|software|hardware`) against what the outgoing interface can do
//! (`capabilities`), switching a NIC's clock on for a run (`hardware`), and
//! matching TX stamps to datagrams (`tx_matcher`). The raw socket calls are
//! in `sys::timestamping`.

pub mod capabilities;
mod hardware;
pub mod phc_map;
mod reflector_stamping;
pub mod tx_matcher;
pub mod tx_sample;

use super::{EngineError, sys};
use capabilities::{Capabilities, Source};
pub use hardware::HardwareGuard;
use phc_map::PhcMap;
pub use reflector_stamping::ReflectorStamping;
use std::net::IpAddr;

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimestampMode {
    /// Hardware if the interface has it and it can be enabled, else
    /// kernel software, else user space.
    Auto,
    /// Only the application's clock reads: no split.
    #[default]
    User,
    /// Kernel software stamps (`CLOCK_REALTIME`).
    Software,
    /// NIC stamps, plus software ones for the segments.
    Hardware,
}

impl TimestampMode {
    /// Names as typed on the command line and in profiles.
    pub const NAMES: [&'static str; 4] = ["auto", "user", "software", "hardware"];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            TimestampMode::Auto => "auto",
            TimestampMode::User => "user",
            TimestampMode::Software => "software",
            TimestampMode::Hardware => "hardware",
        }
    }
}

impl std::fmt::Display for TimestampMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for TimestampMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "auto" => TimestampMode::Auto,
            "user" => TimestampMode::User,
            "software" => TimestampMode::Software,
            "hardware" => TimestampMode::Hardware,
            _ => {
                return Err(format!(
                    "'{s}' is not a timestamp source (expected one of: {})",
                    Self::NAMES.join(", ")
                ));
            }
        })
    }
}

/// The source a run uses, and why.
#[derive(Debug)]
pub struct Timestamping {
    /// The source chosen.
    pub source: Source,
    /// The interface the packets leave by, when known.
    pub interface: Option<String>,
    /// Why the source is not the one asked for (auto falling back).
    pub note: Option<String>,
    /// Keeps hardware stamping on until the run ends.
    pub hardware: Option<HardwareGuard>,
    /// The NIC's clock mapped onto the system clock (hardware stamps, and
    /// a clock that could be read).
    pub clock: Option<PhcMap>,
}

/// Picks the source for packets sent from `local`.
pub fn choose(mode: TimestampMode, local: IpAddr) -> Result<Timestamping, EngineError> {
    if mode == TimestampMode::User {
        return Ok(Timestamping {
            source: Source::User,
            interface: None,
            note: None,
            hardware: None,
            clock: None,
        });
    }
    let interface = sys::interfaces::interface_with_address(local)
        .ok()
        .flatten();
    choose_on(mode, "--timestamps", interface)
}

/// Picks the source for packets that leave by `interface` (`None`: not
/// known), switching its NIC's stamping on if that is the choice. `option`
/// is the command line's name for the choice, which its errors cite.
pub fn choose_on(
    mode: TimestampMode,
    option: &str,
    interface: Option<String>,
) -> Result<Timestamping, EngineError> {
    let caps = interface
        .as_deref()
        .and_then(|i| Capabilities::probe(i).ok());
    let mut guard = None;
    let decision = decide(mode, option, interface.as_deref(), caps.as_ref(), |iface| {
        let g = HardwareGuard::enable(iface).map_err(|e| e.to_string())?;
        let note = g.receive_note();
        guard = Some(g);
        Ok(note)
    });
    let (source, mut note) = decision.map_err(EngineError::Timestamps)?;
    let hardware = source == Source::Hardware;
    let clock = match caps.and_then(|c| c.phc()).filter(|_| hardware) {
        Some(index) => PhcMap::start(index)
            .map_err(|e| {
                let why = format!("/dev/ptp{index} cannot be read ({e}): no send path to the wire");
                note = Some(note.take().map_or(why.clone(), |n| format!("{n}; {why}")));
            })
            .ok(),
        None => None,
    };
    Ok(Timestamping {
        source,
        interface,
        note,
        hardware: guard.filter(|_| hardware),
        clock,
    })
}

/// The choice itself, with the device step injected so it can be tested
/// without a NIC that has a clock (it returns a note when the NIC grants
/// less than asked, transmit stamps only). Returns the source and a note
/// when `auto` fell back or hardware is partial, or the reason an explicit
/// request cannot be met (citing it as `option`).
pub fn decide(
    mode: TimestampMode,
    option: &str,
    interface: Option<&str>,
    caps: Option<&Capabilities>,
    enable_hardware: impl FnOnce(&str) -> Result<Option<String>, String>,
) -> Result<(Source, Option<String>), String> {
    let name = interface.unwrap_or("the outgoing interface");
    let software_ok = caps.is_none_or(|c| c.best() != Source::User);
    // The device is touched only when hardware is wanted at all: the
    // setting is device-wide and may belong to ptp4l.
    let wants_hardware = matches!(mode, TimestampMode::Auto | TimestampMode::Hardware);
    let hardware = match (interface, caps) {
        _ if !wants_hardware => Err(String::new()),
        (Some(iface), Some(c)) => match c.hardware_unavailable() {
            Some(why) => Err(format!("{iface}: {why}")),
            None => enable_hardware(iface),
        },
        _ => Err(format!("{name}: its capabilities are unknown")),
    };
    match (mode, hardware) {
        (TimestampMode::User, _) => Ok((Source::User, None)),
        (TimestampMode::Hardware | TimestampMode::Auto, Ok(note)) => Ok((Source::Hardware, note)),
        (TimestampMode::Hardware, Err(why)) => Err(format!(
            "{option} hardware: {why} (try {option} software, or auto)"
        )),
        (TimestampMode::Software, _) if software_ok => Ok((Source::Software, None)),
        (TimestampMode::Software, _) => Err(format!(
            "{option} software: {name} offers no software timestamps (try {option} user)"
        )),
        (TimestampMode::Auto, Err(why)) if software_ok => Ok((
            Source::Software,
            Some(format!("no hardware timestamps ({why}): using software")),
        )),
        (TimestampMode::Auto, Err(why)) => Ok((
            Source::User,
            Some(format!(
                "no kernel timestamps ({why}; no software stamps either): user space only"
            )),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ptp_nic() -> Capabilities {
        Capabilities::from_raw(0x5f, Some(0), 0b11, 0b11)
    }
    fn software_only() -> Capabilities {
        Capabilities::from_raw(0x1a, None, 0, 0)
    }
    fn enabled(_: &str) -> Result<Option<String>, String> {
        Ok(None)
    }
    fn refused(iface: &str) -> Result<Option<String>, String> {
        Err(format!(
            "{iface}: cannot enable hardware timestamping: needs root"
        ))
    }

    #[test]
    fn modes_parse_and_name_themselves() {
        for name in TimestampMode::NAMES {
            assert_eq!(name.parse::<TimestampMode>().unwrap().name(), name);
        }
        let e = "nic".parse::<TimestampMode>().unwrap_err();
        assert_eq!(
            e,
            "'nic' is not a timestamp source (expected one of: auto, user, software, hardware)"
        );
    }

    #[test]
    fn auto_takes_hardware_when_the_nic_has_it_and_it_can_be_enabled() {
        let d = decide(
            TimestampMode::Auto,
            "--timestamps",
            Some("eth0"),
            Some(&ptp_nic()),
            enabled,
        );
        assert_eq!(d, Ok((Source::Hardware, None)));
    }

    #[test]
    fn a_nic_stamping_transmit_only_is_hardware_with_a_note() {
        let tx_only = |_: &str| Ok(Some("eth0: hardware stamps on transmit only".to_string()));
        for mode in [TimestampMode::Auto, TimestampMode::Hardware] {
            let d = decide(
                mode,
                "--timestamps",
                Some("eth0"),
                Some(&ptp_nic()),
                tx_only,
            );
            assert_eq!(
                d,
                Ok((
                    Source::Hardware,
                    Some("eth0: hardware stamps on transmit only".to_string())
                ))
            );
        }
    }

    #[test]
    fn auto_falls_back_to_software_and_says_why() {
        let d = decide(
            TimestampMode::Auto,
            "--timestamps",
            Some("lo"),
            Some(&software_only()),
            enabled,
        );
        assert_eq!(
            d,
            Ok((
                Source::Software,
                Some("no hardware timestamps (lo: no hardware clock): using software".into())
            ))
        );
        let d = decide(
            TimestampMode::Auto,
            "--timestamps",
            Some("eth0"),
            Some(&ptp_nic()),
            refused,
        );
        let (source, note) = d.unwrap();
        assert_eq!(source, Source::Software);
        assert!(note.unwrap().contains("needs root"));
    }

    #[test]
    fn auto_without_software_stamps_is_user_space() {
        let none = Capabilities::from_raw(0, None, 0, 0);
        let (source, note) = decide(
            TimestampMode::Auto,
            "--timestamps",
            Some("ifb0"),
            Some(&none),
            enabled,
        )
        .unwrap();
        assert_eq!(source, Source::User);
        assert!(note.unwrap().starts_with("no kernel timestamps"));
    }

    #[test]
    fn explicit_hardware_without_a_clock_is_a_clear_error() {
        let e = decide(
            TimestampMode::Hardware,
            "--timestamps",
            Some("lo"),
            Some(&software_only()),
            enabled,
        )
        .unwrap_err();
        assert_eq!(
            e,
            "--timestamps hardware: lo: no hardware clock (try --timestamps software, or auto)"
        );
        let e = decide(
            TimestampMode::Hardware,
            "--reflect-timestamps",
            Some("eth0"),
            Some(&ptp_nic()),
            refused,
        )
        .unwrap_err();
        assert!(e.contains("needs root"), "{e}");
        assert!(
            e.starts_with("--reflect-timestamps hardware: ")
                && e.ends_with("(try --reflect-timestamps software, or auto)"),
            "the option is cited as the user typed it: {e}"
        );
    }

    #[test]
    fn the_device_is_only_touched_when_the_nic_qualifies() {
        let mut touched = false;
        let _ = decide(
            TimestampMode::Auto,
            "--timestamps",
            Some("lo"),
            Some(&software_only()),
            |_| {
                touched = true;
                Ok(None)
            },
        );
        assert!(!touched);
        for mode in [TimestampMode::Software, TimestampMode::User] {
            let d = decide(mode, "--timestamps", Some("eth0"), Some(&ptp_nic()), |_| {
                touched = true;
                Ok(None)
            });
            assert!(!touched, "{mode:?} must not change the NIC's setting");
            assert_ne!(d.unwrap().0, Source::Hardware);
        }
    }

    #[test]
    fn loopback_resolves_to_software() {
        let t = choose(TimestampMode::Auto, "127.0.0.1".parse().unwrap()).unwrap();
        assert_eq!(t.source, Source::Software);
        assert_eq!(t.interface.as_deref(), Some("lo"));
        assert!(t.hardware.is_none());
        let e = choose(TimestampMode::Hardware, "127.0.0.1".parse().unwrap()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--timestamps hardware: lo: no hardware clock (try --timestamps software, or auto)"
        );
        let t = choose(TimestampMode::User, "127.0.0.1".parse().unwrap()).unwrap();
        assert_eq!((t.source, t.interface), (Source::User, None));
    }
}
