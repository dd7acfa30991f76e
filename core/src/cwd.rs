//! Resolving and checking a working directory, with the texts a model reads
//! (`Working directory does not exist: <p>`, `Working directory is not a
//! directory: <p>`; docs/behaviour.md §4).

use std::path::{Path, PathBuf};

use crate::{Error, Result};

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

/// The path as UTF-8 text, or a clear error (bash gets it as text).
pub fn utf8_path(path: &Path) -> Result<&str> {
    path.to_str().ok_or_else(|| {
        Error::InvalidArgument(format!("path is not valid UTF-8: {}", path.display()))
    })
}
