//! A per-user private directory for conch's own files (rc snapshots, long
//! command texts): `$TMPDIR/conch-<uid>`, mode 0700, checked to be ours and
//! not a symlink, so another user cannot plant or read what bash sources.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::{Error, Result};

/// The directory, created on first use.
pub fn private_dir() -> Result<&'static PathBuf> {
    static DIR: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(create)
        .as_ref()
        .map_err(|e| Error::InvalidArgument(e.clone()))
}

fn create() -> std::result::Result<PathBuf, String> {
    let uid = rustix::process::getuid().as_raw();
    let dir = std::env::temp_dir().join(format!("conch-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(format!(
            "{} is not a private directory owned by uid {uid}",
            dir.display()
        ));
    }
    Ok(dir)
}

/// Writes `contents` to a new file `name` in the private dir with mode 0600.
pub fn write_private(name: &str, contents: &[u8]) -> Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = private_dir()?.join(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    f.write_all(contents)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
    Ok(path)
}

/// A file name in the private dir no other call of this process gets:
/// `<kind>-<pid>-<n>`.
pub fn unique_name(kind: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{kind}-{}-{n}", std::process::id())
}
