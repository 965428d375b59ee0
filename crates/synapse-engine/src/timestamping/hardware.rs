//! Switching a NIC's hardware timestamping on for a run, and back.
//!
//! `SIOCSHWTSTAMP` is device-wide and may belong to someone else (ptp4l),
//! so Synapse changes it only when it must, and the guard puts the previous
//! setting back when it is dropped, whatever way the run ends (SIGINT and
//! SIGTERM end a run, they do not kill it). A NIC that stamps transmitted
//! packets but not every received one (Intel 82576, igb: `FILTER_ALL` is
//! refused with ERANGE) is used for what it grants: TX stamps, with the
//! receive filter left as it was; its received packets then have no
//! hardware stamp, and are reported as missing.

use crate::sys::ethtool::{self, HwConfig};
use std::io;

/// `HWTSTAMP_TX_ON`.
const TX_ON: u32 = 1;
/// `HWTSTAMP_FILTER_ALL`.
const FILTER_ALL: u32 = 1;

/// What has to change on the device, if anything: TX stamping on, and an
/// RX filter that stamps every packet (not only PTP).
pub fn change_needed(current: HwConfig) -> Option<HwConfig> {
    (current.tx_type != TX_ON || current.rx_filter != FILTER_ALL).then_some(HwConfig {
        tx_type: TX_ON,
        rx_filter: FILTER_ALL,
    })
}

/// Whether the driver's answer stamps our UDP packets both ways. Drivers
/// may widen the filter, but one that comes back narrower (PTP only)
/// stamps none of ours on receive.
pub fn applied_is_enough(applied: HwConfig) -> bool {
    applied.tx_type == TX_ON && applied.rx_filter == FILTER_ALL
}

/// The second request, when `FILTER_ALL` was refused: TX stamping on, the
/// receive filter as it was (PTP's, if ptp4l set one).
pub fn transmit_only(current: HwConfig) -> HwConfig {
    HwConfig {
        tx_type: TX_ON,
        rx_filter: current.rx_filter,
    }
}

/// Whether an error from asking for `FILTER_ALL` means "not that mode"
/// (worth asking for less), rather than "not at all".
fn mode_refused(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ERANGE | libc::EINVAL))
}

/// Hardware stamping switched on for as long as this lives.
#[derive(Debug)]
pub struct HardwareGuard {
    iface: String,
    /// What to restore; `None` when the device was already set up.
    previous: Option<HwConfig>,
    /// The receive filter the driver applied, when it stamps fewer than
    /// all received packets (`None`: it stamps them all).
    narrow_rx: Option<u32>,
}

impl HardwareGuard {
    /// Enables hardware stamping on `iface`: both ways if the driver
    /// allows it, else transmit only; or says why not.
    pub fn enable(iface: &str) -> Result<Self, HardwareRefused> {
        let call = |action, source| HardwareRefused::Call {
            iface: iface.to_string(),
            action,
            source,
        };
        let current = ethtool::get_hw_config(iface).map_err(|e| call("read", e))?;
        let Some(wanted) = change_needed(current) else {
            return Ok(Self {
                iface: iface.into(),
                previous: None,
                narrow_rx: None,
            });
        };
        let applied = match ethtool::set_hw_config(iface, wanted) {
            Ok(applied) => applied,
            Err(e) if mode_refused(&e) => ethtool::set_hw_config(iface, transmit_only(current))
                .map_err(|e| call("enable", e))?,
            Err(e) => return Err(call("enable", e)),
        };
        // From here on, dropping the guard restores the old setting.
        let guard = Self {
            iface: iface.into(),
            previous: Some(current),
            narrow_rx: (!applied_is_enough(applied)).then_some(applied.rx_filter),
        };
        if applied.tx_type == TX_ON {
            Ok(guard)
        } else {
            Err(HardwareRefused::Narrow {
                iface: iface.to_string(),
                filter: applied.rx_filter,
            })
        }
    }

    /// The interface it concerns.
    pub fn interface(&self) -> &str {
        &self.iface
    }

    /// Whether Synapse changed the device's setting (and will restore it).
    pub fn changed(&self) -> bool {
        self.previous.is_some()
    }

