//! The one way Synapse says why a file it writes could not be written:
//! the option and the path, then the system's cause in plain words
//! (`--hdr-log /mnt/full/a.hlog: No space left on device`), never a debug
//! dump; whether the user named a file that cannot be made (bad input) or
//! the system failed while writing it (an I/O failure); and no empty file
//! left behind by a write that failed before anything was in it.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The system's cause, as a person reads it: `No space left on device`
/// (without Rust's ` (os error 28)` and what a wrapper adds after it).
pub fn cause(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// A file the user named could not be made there (no such directory, not
/// allowed, a directory in its place): bad input, exit 2. Anything else
/// (a full disk, an I/O error) is a failure of the run, exit 1.
pub fn is_bad_path(e: &io::Error) -> bool {
    use io::ErrorKind::*;
    matches!(
        e.kind(),
        NotFound
            | PermissionDenied
            | IsADirectory
            | NotADirectory
            | InvalidFilename
            | ReadOnlyFilesystem
    )
}

/// Why a file could not be written: what it was for, where, and why.
#[derive(Debug, thiserror::Error)]
#[error("{what} {}: {}", path.display(), cause(source))]
pub struct WriteError {
    /// What the file is, as the user asked for it: `plot -o`, `--hdr-log`.
    pub what: String,
    /// The file.
    pub path: PathBuf,
    /// What the system said.
    pub source: io::Error,
}

impl WriteError {
    /// Bad input (see [`is_bad_path`]) rather than an I/O failure.
    pub fn is_bad_path(&self) -> bool {
        is_bad_path(&self.source)
    }
}

/// Writes `bytes` as the whole of `path`, or nothing: they go to a
/// temporary file beside it, renamed over `path` once complete, so a
/// failure leaves neither a partial file nor an empty one. Something
/// other than a regular file already at `path` (a device, a link) is
/// written through, not replaced.
pub fn write_whole(what: &str, path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let failed = |source| WriteError {
        what: what.to_string(),
        path: path.to_path_buf(),
        source,
    };
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::write(path, bytes).map_err(failed);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
    tmp.write_all(bytes).map_err(failed)?;
    tmp.as_file().sync_all().map_err(failed)?;
    tmp.persist(path).map_err(|e| failed(e.error))?;
    Ok(())
}

/// Removes `path` if it is an empty regular file this run created: a log
/// whose first write failed leaves nothing behind.
pub fn remove_if_empty(path: &Path, created: bool) {
    let empty = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0);
    if created && empty {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_plain_words() {
        let full = io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(cause(&full), "No space left on device");
        assert!(!is_bad_path(&full), "a full disk is an I/O failure");
        let missing = io::Error::from_raw_os_error(libc::ENOENT);
        assert!(is_bad_path(&missing), "a missing directory is bad input");
        let custom = io::Error::other("the writer stopped");
        assert_eq!(cause(&custom), "the writer stopped");
    }

    #[test]
    fn a_whole_write_leaves_the_file_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.png");
        write_whole("plot -o", &path, b"picture").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"picture");
        let nowhere = dir.path().join("no/such/dir/a.png");
        let e = write_whole("plot -o", &nowhere, b"x").unwrap_err();
        assert!(e.is_bad_path());
        assert_eq!(
            e.to_string(),
            format!("plot -o {}: No such file or directory", nowhere.display())
        );
        // A device is written through (and is full), never replaced.
        let full = write_whole("plot -o", Path::new("/dev/full"), b"x").unwrap_err();
        assert!(!full.is_bad_path());
        assert_eq!(
            full.to_string(),
            "plot -o /dev/full: No space left on device"
        );
        assert!(!std::fs::symlink_metadata("/dev/full").unwrap().is_file());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn only_an_empty_file_this_run_made_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "").unwrap();
        remove_if_empty(&empty, false);
        assert!(empty.exists(), "not ours: kept");
        remove_if_empty(&empty, true);
        assert!(!empty.exists());
        let kept = dir.path().join("kept");
        std::fs::write(&kept, "row\n").unwrap();
        remove_if_empty(&kept, true);
        assert!(kept.exists(), "it holds something: kept");
    }
}
