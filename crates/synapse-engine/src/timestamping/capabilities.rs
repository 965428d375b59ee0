//! What an interface can timestamp, in words: the `ethtool -T` view, and
//! the best source of timestamps it offers.

use crate::sys::ethtool::{self, TsInfo};
use std::io;

/// Where a timestamp comes from, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The NIC's clock, at the wire.
    Hardware,
    /// The kernel, in the driver and the stack (`CLOCK_REALTIME`).
    Software,
    /// Only the application's own clock reads.
    User,
}

impl Source {
    /// Lower-case name, as used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Source::Hardware => "hardware",
            Source::Software => "software",
            Source::User => "user",
        }
    }
}

/// One interface's timestamping capabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    info: TsInfo,
}

/// `SOF_TIMESTAMPING_*` capability bits and their `ethtool -T` names.
const CAPABILITY_NAMES: [(u32, &str); 7] = [
    (libc::SOF_TIMESTAMPING_TX_HARDWARE, "hardware-transmit"),
    (libc::SOF_TIMESTAMPING_TX_SOFTWARE, "software-transmit"),
    (libc::SOF_TIMESTAMPING_RX_HARDWARE, "hardware-receive"),
    (libc::SOF_TIMESTAMPING_RX_SOFTWARE, "software-receive"),
    (libc::SOF_TIMESTAMPING_SOFTWARE, "software-system-clock"),
    (libc::SOF_TIMESTAMPING_SYS_HARDWARE, "hardware-legacy-clock"),
    (libc::SOF_TIMESTAMPING_RAW_HARDWARE, "hardware-raw-clock"),
];

/// `HWTSTAMP_TX_*` modes by bit position.
const TX_TYPES: [&str; 4] = ["off", "on", "onestep-sync", "onestep-p2p"];

/// `HWTSTAMP_FILTER_*` modes by bit position.
const RX_FILTERS: [&str; 16] = [
    "none",
    "all",
    "some",
    "ptpv1-l4-event",
    "ptpv1-l4-sync",
    "ptpv1-l4-delay-req",
    "ptpv2-l4-event",
    "ptpv2-l4-sync",
    "ptpv2-l4-delay-req",
    "ptpv2-l2-event",
    "ptpv2-l2-sync",
    "ptpv2-l2-delay-req",
    "ptpv2-event",
    "ptpv2-sync",
    "ptpv2-delay-req",
    "ntp-all",
];

fn names_of(bits: u32, names: &[&'static str]) -> Vec<&'static str> {
    names
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect()
}

impl Capabilities {
    /// Asks the kernel about `iface`.
    pub fn probe(iface: &str) -> io::Result<Self> {
        ethtool::ts_info(iface).map(|info| Self { info })
    }

    /// From raw `ethtool_ts_info` values (for tests and other kernels'
    /// answers).
    pub fn from_raw(
        so_timestamping: u32,
        phc_index: Option<u32>,
        tx_types: u32,
        rx_filters: u32,
    ) -> Self {
        Self {
            info: TsInfo {
                so_timestamping,
                phc_index,
                tx_types,
                rx_filters,
            },
        }
    }

    /// Capability names, as `ethtool -T` prints them.
    pub fn capability_names(&self) -> Vec<&'static str> {
        CAPABILITY_NAMES
            .iter()
            .filter(|(bit, _)| self.info.so_timestamping & bit != 0)
            .map(|(_, n)| *n)
            .collect()
    }

    /// The PTP hardware clock's index (`/dev/ptpN`), if any.
    pub fn phc(&self) -> Option<u32> {
        self.info.phc_index
    }

    /// Hardware transmit modes.
    pub fn tx_modes(&self) -> Vec<&'static str> {
        names_of(self.info.tx_types, &TX_TYPES)
    }

    /// Hardware receive filters.
    pub fn rx_filters(&self) -> Vec<&'static str> {
        names_of(self.info.rx_filters, &RX_FILTERS)
    }

    fn has(&self, bits: u32) -> bool {
        self.info.so_timestamping & bits == bits
    }

    /// Why hardware stamps of Synapse's UDP packets are not to be had, or
    /// `None` when they are: a clock, and transmit stamps. A NIC that
    /// stamps only PTP on receive (the 82576) still stamps every packet it
    /// sends; its replies then have no hardware stamp
    /// ([`Capabilities::stamps_all_received`]).
    pub fn hardware_unavailable(&self) -> Option<&'static str> {
        let hw = libc::SOF_TIMESTAMPING_TX_HARDWARE | libc::SOF_TIMESTAMPING_RAW_HARDWARE;
        if !self.has(hw) || self.info.phc_index.is_none() {
            Some("no hardware clock")
        } else if self.info.tx_types & (1 << 1) == 0 {
            Some("the NIC cannot stamp transmitted packets")
        } else {
            None
        }
    }

    /// Whether the NIC can stamp every received packet (`FILTER_ALL`), not
    /// only PTP.
    pub fn stamps_all_received(&self) -> bool {
        self.info.rx_filters & (1 << 1) != 0
    }

    /// The best source the interface offers for UDP test traffic.
    pub fn best(&self) -> Source {
        let sw = libc::SOF_TIMESTAMPING_TX_SOFTWARE
            | libc::SOF_TIMESTAMPING_RX_SOFTWARE
            | libc::SOF_TIMESTAMPING_SOFTWARE;
        if self.hardware_unavailable().is_none() {
            Source::Hardware
        } else if self.has(sw) {
            Source::Software
        } else {
            Source::User
        }
    }
}

/// The host's network interfaces, by name, sorted.
pub fn interface_names() -> io::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a PTP-capable NIC (e.g. an Intel i210) reports: software and
    /// raw hardware stamping, /dev/ptp0, TX on, RX filter "all".
    fn nic(rx_filters: u32) -> Capabilities {
        Capabilities::from_raw(0x5f, Some(0), 0b11, rx_filters)
    }

    #[test]
    fn a_hardware_clock_with_an_all_filter_gives_hardware() {
        let c = nic(0b11);
        assert_eq!(c.best(), Source::Hardware);
        assert_eq!(c.hardware_unavailable(), None);
        assert_eq!(c.tx_modes(), ["off", "on"]);
        assert_eq!(c.rx_filters(), ["none", "all"]);
        assert!(c.capability_names().contains(&"hardware-raw-clock"));
    }

    #[test]
    fn a_nic_stamping_only_ptp_on_receive_still_stamps_what_it_sends() {
        let c = nic(1 | 1 << 12);
        assert_eq!(c.best(), Source::Hardware);
        assert_eq!(c.hardware_unavailable(), None);
        assert!(!c.stamps_all_received());
        assert!(nic(0b11).stamps_all_received());
    }

    #[test]
    fn no_clock_means_software_or_user() {
        let sw = Capabilities::from_raw(0x1a, None, 0, 0);
        assert_eq!(sw.best(), Source::Software);
        assert_eq!(sw.hardware_unavailable(), Some("no hardware clock"));
        assert_eq!(
            sw.capability_names(),
            [
                "software-transmit",
                "software-receive",
                "software-system-clock"
            ]
        );
        assert_eq!(Capabilities::from_raw(0, None, 0, 0).best(), Source::User);
    }

    #[test]
    fn loopback_is_listed_and_probed_as_software_only() {
        assert!(interface_names().unwrap().contains(&"lo".to_string()));
        let lo = Capabilities::probe("lo").unwrap();
        assert_eq!(lo.best(), Source::Software);
        assert_eq!(lo.phc(), None);
    }
}
