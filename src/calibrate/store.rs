//! Where a calibration is kept: `$XDG_STATE_HOME/synapse/calibration.json`
//! (else `~/.local/state/…`), written whole and renamed into place, so a
//! reader never sees half of one.

use super::Calibration;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The file: `explicit`, else the XDG state location.
pub fn path(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(base.join("synapse").join("calibration.json"))
}

/// Keeps `c` at `path`.
pub fn save(path: &Path, c: &Calibration) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer_pretty(&mut tmp, c)?;
    tmp.write_all(b"\n")?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The calibration kept at `path`. `Ok(None)`: there is none.
pub fn load(path: &Path) -> Result<Option<Calibration>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{}: not a calibration ({e})", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}
