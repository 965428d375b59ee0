//! The STAMP key file (`--hmac-key-file`): the shared key in hexadecimal,
//! at least 16 bytes, in a file only its owner can read. The key never goes
//! on a command line, where `ps` and shell history would show it.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use synapse_engine::stamp_key::StampKey;

/// Reads the key in `path`; a one-line reason when it cannot be used.
pub fn read(path: &Path) -> Result<StampKey, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("--hmac-key-file {shown}: {e}"))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "--hmac-key-file {shown}: others can read it (mode {mode:03o}); chmod 600 {shown}"
        ));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--hmac-key-file {shown}: {e}"))?;
    StampKey::from_hex(&text).map_err(|e| format!("--hmac-key-file {shown}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::Permissions;

    fn key_file(text: &str, mode: u32) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        std::fs::set_permissions(f.path(), Permissions::from_mode(mode)).unwrap();
        f
    }

    #[test]
    fn a_private_hex_key_is_read() {
        let f = key_file("00112233445566778899aabbccddeeff\n", 0o600);
        assert!(read(f.path()).is_ok());
        let f = key_file("00112233445566778899aabbccddeeff", 0o400);
        assert!(read(f.path()).is_ok());
    }

    #[test]
    fn a_key_others_can_read_or_a_bad_key_is_refused_in_one_line() {
        let f = key_file("00112233445566778899aabbccddeeff", 0o644);
        let e = read(f.path()).unwrap_err();
        assert!(e.contains("mode 644") && e.contains("chmod 600"), "{e}");
        let f = key_file("0011", 0o600);
        assert!(read(f.path()).unwrap_err().contains("at least 16"));
        let e = read(Path::new("/nonexistent/key")).unwrap_err();
        assert!(e.starts_with("--hmac-key-file /nonexistent/key: "), "{e}");
        assert!(!e.contains('\n'));
    }
}
