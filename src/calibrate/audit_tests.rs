//! The audit against fake `/sys` and `/proc` trees: every branch.

use super::*;
use std::path::Path;
use synapse_engine::Coalesce;

/// A fake root with `files` (path, contents), and coalescing that answers
/// `rx_usecs` (or fails when `None`).
fn host(files: &[(&str, &str)], rx_usecs: Option<u32>) -> (tempfile::TempDir, Host) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap_or(Path::new("."))).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let h = Host::at(dir.path(), move |_iface: &str| match rx_usecs {
        Some(rx_usecs) => Ok(Coalesce {
            rx_usecs,
            rx_frames: 1,
        }),
        None => Err(std::io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
    });
    (dir, h)
}

const ROUTE: (&str, &str) = (
    "proc/net/route",
    "Iface\tDestination\tGateway\tFlags\nlo\t0000007F\t00000000\t0001\neth0\t00000000\t0102A8C0\t0003\n",
);
const CPUS: [(&str, &str); 2] = [
    ("sys/devices/system/cpu/cpu0/online", "1"),
    ("sys/devices/system/cpu/cpu1/online", "1"),
];

fn one(f: fn(&Host) -> Finding, files: &[(&str, &str)]) -> Finding {
    f(&host(files, Some(0)).1)
}

#[test]
fn governor_none_performance_and_powersave() {
    let none = one(governor, &CPUS);
    assert!(none.ok && none.now.contains("no cpufreq"));
    let gov = "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor";
    let gov1 = "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor";
    let fast = one(
        governor,
        &[
            CPUS[0],
            CPUS[1],
            (gov, "performance"),
            (gov1, "performance"),
        ],
    );
    assert!(fast.ok, "{fast:?}");
    assert_eq!(fast.now, "performance");
    let slow = one(
        governor,
        &[CPUS[0], CPUS[1], (gov, "performance"), (gov1, "powersave")],
    );
    assert!(!slow.ok);
    assert_eq!(slow.now, "performance, powersave");
    assert_eq!(
        slow.fix.as_deref(),
        Some("cpupower frequency-set -g performance")
    );
}

#[test]
fn isolation_absent_and_present() {
    let (_d, h) = host(
        &[
            ("sys/devices/system/cpu/isolated", ""),
            ("sys/devices/system/cpu/nohz_full", "(null)"),
        ],
        None,
    );
    let f = isolation(&h, 1);
    assert!(!f.ok);
    assert_eq!(f.now, "isolcpus: none, nohz_full: none");
    assert!(
        f.fix
            .unwrap()
            .contains("isolcpus=1 nohz_full=1 rcu_nocbs=1")
    );
    let (_d, h) = host(
        &[
            ("sys/devices/system/cpu/isolated", "2-3"),
            ("sys/devices/system/cpu/nohz_full", "2-3"),
        ],
        None,
    );
    let f = isolation(&h, 2);
    assert!(f.ok);
    assert_eq!(f.now, "isolcpus: 2-3, nohz_full: 2-3");
}

const INTERRUPTS: &str = "           CPU0       CPU1\n  24:     120000          0   PCI-MSI 512000-edge      eth0-TxRx-0\n  25:          0       5000   PCI-MSI 512001-edge      eth0-TxRx-1\n  26:         10         10   PCI-MSI 512002-edge      other\n";

#[test]
fn interrupts_without_a_route_a_line_or_a_balancer() {
    let f = one(|h| interrupts(h, 1), &[]);
    assert!(f.ok && f.now == "no default route", "{f:?}");
    let f = one(|h| interrupts(h, 1), &[ROUTE]);
    assert!(f.ok && f.now.contains("no interrupt line"), "{f:?}");
    let f = one(
        |h| interrupts(h, 1),
        &[ROUTE, ("proc/77/comm", "irqbalance")],
    );
    assert!(!f.ok && f.fix.unwrap().contains("systemctl stop irqbalance"));
}

#[test]
fn interrupts_on_the_measuring_cpu_are_moved_elsewhere() {
    let files = [ROUTE, CPUS[0], CPUS[1], ("proc/interrupts", INTERRUPTS)];
    let f = one(|h| interrupts(h, 1), &files);
    assert_eq!(f.now, "eth0: IRQ 24 on CPU 0; IRQ 25 on CPU 1");
    assert_eq!(
        f.fix.as_deref(),
        Some(
            "systemctl stop irqbalance; for i in 24 25; do echo 0 > /proc/irq/$i/smp_affinity_list; done"
        )
    );
    // Measuring on CPU 2 (neither), nothing balancing: fine as it is.
    let f = one(|h| interrupts(h, 2), &files);
    assert!(f.ok, "{f:?}");
}

