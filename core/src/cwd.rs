//! Resolving and checking a working directory, with the texts a model reads
//! (`Working directory does not exist: <p>`, `Working directory is not a
//! directory: <p>`; docs/behaviour.md §4).

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The directory a session or command starts in: `dir` (a relative one
/// against the host's current directory), checked, or the host's current
/// directory. The host's is read only when needed: an absolute `dir`
/// works in a host whose current directory was removed.
pub fn start_dir(dir: Option<&Path>) -> Result<PathBuf> {
    let host =
        || std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e));
    match dir {
        Some(dir) if dir.is_absolute() => resolve_dir(Path::new("/"), dir),
        Some(dir) => resolve_dir(&host()?, dir),
        None => host(),
    }
}

/// Resolves `dir` against `base` and checks it is an existing directory.
pub fn resolve_dir(base: &Path, dir: &Path) -> Result<PathBuf> {
    let path = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        base.join(dir)
    };
    match std::fs::metadata(&path) {
        Ok(m) if m.is_dir() => Ok(path),
        Ok(_) => Err(Error::InvalidArgument(format!(
            "Working directory is not a directory: {}",
            path.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::InvalidArgument(format!(
            "Working directory does not exist: {}",
            path.display()
        ))),
        Err(e) => Err(Error::io(
            format!("Cannot access working directory {}", path.display()),
            e,
        )),
    }
}

/// `dir` if it is a directory, else the nearest directory above it (`/` at
/// worst): where a new bash of a session can start when a command removed
/// the session's directory.
pub fn nearest_dir(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.is_dir())
        .unwrap_or(Path::new("/"))
        .to_path_buf()
}

/// The path as UTF-8 text, or a clear error (bash gets it as text).
pub fn utf8_path(path: &Path) -> Result<&str> {
    path.to_str().ok_or_else(|| {
        Error::InvalidArgument(format!("path is not valid UTF-8: {}", path.display()))
    })
}
