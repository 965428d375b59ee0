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

/// What a write error says: a file kept says how to replace it.
fn why(e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::AlreadyExists {
        "the file exists (--force replaces it)".into()
    } else {
        cause(e)
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
#[error("{what} {}: {}", path.display(), why(source))]
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
        is_bad_path(&self.source) || self.exists()
    }

    /// The file was there already, and was kept.
    pub fn exists(&self) -> bool {
        self.source.kind() == io::ErrorKind::AlreadyExists
    }
}

/// Writes `bytes` as the whole of `path`, or nothing: they go to a
/// temporary file beside it, renamed to `path` once complete, so a
/// failure leaves neither a partial file nor an empty one. The file is
/// created as any other the program writes (mode 0666 less the umask,
/// not private), and a file already at `path` is replaced only when
/// `replace` (else: [`io::ErrorKind::AlreadyExists`], see
/// [`WriteError::exists`]). Something other than a regular file already
/// at `path` (a device, a link) is written through, not replaced.
pub fn write_whole(what: &str, path: &Path, bytes: &[u8], replace: bool) -> Result<(), WriteError> {
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
    if !replace && std::fs::symlink_metadata(path).is_ok() {
        return Err(failed(io::ErrorKind::AlreadyExists.into()));
    }
    // Asked for 0666: the kernel takes the umask off, as for any file.
    let mut tmp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(failed)?;
    tmp.write_all(bytes).map_err(failed)?;
    tmp.as_file().sync_all().map_err(failed)?;
    let done = if replace {
        tmp.persist(path)
    } else {
        tmp.persist_noclobber(path)
    };
    done.map_err(|e| failed(e.error))?;
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
        write_whole("plot -o", &path, b"picture", false).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"picture");
        let nowhere = dir.path().join("no/such/dir/a.png");
        let e = write_whole("plot -o", &nowhere, b"x", false).unwrap_err();
        assert!(e.is_bad_path());
        assert_eq!(
            e.to_string(),
            format!("plot -o {}: No such file or directory", nowhere.display())
        );
        // A device is written through (and is full), never replaced.
        let full = write_whole("plot -o", Path::new("/dev/full"), b"x", true).unwrap_err();
        assert!(!full.is_bad_path());
        assert_eq!(
            full.to_string(),
            "plot -o /dev/full: No space left on device"
        );
        assert!(!std::fs::symlink_metadata("/dev/full").unwrap().is_file());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// Issue 51: a picture is made as any other file (the umask decides,
    /// not a private 0600), and one already there is kept unless replaced.
    #[test]
    fn a_whole_write_follows_the_umask_and_keeps_an_existing_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.png");
        write_whole("plot -o", &path, b"one", false).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        let umask = umask_of_this_process();
        assert_eq!(mode, 0o666 & !umask, "mode {mode:o} under umask {umask:o}");
        let e = write_whole("plot -o", &path, b"two", false).unwrap_err();
        assert!(e.exists() && e.is_bad_path());
        assert_eq!(
            e.to_string(),
            format!(
                "plot -o {}: the file exists (--force replaces it)",
                path.display()
            )
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        write_whole("plot -o", &path, b"two", true).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }

    /// This process's umask, from `/proc/self/status`.
    fn umask_of_this_process() -> u32 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
        u32::from_str_radix(line.split_whitespace().nth(1).unwrap(), 8).unwrap()
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
