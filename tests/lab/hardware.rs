//! NIC hardware timestamps, the first run of the hardware path on
//! anything: two Intel 82576 (igb) NICs emulated by QEMU 10 on one hub,
//! client and reflector each on its own. igb stamps every transmitted
//! packet in hardware but refuses `FILTER_ALL` on receive (ERANGE): Synapse
//! must take the transmit stamps, report the receive ones as missing
//! (never fill them from software), and put the NIC's setting back after
//! every run, also one ended by SIGTERM or SIGINT. The setting is read by
//! other code than Synapse's (tests/lab/hwtstamp.py, SIOCGHWTSTAMP).

use super::outputs::Scenario;
use super::sheet::{Interval, Sheet, Unit};

/// A row: consecutive (NIC, kernel) stamp pairs' intervals agree, the
/// median difference below 50 µs (the emulated NIC stamps when QEMU runs
/// its queue).
pub fn same_rate(sheet: &mut Sheet, figure: &str, pairs: &[(i64, i64)]) {
    let mut diffs: Vec<i64> = pairs
        .windows(2)
        .map(|w| ((w[1].0 - w[0].0) - (w[1].1 - w[0].1)).abs())
        .collect();
    diffs.sort_unstable();
    let p50 = diffs.get(diffs.len() / 2).copied().unwrap_or(i64::MAX) as f64;
    sheet.bounded(
        figure,
        "the same clock rate",
        &format!("{} intervals, median {p50} ns", diffs.len()),
        Interval {
            lo: 0.0,
            hi: 50_000.0,
            got_lo: p50,
            got_hi: p50,
            unit: Unit::Ns,
            how: "below 50 µs (the emulated NIC stamps when QEMU runs its queue)".into(),
        },
    );
}
use serde_json::Value;

/// The QEMU devices: two igb NICs on hub 0, in PCI slots of their own
/// (their SR-IOV functions, 16 slots above, collide otherwise; slots 3
/// and 4 hold the guest's 9p devices).
pub const QEMU_ARGS: &str = "-netdev hubport,id=p0,hubid=0 -device igb,netdev=p0,addr=0x5 \
     -netdev hubport,id=p1,hubid=0 -device igb,netdev=p1,addr=0x8";

fn setting(s: &Scenario, when: &str) -> String {
    let text = std::fs::read_to_string(s.dir.join(format!("hw-{when}.json"))).unwrap_or_default();
    let v: Value = serde_json::from_str(text.trim()).unwrap_or_default();
    format!("tx_type {} rx_filter {}", v["tx_type"], v["rx_filter"])
}

pub fn check(sheet: &mut Sheet, s: &Scenario) {
    sheet.scenario(
        s,
        "Two igb NICs (QEMU 10 `-device igb`, Intel 82576) on one emulated hub, A's \
         and B's. STAMP runs from A with `--timestamps auto` and `hardware`, then two \
         long runs stopped by SIGTERM and SIGINT. The NIC's setting is read with \
         SIOCGHWTSTAMP by other code before, during and after each. Then B's reflector \
         stamps on its NIC too (`--timestamps hardware=eth0`, stopped by SIGTERM) for a \
         STAMP run with Follow-Up from A.",
    );
    let ethtool = std::fs::read_to_string(s.dir.join("ethtool-a.txt")).unwrap_or_default();
    sheet.row(
        "A's NIC (`ethtool -T`)",
        "hardware-transmit, a PHC",
        &ethtool
            .lines()
            .filter(|l| l.contains("hardware-transmit") || l.contains("Hardware Clock"))
            .map(str::trim)
            .collect::<Vec<_>>()
            .join("; "),
        "",
        "as QEMU 10's igb advertises",
        ethtool.contains("hardware-transmit") && !ethtool.contains("Clock: none"),
    );
    let before = setting(s, "before");
    for run in ["auto", "hardware"] {
        stamps(sheet, s, run);
        super::hardware_wire::to_the_wire(sheet, s, run);
        let after = setting(s, &format!("after-{run}"));
        sheet.row(
            &format!("{run}: NIC setting after the run"),
            &before,
            &after,
            "",
            "restored (SIOCGHWTSTAMP)",
            after == before,
        );
    }
    for sig in ["TERM", "INT"] {
        let during = setting(s, &format!("during-{sig}"));
        let after = setting(s, &format!("after-{sig}"));
        sheet.row(
            &format!("SIG{sig}: NIC setting during, after"),
            &format!("TX on during; {before} after"),
            &format!("{during}; {after}"),
            "",
            "switched on for the run, restored at the signal",
            during.starts_with("tx_type 1 ") && after == before,
        );
        let j = s.json(&format!("sig{sig}"));
        sheet.row(
            &format!("SIG{sig}: the report"),
            "written, interrupted",
            "",
            &format!("interrupted: {}", j["interrupted"]),
            "a signal ends the run, it does not kill it",
            j["interrupted"] == true,
        );
    }
    super::hardware_wire::reflector(sheet, s, |when| setting(s, when));
    super::hardware_wire::phc_step(sheet, s);
}

/// One run's stamps: every request a non-zero hardware TX stamp, no reply a
/// hardware RX stamp, and the TX-to-TX intervals of the NIC's clock the
/// same as the kernel's.
fn stamps(sheet: &mut Sheet, s: &Scenario, run: &str) {
    sheet.expect(&format!("{run}: exit status"), 0, s.run_rc(run).into());
    let j = s.json(run);
    let b = &j["breakdown"];
    sheet.row(
        &format!("{run}: timestamp source"),
        "hardware, transmit only",
        "",
        &format!("{} ({})", b["timestamps"], b["note"]),
        "said so",
        b["timestamps"] == "hardware" && b["note"].as_str().unwrap_or("").contains("transmit only"),
    );
    let rows = s.client_log(run);
    let sent = rows.iter().filter(|r| r.t1.is_some()).count() as i64;
    let tx_hw = rows
        .iter()
        .filter(|r| r.t1_hw.is_some_and(|v| v > 0))
        .count() as i64;
    // igb holds one TX stamp at a time: one asked for while another is
    // pending (a slow guest reads them late) is skipped, and the driver
    // counts it; a stamp that came after its row was written, Synapse
    // counts and says.
    let unstamped = ["tx_hwtstamp_skipped", "tx_hwtstamp_timeouts"]
        .iter()
        .map(|k| {
            let at = |when: &str| super::hardware_wire::nic_stat(s, &format!("a-{when}-{run}"), k);
            at("after") - at("before")
        })
        .sum::<i64>();
    let stale = b["stale_tx_stamps"].as_i64().unwrap_or(0);
    sheet.exact(
        &format!("{run}: requests with a hardware TX stamp"),
        sent - unstamped - stale,
        tx_hw,
        &format!(
            "every request sent, less {unstamped} the driver counted skipped or timed out \
             and {stale} whose stamp came after its row was written"
        ),
    );
    let rx_hw = rows.iter().filter(|r| r.t4_hw.is_some()).count() as i64;
    sheet.expect(
        &format!("{run}: replies with a hardware RX stamp"),
        0,
        rx_hw,
    );
    // TX-to-TX intervals, NIC clock against the kernel's driver stamps.
    let pairs: Vec<(i64, i64)> = rows
        .iter()
        .filter_map(|r| Some((r.t1_hw?, r.t1_driver?)))
        .collect();
    same_rate(
        sheet,
        &format!("{run}: TX-to-TX intervals, hardware against software, median difference"),
        &pairs,
    );
}
