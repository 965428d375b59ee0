//! The hardware path across clock domains: the client's send path to the
//! wire (T1 hw placed on the system clock, held against linuxptp's
//! `phc_ctl` reading of the same NIC clock), and a reflector that stamps
//! on its NIC (T3 hw in its log, and in each Follow-Up to the client,
//! placed on the reflector's clock).

use super::outputs::{ClientRow, Scenario, ServerRow};
use super::sheet::{Interval, Sheet, Unit};
use serde_json::Value;

fn median(mut v: Vec<i64>) -> Option<i64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// A segment's figures from a run's JSON breakdown.
fn segment<'a>(j: &'a Value, key: &str) -> &'a Value {
    j["breakdown"]["segments"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["segment"] == key))
        .unwrap_or(&Value::Null)
}

/// `phc_ctl eth0 cmp`: "offset from CLOCK_REALTIME is 123ns": the system
/// clock minus the NIC's (linuxptp's sysoff: the middle of the two system
/// reads less the PHC read between them).
fn phc_ctl_offset(s: &Scenario, file: &str) -> Option<i64> {
    let text = std::fs::read_to_string(s.dir.join(file)).ok()?;
    let after = text.split("offset from CLOCK_REALTIME is ").nth(1)?;
    after.split("ns").next()?.trim().parse().ok()
}

/// A counter of `ethtool -S eth0` as saved in `ethtool-s-WHEN.txt`.
pub fn nic_stat(s: &Scenario, when: &str, key: &str) -> i64 {
    std::fs::read_to_string(s.dir.join(format!("ethtool-s-{when}.txt")))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().split_once(": "))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0)
}

/// The client's send path to the wire: measured, marked as hardware, and
/// on a mapping of the NIC's clock that agrees with `phc_ctl`'s.
pub fn to_the_wire(sheet: &mut Sheet, s: &Scenario, run: &str) {
    let j = s.json(run);
    let w = segment(&j, "to_wire");
    let rows = s.client_log(run);
    let sent = rows.iter().filter(|r| r.t1_hw.is_some()).count() as u64;
    let samples = w["samples"].as_u64().unwrap_or(0);
    sheet.row(
        &format!("{run}: send path to the wire (T1 driver → T1 hw)"),
        "every request with a NIC stamp, marked hardware",
        &format!("{sent} NIC stamps"),
        &format!(
            "{samples} samples, {} missing, p50 {} ns, hardware: {}",
            w["missing"], w["p50_ns"], w["hardware"]
        ),
        "measured on the requests, the rest missing (never negative)",
        samples > 0 && samples * 10 >= sent * 9 && w["hardware"] == true,
    );
    // T1 wire − T1 hw is the mapping's offset at that packet: the system
    // clock minus the NIC's, as phc_ctl measures it independently.
    let ours = median(
        rows.iter()
            .filter_map(|r| Some(r.t1_wire? - r.t1_hw?))
            .collect(),
    );
    let theirs = [
        phc_ctl_offset(s, "phc-before.txt"),
        phc_ctl_offset(s, "phc-after.txt"),
    ];
    if run != "hardware" {
        return;
    }
    let (Some(a), Some(b)) = (theirs[0], theirs[1]) else {
        sheet.row(
            "hardware: system clock − NIC clock",
            "phc_ctl's reading",
            "phc_ctl gave none",
            &format!("{ours:?}"),
            "phc_ctl must read it",
            false,
        );
        return;
    };
    let got = ours.unwrap_or(i64::MAX) as f64;
    let (lo, hi) = (a.min(b) as f64, a.max(b) as f64);
    // The two readings' uncertainty under emulation: each PHC read is a
    // trap into QEMU, tens of µs.
    let slack = 100_000.0;
    sheet.bounded(
        "hardware: system clock − NIC clock, Synapse's mapping",
        "phc_ctl before and after the run ± 100 µs",
        &format!("phc_ctl: {a} ns, {b} ns"),
        Interval {
            lo: lo - slack,
            hi: hi + slack,
            got_lo: got,
            got_hi: got,
            unit: Unit::Ns,
            how: "the median T1_WIRE − T1 hw".into(),
        },
    );
}

