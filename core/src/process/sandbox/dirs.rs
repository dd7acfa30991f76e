//! A sandboxed session's own directory in conch's private directory: its
//! temp directory (bash's `TMPDIR`) and the directory of its pipes as FIFOs
//! (see [`crate::process::io::named_pipe`]). Made with the sandbox,
//! removed with it; the same on every platform. Its host holds a lock in
//! it ([`crate::private_dir::lock_own`]), so that the directory of a host
//! killed before it could remove it is removed by a later host
//! (`private_dir`'s sweep).

use std::fs::File;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::Sandbox;
use crate::error::{Error, Result};
use crate::private_dir::{LOCK, lock_own};
use crate::process::env::Env;

#[derive(Debug)]
pub(crate) struct SessionDirs {
    /// `sandbox-<host pid>-<n>`: writable by the session, read by the host.
    pub dir: PathBuf,
    pub tmp: PathBuf,
    pub pipes: PathBuf,
    /// [`LOCK`], locked (never inherited: close-on-exec).
    _lock: File,
    removed: bool,
}

impl SessionDirs {
    /// Makes the directories in `base`, after checking what of `policy`
    /// the platform does not decide.
    pub fn new(policy: &Sandbox, base: &Path) -> Result<SessionDirs> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        if let Some(n) = policy.limits.open_files
            && n < 64
        {
            return Err(Error::InvalidArgument(format!(
                "open_files must be >= 64 (the session's bash holds descriptors up to 63), got {n}"
            )));
        }
        let dir = create_own(base, &NEXT)?;
        let lock = lock_own(&dir).map_err(|e| {
            let _ = std::fs::remove_dir_all(&dir);
            Error::io(format!("cannot lock {}", dir.join(LOCK).display()), e)
        })?;
        let dirs = SessionDirs {
            tmp: dir.join("tmp"),
            pipes: dir.join("pipes"),
            dir,
            _lock: lock,
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
    pub fn set_tmpdir(&self, env: &mut Env) {
        env.retain(|(k, _)| k != "TMPDIR");
        env.push(("TMPDIR".into(), self.tmp.clone().into_os_string()));
    }

    /// Removes the directory and all in it. Idempotent.
    pub fn remove(&mut self) {
        if !std::mem::replace(&mut self.removed, true) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Makes `sandbox-<pid>-<n>` in `base` (mode 0700), `n` from `next`. A
/// name taken already was left by a process that had this pid before
/// (killed, it removed nothing): the next number is free. Such a directory
/// is never removed here: it could be a live host's, in another pid
/// namespace that shares `base`.
fn create_own(base: &Path, next: &AtomicU64) -> Result<PathBuf> {
    let mut taken = 0;
    loop {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("sandbox-{}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && taken < 1000 => taken += 1,
            Err(e) => return Err(Error::io(format!("cannot create {}", dir.display()), e)),
        }
    }
}

impl Drop for SessionDirs {
    fn drop(&mut self) {
        self.remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_left_by_an_earlier_process_with_this_pid_are_passed_over() {
        let base = std::env::temp_dir().join(format!("conch-dirs-test-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let left = |n: u64| base.join(format!("sandbox-{}-{n}", std::process::id()));
        for n in 0..3 {
            std::fs::create_dir_all(left(n).join("tmp")).unwrap();
        }
        let next = AtomicU64::new(0);
        assert_eq!(create_own(&base, &next).unwrap(), left(3));
        // What was there is left as it was.
        assert!((0..3).all(|n| left(n).join("tmp").is_dir()));
        assert_eq!(create_own(&base, &next).unwrap(), left(4));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