    /// When received packets get no hardware stamp, why, in words.
    pub fn receive_note(&self) -> Option<String> {
        self.narrow_rx.map(|filter| {
            format!(
                "{}: hardware stamps on transmit only (the driver stamps no received UDP: filter {filter}); received packets have none",
                self.iface
            )
        })
    }
}

impl Drop for HardwareGuard {
    fn drop(&mut self) {
        if let Some(previous) = self.previous
            && let Err(e) = ethtool::set_hw_config(&self.iface, previous)
        {
            tracing::warn!(
                "could not restore hardware timestamping on {}: {e}",
                self.iface
            );
        }
    }
}

/// Why hardware stamping could not be switched on.
#[derive(Debug, thiserror::Error)]
pub enum HardwareRefused {
    /// `SIOC[GS]HWTSTAMP` said no.
    #[error("{iface}: cannot {action} hardware timestamping: {}", why(source))]
    Call {
        /// The interface.
        iface: String,
        /// `read` or `enable`.
        action: &'static str,
        /// What the driver said.
        source: io::Error,
    },
    /// The driver took the request but left transmit stamping off.
    #[error("{iface}: the driver did not switch transmit stamping on (filter {filter})")]
    Narrow {
        /// The interface.
        iface: String,
        /// The receive filter it applied.
        filter: u32,
    },
}

/// What an `SIOC[GS]HWTSTAMP` error means, in words.
fn why(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => "needs root or CAP_NET_ADMIN".to_string(),
        Some(libc::ERANGE) => "the driver does not support the requested mode".to_string(),
        Some(libc::EOPNOTSUPP | libc::EINVAL) => "the driver has no hardware timestamping".into(),
        Some(libc::ENODEV) => "no such interface".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `HWTSTAMP_FILTER_NONE`.
    const FILTER_NONE: u32 = 0;

    fn cfg(tx_type: u32, rx_filter: u32) -> HwConfig {
        HwConfig { tx_type, rx_filter }
    }

    #[test]
    fn an_already_enabled_device_is_left_alone() {
        assert_eq!(change_needed(cfg(TX_ON, FILTER_ALL)), None);
    }

    #[test]
    fn a_ptp_only_or_off_device_is_switched_to_all() {
        let ptp_v2_event = 12;
        for current in [
            cfg(0, FILTER_NONE),
            cfg(TX_ON, ptp_v2_event),
            cfg(0, FILTER_ALL),
        ] {
            assert_eq!(change_needed(current), Some(cfg(TX_ON, FILTER_ALL)));
        }
    }

    #[test]
    fn a_driver_answer_narrower_than_all_is_not_enough() {
        assert!(applied_is_enough(cfg(TX_ON, FILTER_ALL)));
        assert!(!applied_is_enough(cfg(TX_ON, 12)));
        assert!(!applied_is_enough(cfg(0, FILTER_ALL)));
    }

    #[test]
    fn a_refused_all_falls_back_to_transmit_keeping_the_receive_filter() {
        let ptp_v2_event = 12;
        assert_eq!(transmit_only(cfg(0, FILTER_NONE)), cfg(TX_ON, FILTER_NONE));
        assert_eq!(
            transmit_only(cfg(0, ptp_v2_event)),
            cfg(TX_ON, ptp_v2_event),
            "ptp4l's filter stays"
        );
        assert!(mode_refused(&io::Error::from_raw_os_error(libc::ERANGE)));
        assert!(!mode_refused(&io::Error::from_raw_os_error(libc::EPERM)));
    }

    #[test]
    fn loopback_refuses_with_a_reason_and_changes_nothing() {
        let e = HardwareGuard::enable("lo").unwrap_err().to_string();
        assert_eq!(
            e, "lo: cannot read hardware timestamping: the driver has no hardware timestamping",
            "{e}"
        );
        let e = HardwareGuard::enable("nosuchif0").unwrap_err().to_string();
        assert!(e.ends_with("no such interface"), "{e}");
    }

    #[test]
    fn refusals_name_the_cause() {
        let refused = |errno| {
            HardwareRefused::Call {
                iface: "eth0".into(),
                action: "enable",
                source: io::Error::from_raw_os_error(errno),
            }
            .to_string()
        };
        assert_eq!(
            refused(libc::EPERM),
            "eth0: cannot enable hardware timestamping: needs root or CAP_NET_ADMIN"
        );
        assert!(refused(libc::ERANGE).ends_with("requested mode"));
    }
}
