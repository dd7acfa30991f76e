//! A session's own cgroups, for the limits that bind the session as a
//! whole: `pids` (processes at once) and `memory`. Made below the host's
//! own cgroup (so an outer limit still binds), in the v1 hierarchy of the
//! controller where one is mounted, else in the v2 tree; joined by the
//! child before it runs anything; emptied (killed) and removed when the
//! session closes.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A cgroup made for one session.
#[derive(Debug)]
pub(crate) struct Cgroup {
    pub dir: PathBuf,
}

/// Where `controller` is mounted and the host's cgroup in it: `(dir,
/// v2)`, `dir` being the host's own cgroup.
fn own_cgroup(controller: &str) -> Option<(PathBuf, bool)> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = |v1: bool| {
        cgroups.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
            let found = if v1 {
                names.split(',').any(|n| n == controller)
            } else {
                names.is_empty()
            };
            found.then(|| path.trim_start_matches('/').to_string())
        })
    };
    let mut v2_mount = None;
    for line in mountinfo.lines() {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
        let (left, right) = line.split_once(" - ")?;
        let mount = left.split(' ').nth(4)?;
        let mut right = right.split(' ');
        let fstype = right.next()?;
        let super_options = right.nth(1).unwrap_or("");
        if fstype == "cgroup" && super_options.split(',').any(|o| o == controller) {
            return Some((Path::new(mount).join(own(true)?), false));
        }
        if fstype == "cgroup2" && v2_mount.is_none() {
            v2_mount = Some(mount.to_string());
        }
    }
    Some((Path::new(&v2_mount?).join(own(false)?), true))
}

impl Cgroup {
    /// Makes `name` below the host's cgroup of `controller` and sets
    /// `limit` (`(v1 file, v2 file, value)`); returns it and its
    /// `cgroup.procs` opened for writing. The error says what is missing.
    pub fn new(
        controller: &str,
        name: &str,
        (v1_file, v2_file, value): (&str, &str, u64),
    ) -> Result<(Cgroup, OwnedFd), String> {
        let missing = |why: String| format!("a cgroup with the {controller} controller ({why})");
        let (parent, v2) =
            own_cgroup(controller).ok_or_else(|| missing("none is mounted".into()))?;
        if v2 {
            // The controller must be handed down to the new cgroup.
            let control = parent.join("cgroup.subtree_control");
            let enabled = std::fs::read_to_string(&control).unwrap_or_default();
            if !enabled.split_whitespace().any(|c| c == controller) {
                std::fs::write(&control, format!("+{controller}")).map_err(|e| {
                    missing(format!("cannot enable it in {}: {e}", parent.display()))
                })?;
            }
        }
        let dir = parent.join(name);
        std::fs::create_dir(&dir)
            .map_err(|e| missing(format!("cannot create {}: {e}", dir.display())))?;
        let cgroup = Cgroup { dir };
        let file = cgroup.dir.join(if v2 { v2_file } else { v1_file });
        OpenOptions::new()
            .write(true)
            .open(&file)
            .and_then(|mut f| f.write_all(value.to_string().as_bytes()))
            .map_err(|e| missing(format!("cannot write {}: {e}", file.display())))?;
        let procs = OpenOptions::new()
            .write(true)
            .open(cgroup.dir.join("cgroup.procs"))
            .map_err(|e| missing(format!("cannot open its cgroup.procs: {e}")))?;
        Ok((cgroup, procs.into()))
    }

    /// Kills what is left in the cgroup and removes it (bounded: a
    /// process stuck in the kernel may outlast it; the directory then
    /// stays).
    pub fn remove(&self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            if let Ok(procs) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
                for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    // SAFETY: a signal to a process of this session's cgroup.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(_) => return,
            }
        }
    }
}

/// The `pids` cgroup of a session, read while a run goes on to tell when
/// the session's forks are being refused (docs/behaviour.md, section 16).
/// Its files are opened for each read: it holds no descriptor.
#[derive(Debug)]
pub(crate) struct PidsCgroup {
    dir: PathBuf,
    limit: u64,
}

impl PidsCgroup {
    /// The `pids` cgroup [`Cgroup::new`] made as `name` below the host's
    /// (a session's cgroups are named after its sandbox directory), whose
    /// `pids.max` is `limit`; `None` if there is none.
    pub fn of_session(name: &str, limit: u64) -> Option<PidsCgroup> {
        let (parent, _) = own_cgroup("pids")?;
        let dir = parent.join(name);
        dir.join("pids.events")
            .is_file()
            .then_some(PidsCgroup { dir, limit })
    }

    /// The limit (`pids.max`).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// How many forks the limit refused so far (`max` in `pids.events`).
    pub fn refused(&self) -> Option<u64> {
        let events = std::fs::read_to_string(self.dir.join("pids.events")).ok()?;
        events
            .lines()
            .find_map(|line| line.strip_prefix("max ")?.trim().parse().ok())
    }

    /// Whether the session holds as many processes as the limit allows.
    pub fn at_limit(&self) -> bool {
        std::fs::read_to_string(self.dir.join("pids.current"))
            .ok()
            .and_then(|n| n.trim().parse::<u64>().ok())
            .is_some_and(|n| n >= self.limit)
    }
}
