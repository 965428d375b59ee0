//! The kernel's own count of what it did with UDP sockets
//! (`/proc/net/udp`, `/proc/net/udp6`): datagrams dropped on arrival
//! because a socket's receive queue was full, and what is still queued.
//! Tests hold a run's losses to these.

/// The rows of the sockets bound to local `port`.
fn rows(port: u16) -> Vec<String> {
    let local = format!(":{port:04X} ");
    ["/proc/net/udp", "/proc/net/udp6"]
        .iter()
        .filter_map(|t| std::fs::read_to_string(t).ok())
        .flat_map(|t| t.lines().map(str::to_string).collect::<Vec<_>>())
        .filter(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|a| format!("{a} ").contains(&local))
        })
        .collect()
}

/// Datagrams the kernel dropped on arrival at `port` (receive queue
/// full), from the tables' last column.
pub fn drops(port: u16) -> u64 {
    rows(port)
        .iter()
        .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
        .sum()
}

/// Bytes queued for reading at `port` (the `tx_queue:rx_queue` column's
/// receive half).
pub fn queued(port: u16) -> u64 {
    rows(port)
        .iter()
        .filter_map(|l| {
            let q = l.split_whitespace().nth(4)?.split(':').nth(1)?;
            u64::from_str_radix(q, 16).ok()
        })
        .sum()
}
