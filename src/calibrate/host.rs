//! The host as the audit reads it: files under a root (`/` for real, a
//! fake tree in tests) and the NIC's coalescing, which only an ioctl
//! tells.

use std::path::PathBuf;
use synapse_engine::Coalesce;

/// Reads an interface's coalescing (ethtool, or a stand-in).
type CoalesceReader = Box<dyn Fn(&str) -> std::io::Result<Coalesce>>;

/// Where the audit reads from.
pub struct Host {
    root: PathBuf,
    coalesce: CoalesceReader,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// This machine.
    pub fn this() -> Self {
        Self::at("/", synapse_engine::coalesce)
    }

    /// A tree rooted at `root`, with `coalesce` standing in for ethtool.
    pub fn at(
        root: impl Into<PathBuf>,
        coalesce: impl Fn(&str) -> std::io::Result<Coalesce> + 'static,
    ) -> Self {
        Self {
            root: root.into(),
            coalesce: Box::new(coalesce),
        }
    }

    /// A file's contents, trimmed (`path` relative to the root, e.g.
    /// `proc/cmdline`); `None` if it cannot be read.
    pub fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(path))
            .ok()
            .map(|s| s.trim().to_string())
    }

    /// The names in a directory, sorted (empty if it cannot be read).
    pub fn list(&self, dir: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.root.join(dir))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// `ethtool -c IFACE`.
    pub fn coalesce(&self, iface: &str) -> std::io::Result<Coalesce> {
        (self.coalesce)(iface)
    }

    /// The host name.
    pub fn name(&self) -> String {
        self.read("proc/sys/kernel/hostname")
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "localhost".into())
    }

    /// The kernel release.
    pub fn kernel(&self) -> String {
        self.read("proc/sys/kernel/osrelease")
            .unwrap_or_else(|| "unknown".into())
    }

    /// The CPUs `cpuN` directories name, in order.
    pub fn cpus(&self) -> Vec<usize> {
        let mut cpus: Vec<usize> = self
            .list("sys/devices/system/cpu")
            .iter()
            .filter_map(|n| n.strip_prefix("cpu")?.parse().ok())
            .collect();
        cpus.sort_unstable();
        cpus
    }

    /// The interface of the default route (IPv4), from `/proc/net/route`.
    pub fn default_interface(&self) -> Option<String> {
        self.read("proc/net/route")?.lines().skip(1).find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(1) == Some(&"00000000")).then(|| f[0].to_string())
        })
    }
}
