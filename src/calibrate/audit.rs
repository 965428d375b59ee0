//! How the host is set up for latency, item by item: what it is now, why
//! it matters, and the command that changes it. Synapse changes nothing.

use super::host::Host;
use serde::Serialize;

/// One item of the audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What is looked at.
    pub item: &'static str,
    /// What it is now.
    pub now: String,
    /// Already as low-latency as it goes (or nothing to change).
    pub ok: bool,
    /// Why it matters for a round trip.
    pub why: &'static str,
    /// What to run to change it, when it is not ok.
    pub fix: Option<String>,
}

/// The whole audit, in a fixed order. `cpu` is the CPU measurements run
/// on (advice names it).
pub fn audit(host: &Host, cpu: usize) -> Vec<Finding> {
    vec![
        governor(host),
        isolation(host, cpu),
        interrupts(host, cpu),
        idle_states(host),
        clocksource(host),
        busy_poll(host),
        socket_buffers(host),
        rt_throttling(host),
        coalescing(host),
    ]
}

fn finding(item: &'static str, now: String, why: &'static str, fix: Option<String>) -> Finding {
    Finding {
        item,
        now,
        ok: fix.is_none(),
        why,
        fix,
    }
}

fn governor(host: &Host) -> Finding {
    let why = "a power-saving governor lowers the clock between packets; each round trip then \
               starts on a slow core";
    let governors: Vec<String> = host
        .cpus()
        .iter()
        .filter_map(|c| {
            host.read(&format!(
                "sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"
            ))
        })
        .collect();
    if governors.is_empty() {
        return finding(
            "CPU frequency governor",
            "no cpufreq driver (a VM, or a fixed clock)".into(),
            why,
            None,
        );
    }
    let mut kinds = governors.clone();
    kinds.sort();
    kinds.dedup();
    let fix = kinds
        .iter()
        .any(|g| g != "performance")
        .then(|| "cpupower frequency-set -g performance".to_string());
    finding("CPU frequency governor", kinds.join(", "), why, fix)
}

fn isolation(host: &Host, cpu: usize) -> Finding {
    let why = "on a shared CPU the scheduler, timers and other tasks interrupt the measuring \
               thread; an isolated, tickless CPU leaves it alone";
    let isolated = host
        .read("sys/devices/system/cpu/isolated")
        .unwrap_or_default();
    let nohz = host
        .read("sys/devices/system/cpu/nohz_full")
        .unwrap_or_default();
    let nohz = if nohz == "(null)" {
        String::new()
    } else {
        nohz
    };
    let now = format!(
        "isolcpus: {}, nohz_full: {}",
        if isolated.is_empty() {
            "none"
        } else {
            &isolated
        },
        if nohz.is_empty() { "none" } else { &nohz }
    );
    let fix = isolated.is_empty().then(|| {
        format!(
            "add `isolcpus={cpu} nohz_full={cpu} rcu_nocbs={cpu}` to GRUB_CMDLINE_LINUX in \
             /etc/default/grub, run update-grub, reboot, and measure with --cpu {cpu}"
        )
    });
    finding("isolated CPUs", now, why, fix)
}

fn interrupts(host: &Host, cpu: usize) -> Finding {
    let why = "the CPU that takes the interface's interrupts runs its receive path; on the \
               measuring CPU it competes, elsewhere it costs a cross-CPU wake-up";
    let balancer = irqbalance_running(host);
    let Some(iface) = host.default_interface() else {
        return finding("interface interrupts", "no default route".into(), why, None);
    };
    let lines = irq_lines(host, &iface);
    if lines.is_empty() {
        let now = format!("{iface}: no interrupt line names it (virtual, or shared)");
        let fix =
            balancer.then(|| "systemctl stop irqbalance (it moves interrupts during runs)".into());
        return finding("interface interrupts", now, why, fix);
    }
    let on: Vec<String> = lines
        .iter()
        .map(|(irq, cpus)| format!("IRQ {irq} on CPU {}", list(cpus)))
        .collect();
    let now = format!(
        "{iface}: {}{}",
        on.join("; "),
        if balancer { "; irqbalance running" } else { "" }
    );
    let on_measuring = lines.iter().any(|(_, cpus)| cpus.contains(&cpu));
    let fix = (balancer || on_measuring).then(|| {
        let other = host.cpus().into_iter().find(|&c| c != cpu).unwrap_or(0);
        let irqs: Vec<&str> = lines.iter().map(|(irq, _)| irq.as_str()).collect();
        format!(
            "systemctl stop irqbalance; for i in {}; do echo {other} > /proc/irq/$i/smp_affinity_list; done",
            irqs.join(" ")
        )
    });
    finding("interface interrupts", now, why, fix)
}

