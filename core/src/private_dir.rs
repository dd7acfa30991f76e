//! A per-user private directory for conch's own files (rc snapshots, long
//! command texts): `$TMPDIR/conch-<uid>`, mode 0700, checked to be ours and
//! not a symlink, so another user cannot plant or read what bash sources.
//!
//! The files one host writes for a moment (a session's state on its way to
//! a job, a long command) are named `<kind>-<pid>-<n>` after the host. They
//! hold the session's variables, secrets included; a host killed while one
//! exists cannot remove it, so the first conch of a later host does
//! ([`sweep`]). So does it with the directories a host keeps here for as
//! long as it lives (a sandboxed session's, the process's own artifacts):
//! the host holds a lock in each ([`lock_own`]), and a directory whose lock
//! nobody holds was left by a host that is gone, killed or not.

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rustix::fs::FlockOperation;

use crate::{Error, Result};

/// The file in a directory of a host's own that the host holds locked
/// while it uses the directory: the lock goes with the host, killed or
/// not, so a later host knows the directory is abandoned ([`abandoned`]).
pub(crate) const LOCK: &str = ".lock";

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
    sweep(&dir);
    Ok(dir)
}

/// Removes the files of hosts that are gone: `<kind>-<pid>-<n>[.sh]` whose
/// pid names no process, and the directories no host holds the lock of (a
/// pid would not do for those: a host in another pid namespace sharing
/// this directory could still be using one). Best effort: what cannot be
/// read or removed stays.
fn sweep(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(host_pid) else {
            continue;
        };
        let gone = || {
            rustix::process::Pid::from_raw(pid).is_some_and(|pid| {
                rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH)
            })
        };
        match entry.file_type() {
            Ok(t) if t.is_dir() && abandoned(&entry.path()) => {
                let _ = std::fs::remove_dir_all(entry.path());
            }
            Ok(t) if t.is_file() && gone() => {
                let _ = std::fs::remove_file(entry.path());
            }
            _ => {}
        }
    }
}

/// Makes [`LOCK`] in `dir`, locked: under another name first, so that a
/// [`LOCK`] anyone sees is locked while its host lives. The file is
/// close-on-exec: no program the host starts holds the lock.
pub(crate) fn lock_own(dir: &Path) -> std::io::Result<File> {
    let new = dir.join(".lock-new");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&new)?;
    rustix::fs::flock(&file, FlockOperation::LockExclusive)?;
    std::fs::rename(&new, dir.join(LOCK))?;
    Ok(file)
}

/// Whether `dir` was left by a host that is gone: its [`LOCK`] can be
/// locked. A directory without one (being made, or made by an older
/// conch) is never taken for abandoned. Locks, unlike pids, mean the same
/// in every pid namespace that shares the directory.
pub(crate) fn abandoned(dir: &Path) -> bool {
    File::open(dir.join(LOCK)).is_ok_and(|lock| {
        rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive).is_ok()
    })
}

/// The host's pid in a name of [`unique_name`]'s form (`kind-pid-n`,
/// `.sh` allowed after it); `None` for any other name.
fn host_pid(name: &str) -> Option<i32> {
    let name = name.strip_suffix(".sh").unwrap_or(name);
    let mut parts = name.split('-');
    let (kind, pid, n) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let kind_ok = !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase());
    (kind_ok && digits(pid) && digits(n) && parts.next().is_none())
        .then(|| pid.parse().ok())
        .flatten()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_pid_reads_only_the_names_a_host_gives_its_files() {
        assert_eq!(host_pid("job-123-0"), Some(123));
        assert_eq!(host_pid("cmd-123-456.sh"), Some(123));
        assert_eq!(
            host_pid(&unique_name("state")),
            Some(std::process::id() as i32)
        );
        for other in [
            "snapshot-1f2e.sh",
            "job-12",
            "job-12-x",
            "Job-1-2",
            "-1-2",
            "job--2",
            "job-1-2-3",
        ] {
            assert_eq!(host_pid(other), None, "{other}");
        }
    }

    #[test]
    fn a_directory_is_abandoned_once_no_host_holds_its_lock() {
        let dir = std::env::temp_dir().join(format!("conch-dirs-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(!abandoned(&dir), "no lock yet: never taken for abandoned");
        let lock = lock_own(&dir).unwrap();
        assert!(!dir.join(".lock-new").exists());
        assert!(!abandoned(&dir), "held by this host");
        drop(lock);
        assert!(abandoned(&dir), "its host let go");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
