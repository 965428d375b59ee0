//! Asking a network interface about its timestamping: `ETHTOOL_GET_TS_INFO`
//! (what `ethtool -T` shows) and `SIOCGHWTSTAMP`/`SIOCSHWTSTAMP` (the
//! device-wide hardware stamping setting).

use std::io;
use std::mem::size_of;

/// `ETHTOOL_GET_TS_INFO` (linux/ethtool.h).
const ETHTOOL_GET_TS_INFO: u32 = 0x41;
/// `ETHTOOL_GCOALESCE` (linux/ethtool.h).
const ETHTOOL_GCOALESCE: u32 = 0x0e;

/// `struct ethtool_coalesce`: the command and 22 `u32` settings, of which
/// the first four are read here.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct EthtoolCoalesce {
    cmd: u32,
    rx_usecs: u32,
    rx_max_frames: u32,
    rx_usecs_irq: u32,
    rest: [u32; 19],
}

/// An interface's receive interrupt coalescing (what `ethtool -c` shows
/// first).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Coalesce {
    /// `rx-usecs`: how long the NIC may hold a received packet before
    /// interrupting.
    pub rx_usecs: u32,
    /// `rx-frames`: how many packets it may gather first.
    pub rx_frames: u32,
}

/// What `ethtool -c IFACE` reports about receiving.
pub fn coalesce(iface: &str) -> io::Result<Coalesce> {
    let mut c = EthtoolCoalesce {
        cmd: ETHTOOL_GCOALESCE,
        ..EthtoolCoalesce::default()
    };
    let mut ifr = ifreq(iface, std::ptr::from_mut(&mut c).cast())?;
    ioctl(libc::SIOCETHTOOL, &mut ifr)?;
    Ok(Coalesce {
        rx_usecs: c.rx_usecs,
        rx_frames: c.rx_max_frames,
    })
}

/// `struct ethtool_ts_info`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct EthtoolTsInfo {
    cmd: u32,
    so_timestamping: u32,
    phc_index: i32,
    tx_types: u32,
    tx_reserved: [u32; 3],
    rx_filters: u32,
    rx_reserved: [u32; 3],
}

/// `struct ifreq` with the `ifr_data` member of its union (40 bytes on
/// 64-bit targets).
#[repr(C)]
struct IfreqData {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

/// An interface's timestamping capabilities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TsInfo {
    /// `SOF_TIMESTAMPING_*` bits the interface supports.
    pub so_timestamping: u32,
    /// The PTP hardware clock, if it has one.
    pub phc_index: Option<u32>,
    /// Supported `HWTSTAMP_TX_*` modes, as bits.
    pub tx_types: u32,
    /// Supported `HWTSTAMP_FILTER_*` modes, as bits.
    pub rx_filters: u32,
}

/// The device-wide hardware stamping setting (`struct hwtstamp_config`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HwConfig {
    /// `HWTSTAMP_TX_*`.
    pub tx_type: u32,
    /// `HWTSTAMP_FILTER_*`.
    pub rx_filter: u32,
}

fn ifreq(name: &str, data: *mut libc::c_void) -> io::Result<IfreqData> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{name}' is not an interface name"),
        ));
    }
    let mut ifr = IfreqData {
        name: [0; libc::IFNAMSIZ],
        data,
        _pad: [0; 16],
    };
    for (d, s) in ifr.name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    Ok(ifr)
}

/// Runs one interface ioctl on a throwaway socket.
fn ioctl(request: libc::c_ulong, ifr: &mut IfreqData) -> io::Result<()> {
    // SAFETY: plain socket(2) call; the descriptor is closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: ifr is a live, correctly laid-out ifreq whose data pointer
    // refers to a live structure of the type this request expects.
    let rc = unsafe { libc::ioctl(fd, request as _, std::ptr::from_mut(ifr)) };
    let err = io::Error::last_os_error();
    // SAFETY: fd was opened above and is not used afterwards.
    unsafe { libc::close(fd) };
    if rc < 0 { Err(err) } else { Ok(()) }
}

/// What `ethtool -T IFACE` reports.
pub fn ts_info(iface: &str) -> io::Result<TsInfo> {
    let mut info = EthtoolTsInfo {
        cmd: ETHTOOL_GET_TS_INFO,
        ..EthtoolTsInfo::default()
    };
    let mut ifr = ifreq(iface, std::ptr::from_mut(&mut info).cast())?;
    ioctl(libc::SIOCETHTOOL, &mut ifr)?;
    Ok(TsInfo {
        so_timestamping: info.so_timestamping,
        phc_index: u32::try_from(info.phc_index).ok(),
        tx_types: info.tx_types,
        rx_filters: info.rx_filters,
    })
}

fn hwtstamp(iface: &str, request: libc::c_ulong, cfg: HwConfig) -> io::Result<HwConfig> {
    let mut c = libc::hwtstamp_config {
        flags: 0,
        tx_type: cfg.tx_type as _,
        rx_filter: cfg.rx_filter as _,
    };
    let mut ifr = ifreq(iface, std::ptr::from_mut(&mut c).cast())?;
    ioctl(request, &mut ifr)?;
    Ok(HwConfig {
        tx_type: c.tx_type as u32,
        rx_filter: c.rx_filter as u32,
    })
}

/// The current hardware stamping setting of `iface`.
pub fn get_hw_config(iface: &str) -> io::Result<HwConfig> {
    hwtstamp(
        iface,
        libc::SIOCGHWTSTAMP,
        HwConfig {
            tx_type: 0,
            rx_filter: 0,
        },
    )
}

/// Sets hardware stamping on `iface` (device-wide; needs privilege).
/// Returns what the driver actually applied: it may widen the filter.
pub fn set_hw_config(iface: &str, cfg: HwConfig) -> io::Result<HwConfig> {
    hwtstamp(iface, libc::SIOCSHWTSTAMP, cfg)
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(size_of::<IfreqData>() == 40);
const _: () = assert!(size_of::<EthtoolTsInfo>() == 44);
const _: () = assert!(size_of::<EthtoolCoalesce>() == 92);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_offers_software_stamps_and_no_hardware_clock() {
        let info = ts_info("lo").unwrap();
        assert_ne!(
            info.so_timestamping & libc::SOF_TIMESTAMPING_RX_SOFTWARE,
            0,
            "{info:?}"
        );
        assert_ne!(
            info.so_timestamping & libc::SOF_TIMESTAMPING_TX_SOFTWARE,
            0,
            "{info:?}"
        );
        assert_eq!(
            info.so_timestamping & libc::SOF_TIMESTAMPING_RAW_HARDWARE,
            0,
            "{info:?}"
        );
        assert_eq!(info.phc_index, None);
    }

    #[test]
    fn loopback_refuses_hardware_stamping() {
        let e = get_hw_config("lo").unwrap_err();
        assert!(
            matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EINVAL | libc::ERANGE)
            ),
            "{e}"
        );
    }

    #[test]
    fn bad_interface_names_are_errors_not_panics() {
        assert!(ts_info("").is_err());
        assert!(ts_info("a-name-far-too-long").is_err());
        assert_eq!(
            ts_info("nosuchif0").unwrap_err().raw_os_error(),
            Some(libc::ENODEV)
        );
    }
}