/// `/proc/interrupts` lines for `iface`: (IRQ, CPUs with a count).
fn irq_lines(host: &Host, iface: &str) -> Vec<(String, Vec<usize>)> {
    let Some(table) = host.read("proc/interrupts") else {
        return Vec::new();
    };
    let mut lines = table.lines();
    let cpus: Vec<usize> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect();
    lines
        .filter(|l| {
            l.split_whitespace()
                .any(|w| w == iface || w.starts_with(&format!("{iface}-")))
        })
        .filter_map(|l| {
            let (irq, rest) = l.trim().split_once(':')?;
            let counts = rest.split_whitespace().take(cpus.len());
            let busy = counts
                .zip(&cpus)
                .filter(|(n, _)| n.parse::<u64>().is_ok_and(|n| n > 0))
                .map(|(_, &c)| c)
                .collect();
            Some((irq.trim().to_string(), busy))
        })
        .collect()
}

fn irqbalance_running(host: &Host) -> bool {
    host.list("proc")
        .iter()
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
        .any(|p| host.read(&format!("proc/{p}/comm")).as_deref() == Some("irqbalance"))
}

fn list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        return "none yet".into();
    }
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn idle_states(host: &Host) -> Finding {
    let why = "a CPU in a deep idle state takes tens to hundreds of µs to wake for a packet";
    let dir = "sys/devices/system/cpu/cpu0/cpuidle";
    let states: Vec<(String, u64, bool)> = host
        .list(dir)
        .iter()
        .filter(|s| s.starts_with("state"))
        .filter_map(|s| {
            let name = host.read(&format!("{dir}/{s}/name"))?;
            let latency = host.read(&format!("{dir}/{s}/latency"))?.parse().ok()?;
            let disabled = host.read(&format!("{dir}/{s}/disable")).as_deref() == Some("1");
            Some((name, latency, disabled))
        })
        .collect();
    if states.is_empty() {
        return finding(
            "CPU idle states",
            "no cpuidle driver: the CPU halts when idle".into(),
            why,
            Some(
                "measure with --keep-awake (holds /dev/cpu_dma_latency at 0 while it runs)".into(),
            ),
        );
    }
    let now = states
        .iter()
        .map(|(n, l, d)| format!("{n} {l} µs{}", if *d { " (disabled)" } else { "" }))
        .collect::<Vec<_>>()
        .join(", ");
    let deep = states
        .iter()
        .any(|&(_, latency, disabled)| latency > 10 && !disabled);
    let fix = deep.then(|| {
        "measure with --keep-awake (holds /dev/cpu_dma_latency at 0), or cpupower idle-set -D 10".into()
    });
    finding("CPU idle states", now, why, fix)
}

fn clocksource(host: &Host) -> Finding {
    let why = "with a clocksource the vDSO can read (tsc, kvm-clock…), a clock read costs \
               nanoseconds; with hpet or acpi_pm it is a syscall, and every stamp costs that";
    let dir = "sys/devices/system/clocksource/clocksource0";
    let Some(now) = host.read(&format!("{dir}/current_clocksource")) else {
        return finding("clocksource", "unknown".into(), why, None);
    };
    let fast = [
        "tsc",
        "kvm-clock",
        "hyperv_clocksource_tsc_page",
        "arch_sys_counter",
    ];
    let available = host
        .read(&format!("{dir}/available_clocksource"))
        .unwrap_or_default();
    let fix = (!fast.contains(&now.as_str())).then(|| {
        match available.split_whitespace().find(|c| fast.contains(c)) {
            Some(better) => format!(
                "echo {better} > /sys/devices/system/clocksource/clocksource0/current_clocksource"
            ),
            None => format!("no vDSO-capable clocksource is available (have: {available})"),
        }
    });
    finding("clocksource", now, why, fix)
}