#[test]
fn idle_states_none_deep_and_disabled() {
    let f = one(idle_states, &[]);
    assert!(!f.ok && f.fix.unwrap().contains("--keep-awake"));
    let dir = "sys/devices/system/cpu/cpu0/cpuidle";
    let deep = [
        (&*format!("{dir}/state0/name"), "POLL"),
        (&*format!("{dir}/state0/latency"), "0"),
        (&*format!("{dir}/state1/name"), "C6"),
        (&*format!("{dir}/state1/latency"), "133"),
        (&*format!("{dir}/state1/disable"), "0"),
    ]
    .map(|(p, t)| (p.to_string(), t));
    let files: Vec<(&str, &str)> = deep.iter().map(|(p, t)| (p.as_str(), *t)).collect();
    let f = one(idle_states, &files);
    assert!(!f.ok, "{f:?}");
    assert_eq!(f.now, "POLL 0 µs, C6 133 µs");
    let mut files = files.clone();
    let disable = format!("{dir}/state1/disable");
    files.retain(|(p, _)| *p != disable);
    files.push((&disable, "1"));
    let f = one(idle_states, &files);
    assert!(f.ok, "{f:?}");
    assert_eq!(f.now, "POLL 0 µs, C6 133 µs (disabled)");
}

#[test]
fn clocksource_fast_slow_and_unknown() {
    let dir = "sys/devices/system/clocksource/clocksource0";
    let cur = format!("{dir}/current_clocksource");
    let avail = format!("{dir}/available_clocksource");
    assert!(one(clocksource, &[]).ok);
    assert!(one(clocksource, &[(&cur, "tsc")]).ok);
    let f = one(clocksource, &[(&cur, "hpet"), (&avail, "tsc hpet acpi_pm")]);
    assert_eq!(
        f.fix.as_deref(),
        Some("echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource")
    );
    let f = one(clocksource, &[(&cur, "hpet"), (&avail, "hpet acpi_pm")]);
    assert!(f.fix.unwrap().starts_with("no vDSO-capable clocksource"));
}

#[test]
fn busy_poll_buffers_and_rt_throttling() {
    let core = "proc/sys/net/core";
    assert!(one(busy_poll, &[]).ok);
    let off = one(
        busy_poll,
        &[
            (&format!("{core}/busy_read"), "0"),
            (&format!("{core}/busy_poll"), "0"),
        ],
    );
    assert!(!off.ok && off.fix.unwrap().contains("net.core.busy_read=50"));
    assert!(
        one(
            busy_poll,
            &[
                (&format!("{core}/busy_read"), "50"),
                (&format!("{core}/busy_poll"), "0")
            ]
        )
        .ok
    );

    assert!(one(socket_buffers, &[]).ok);
    let small = one(
        socket_buffers,
        &[
            (&format!("{core}/rmem_max"), "212992"),
            (&format!("{core}/wmem_max"), "212992"),
        ],
    );
    assert!(!small.ok && small.fix.unwrap().contains("rmem_max=4194304"));
    assert!(
        one(
            socket_buffers,
            &[
                (&format!("{core}/rmem_max"), "8388608"),
                (&format!("{core}/wmem_max"), "4194304")
            ]
        )
        .ok
    );

    let k = "proc/sys/kernel";
    assert!(one(rt_throttling, &[]).ok);
    let on = one(
        rt_throttling,
        &[
            (&format!("{k}/sched_rt_runtime_us"), "950000"),
            (&format!("{k}/sched_rt_period_us"), "1000000"),
        ],
    );
    assert_eq!(on.now, "950000 µs of every 1000000 µs");
    assert!(!on.ok);
    let off = one(
        rt_throttling,
        &[
            (&format!("{k}/sched_rt_runtime_us"), "-1"),
            (&format!("{k}/sched_rt_period_us"), "1000000"),
        ],
    );
    assert!(off.ok && off.now == "off");
}

#[test]
fn coalescing_reported_held_and_unsupported() {
    assert!(one(coalescing, &[]).ok, "no route");
    let (_d, h) = host(&[ROUTE], Some(0));
    let f = coalescing(&h);
    assert!(f.ok && f.now == "eth0: rx-usecs 0, rx-frames 1", "{f:?}");
    let (_d, h) = host(&[ROUTE], Some(50));
    assert_eq!(
        coalescing(&h).fix.as_deref(),
        Some("ethtool -C eth0 rx-usecs 0 rx-frames 1")
    );
    let (_d, h) = host(&[ROUTE], None);
    let f = coalescing(&h);
    assert!(
        f.ok && f.now.contains("not reported by the driver"),
        "{f:?}"
    );
}

#[test]
fn the_whole_audit_has_every_item_in_order() {
    let (_d, h) = host(&[ROUTE], Some(0));
    let items: Vec<&str> = audit(&h, 0).iter().map(|f| f.item).collect();
    assert_eq!(
        items,
        [
            "CPU frequency governor",
            "isolated CPUs",
            "interface interrupts",
            "CPU idle states",
            "clocksource",
            "socket busy polling",
            "socket buffer limits",
            "RT throttling",
            "interrupt coalescing"
        ]
    );
}

#[test]
fn host_facts_come_from_the_tree() {
    let (_d, h) = host(
        &[
            ROUTE,
            CPUS[0],
            CPUS[1],
            ("proc/sys/kernel/hostname", "box\n"),
            ("proc/sys/kernel/osrelease", "6.1.0\n"),
            ("sys/devices/system/cpu/cpufreq/policy0", ""),
        ],
        None,
    );
    assert_eq!(h.name(), "box");
    assert_eq!(h.kernel(), "6.1.0");
    assert_eq!(h.cpus(), [0, 1]);
    assert_eq!(h.default_interface().as_deref(), Some("eth0"));
}
