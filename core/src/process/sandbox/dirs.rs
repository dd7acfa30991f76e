//! A sandboxed session's own directory in conch's private directory: its
//! temp directory (bash's `TMPDIR`) and the directory of its pipes as FIFOs
//! (see [`crate::process::io::named_pipe`]). Made with the sandbox,
//! removed with it; the same on every platform.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use super::Sandbox;
use crate::error::{Error, Result};

#[derive(Debug)]
pub(crate) struct SessionDirs {
    /// `sandbox-<host pid>-<n>`: writable by the session, read by the host.
    pub dir: PathBuf,
    pub tmp: PathBuf,
    pub pipes: PathBuf,
    removed: bool,
}

impl SessionDirs {
    /// Makes the directories in `base`, after checking what of `policy`
    /// the platform does not decide.
    pub fn new(policy: &Sandbox, base: &Path) -> Result<SessionDirs> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        if let Some(n) = policy.limits.open_files
            && n < 64
        {
            return Err(Error::InvalidArgument(format!(
                "open_files must be >= 64 (the session's bash holds descriptors up to 63), got {n}"
            )));
        }
        let name = format!(
            "sandbox-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = base.join(&name);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(false)
            .create(&dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        let dirs = SessionDirs {
            tmp: dir.join("tmp"),
            pipes: dir.join("pipes"),
            dir,
            removed: false,
        };
        for sub in [&dirs.tmp, &dirs.pipes] {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(sub)
                .map_err(|e| Error::io(format!("cannot create {}", sub.display()), e))?;
        }
        Ok(dirs)
    }

    /// `env` with `TMPDIR` set to the temp directory.
    pub fn set_tmpdir(&self, env: &mut Vec<(String, String)>) {
        env.retain(|(k, _)| k != "TMPDIR");
        env.push(("TMPDIR".into(), self.tmp.to_string_lossy().into_owned()));
    }

    /// Removes the directory and all in it. Idempotent.
    pub fn remove(&mut self) {
        if !std::mem::replace(&mut self.removed, true) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Drop for SessionDirs {
    fn drop(&mut self) {
        self.remove();
    }
}