fn busy_poll(host: &Host) -> Finding {
    let why = "with net.core.busy_read the kernel polls the NIC queue for a blocking receive \
               instead of waiting for its interrupt (NICs with NAPI; loopback does not need it)";
    let read = host.read("proc/sys/net/core/busy_read");
    let poll = host.read("proc/sys/net/core/busy_poll");
    let (Some(read), Some(poll)) = (read, poll) else {
        return finding(
            "socket busy polling",
            "not available in this kernel".into(),
            why,
            None,
        );
    };
    let off = read == "0" && poll == "0";
    let fix = off.then(|| "sysctl -w net.core.busy_read=50 net.core.busy_poll=50".into());
    finding(
        "socket busy polling",
        format!("busy_read {read} µs, busy_poll {poll} µs"),
        why,
        fix,
    )
}

/// What the reflector asks for its receive buffer.
const WANTED_BUFFER: u64 = 4 << 20;

fn socket_buffers(host: &Host) -> Finding {
    let why = "the reflector and a paced run ask for 4 MiB of socket buffer so bursts queue \
               instead of dropping; the kernel caps the request at rmem_max/wmem_max";
    let max = |k: &str| {
        host.read(&format!("proc/sys/net/core/{k}"))
            .and_then(|v| v.parse::<u64>().ok())
    };
    let (Some(r), Some(w)) = (max("rmem_max"), max("wmem_max")) else {
        return finding("socket buffer limits", "unknown".into(), why, None);
    };
    let fix = (r < WANTED_BUFFER || w < WANTED_BUFFER).then(|| {
        format!("sysctl -w net.core.rmem_max={WANTED_BUFFER} net.core.wmem_max={WANTED_BUFFER}")
    });
    finding(
        "socket buffer limits",
        format!("rmem_max {r}, wmem_max {w} bytes"),
        why,
        fix,
    )
}

fn rt_throttling(host: &Host) -> Finding {
    let why = "a SCHED_FIFO thread (--rt) that never sleeps (--busy-poll) is stopped for the \
               rest of each period once it has used its RT runtime";
    let runtime = host.read("proc/sys/kernel/sched_rt_runtime_us");
    let period = host.read("proc/sys/kernel/sched_rt_period_us");
    let (Some(runtime), Some(period)) = (runtime, period) else {
        return finding("RT throttling", "unknown".into(), why, None);
    };
    if runtime == "-1" {
        return finding("RT throttling", "off".into(), why, None);
    }
    let now = format!("{runtime} µs of every {period} µs");
    let fix = Some(
        "sysctl -w kernel.sched_rt_runtime_us=-1 (only where the spinning CPU is dedicated)".into(),
    );
    finding("RT throttling", now, why, fix)
}

fn coalescing(host: &Host) -> Finding {
    let why = "interrupt coalescing holds received packets to interrupt once for several: \
               rx-usecs is added to a lone packet's latency";
    let Some(iface) = host.default_interface() else {
        return finding("interrupt coalescing", "no default route".into(), why, None);
    };
    match host.coalesce(&iface) {
        Ok(c) => {
            let now = format!(
                "{iface}: rx-usecs {}, rx-frames {}",
                c.rx_usecs, c.rx_frames
            );
            let fix =
                (c.rx_usecs > 0).then(|| format!("ethtool -C {iface} rx-usecs 0 rx-frames 1"));
            finding("interrupt coalescing", now, why, fix)
        }
        Err(e) => finding(
            "interrupt coalescing",
            format!("{iface}: not reported by the driver ({e})"),
            why,
            None,
        ),
    }
}

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