/// B's reflector with `--timestamps hardware=eth0`: its NIC switched on and
/// put back at SIGTERM, T3 hw on every answer and T2 hw on none, and the
/// client's Follow-Ups carrying the NIC's send time on B's clock.
pub fn reflector(sheet: &mut Sheet, s: &Scenario, setting: impl Fn(&str) -> String) {
    let banner = std::fs::read_to_string(s.dir.join("srvhw.txt")).unwrap_or_default();
    let line = banner
        .lines()
        .find(|l| l.starts_with("Timestamps:"))
        .unwrap_or("none");
    sheet.row(
        "reflector: its timestamp source",
        "hardware on eth0, switched on",
        "",
        line,
        "said so",
        line.starts_with("Timestamps: hardware on eth0, switched on for this run"),
    );
    let (before, during, after) = (setting("b-before"), setting("b-during"), setting("b-after"));
    let rc = std::fs::read_to_string(s.dir.join("srvhw.rc")).unwrap_or_default();
    sheet.row(
        "reflector, SIGTERM: B's NIC setting during, after; exit status",
        &format!("TX on during; {before} after; 0"),
        &format!("{during}; {after}"),
        rc.trim(),
        "switched on for the run, restored at the signal",
        during.starts_with("tx_type 1 ") && after == before && rc.trim() == "0",
    );
    let log: Vec<ServerRow> = s
        .server_log("srvhw")
        .into_iter()
        .filter(|r| r.proto == "stamp")
        .collect();
    let t3_hw = log
        .iter()
        .filter(|r| r.t3_hw.is_some_and(|v| v > 0))
        .count() as i64;
    // igb holds one TX stamp at a time: one asked for while another is
    // pending is skipped, and the driver counts it (`ethtool -S`). A stamp
    // that came after its row was written, the server counts and says.
    let unstamped = ["tx_hwtstamp_skipped", "tx_hwtstamp_timeouts"]
        .iter()
        .map(|k| nic_stat(s, "b-after", k) - nic_stat(s, "b-before", k))
        .sum::<i64>();
    let late: i64 = banner
        .lines()
        .flat_map(|l| l.split("; "))
        .find_map(|p| p.strip_suffix(" TX stamps came after their row was written"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    sheet.exact(
        "reflector log: answers with a NIC TX stamp (T3 hw)",
        log.len() as i64 - unstamped - late,
        t3_hw,
        &format!(
            "every answer logged, less {unstamped} the driver counted skipped or timed out \
             and {late} whose stamp came after its row was written"
        ),
    );
    let t2_hw = log.iter().filter(|r| r.t2_hw.is_some()).count();
    sheet.expect(
        "reflector log: answers with a NIC RX stamp (T2 hw)",
        0,
        t2_hw as i64,
    );
    let pairs: Vec<(i64, i64)> = log
        .iter()
        .filter_map(|r| Some((r.t3_hw?, r.t3_driver?)))
        .collect();
    super::hardware::same_rate(
        sheet,
        "reflector: T3 TX-to-TX intervals, NIC against kernel, median difference",
        &pairs,
    );
    follow_ups(sheet, s, &log);
}

/// The client's side: Follow-Ups in hardware mode, the dwell to B's wire
/// marked hardware, and each Follow-Up time after B's kernel sent it.
fn follow_ups(sheet: &mut Sheet, s: &Scenario, log: &[ServerRow]) {
    sheet.expect("follow-up run: exit status", 0, s.run_rc("followup").into());
    let j = s.json("followup");
    let f = &j["stamp_extensions"]["follow_up"];
    let (matched, hardware) = (
        f["matched"].as_i64().unwrap_or(-1),
        f["hardware"].as_i64().unwrap_or(-2),
    );
    let replies = j["packets"]["received"].as_i64().unwrap_or(0);
    let (none_yet, unmatched) = (
        f["none_yet"].as_i64().unwrap_or(-1),
        f["unmatched"].as_i64().unwrap_or(-1),
    );
    // A Follow-Up carries the latest stamp the reflector has: one that came
    // after the next request names an older answer (unmatched). Under
    // emulation igb's stamp can take milliseconds, so most, not all, match.
    sheet.row(
        "follow-up: replies whose T3 came from B's NIC",
        "every one matched; every reply's Follow-Up accounted for; most matched",
        &format!("{replies} replies"),
        &format!("{hardware} of {matched} matched ({none_yet} none yet, {unmatched} unmatched)"),
        "Follow-Up in hardware mode, at least 3 in 4 matched",
        hardware == matched
            && matched + none_yet + unmatched == replies
            && matched * 4 >= replies * 3,
    );
    let dwell = segment(&j, "server_dwell");
    sheet.row(
        "follow-up: server dwell (T2 → T3 on B's wire)",
        "measured, marked hardware",
        "",
        &format!(
            "{} samples, p50 {} ns, hardware: {}",
            dwell["samples"], dwell["p50_ns"], dwell["hardware"]
        ),
        "a NIC's T3 on B's clock",
        dwell["samples"].as_i64().unwrap_or(0) > 0 && dwell["hardware"] == true,
    );
    // B's kernel handed each answer to its NIC before the NIC sent it: the
    // Follow-Up's time (NIC, placed on B's clock) against B's own log.
    let rows: Vec<ClientRow> = s.client_log("followup");
    let after: Vec<i64> = rows
        .iter()
        .filter_map(|r| {
            let srv = log.iter().find(|l| l.request() == r.seq)?;
            Some(r.t3_hw? - srv.t3_driver?)
        })
        .collect();
    let n = after.len();
    let negative = after.iter().filter(|&&d| d < 0).count();
    let p50 = median(after).unwrap_or(i64::MIN) as f64;
    sheet.bounded(
        "follow-up: T3 (B's NIC, on B's clock) − B's driver stamp, median",
        "after it, by less than 1 ms",
        &format!("{n} answers joined with B's log, {negative} negative"),
        Interval {
            lo: 0.0,
            hi: 1_000_000.0,
            got_lo: p50,
            got_hi: p50,
            unit: Unit::Ns,
            how: "the median, on one clock (B's)".into(),
        },
    );
}

/// The NIC's clock stepped +50 ms by phc_ctl mid-run: the servo finds the
/// step, the rate it publishes is not the step's, and no NIC stamp is
/// placed through the mapping from before it (each placed T1_WIRE within
/// half the step of its driver stamp: the step would put it 50 ms off),
/// while stamps are placed again after it.
pub fn phc_step(sheet: &mut Sheet, s: &Scenario) {
    sheet.expect("phcstep: exit status", 0, s.run_rc("phcstep").into());
    let j = s.json("phcstep");
    let c = &j["breakdown"]["nic_clock"];
    let step = s.told_f64("phc_step_ns");
    sheet.row(
        "phcstep: the servo, after a step of the NIC's clock",
        &format!(
            "{} ms by phc_ctl; a step found, no rate from it",
            step / 1e6
        ),
        "",
        &format!(
            "{}: {} steps, rate {} ppm, window {} ns (widest {}), {} stamps not placed",
            c["method"],
            c["steps"],
            c["rate_ppm"],
            c["window_ns"],
            c["window_max_ns"],
            c["unplaced"]
        ),
        "steps ≥ 1, |rate| < 100 ppm (the step over 100 ms would read 500,000)",
        c["steps"].as_u64().unwrap_or(0) >= 1
            && c["rate_ppm"].as_f64().is_some_and(|r| r.abs() < 100.0),
    );
    let rows = s.client_log("phcstep");
    let to_wire: Vec<i64> = rows
        .iter()
        .filter_map(|r| Some(r.t1_wire? - r.t1_driver?))
        .collect();
    let worst = to_wire.iter().map(|v| v.abs()).max().unwrap_or(i64::MAX);
    let stamped = rows.iter().filter(|r| r.t1_hw.is_some()).count();
    // The last second of the run is well after the step.
    let late = rows
        .iter()
        .rev()
        .take(200)
        .filter(|r| r.t1_wire.is_some())
        .count();
    // A stamp placed through the mapping from before the step is the step
    // off: every placed one within half of it, however long the emulated
    // NIC took to stamp on a busy host (1.06 ms was seen beside stress-ng).
    let bound = (step / 2.0) as i64;
    sheet.row(
        "phcstep: T1_WIRE − T1 driver, every placed stamp",
        &format!(
            "within {} ms, half the step (a stamp through the old mapping is {} ms off)",
            bound / 1_000_000,
            step / 1e6
        ),
        &format!("{stamped} NIC stamps"),
        &format!(
            "{} placed, largest |T1_WIRE − T1_DRV| {worst} ns, {late} of the last 200 placed",
            to_wire.len()
        ),
        "none outside; placed again after the step",
        !to_wire.is_empty() && worst < bound && late >= 150,
    );
}
