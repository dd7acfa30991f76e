//! What a sandboxed child does to itself between the clone and `execve`:
//! only system calls on data the host prepared (see
//! [`crate::process::spawner`]: the child shares the host's memory until
//! it execs, so it may not allocate, lock or panic).

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;

use libc::c_int;
use seccompiler::BpfProgram;

use super::landlock::{Rules, allow_proc};
use super::namespaces::Namespaces;

/// The sandbox as the child applies it: its namespaces, Landlock rules, a
/// seccomp program, hard resource limits and the cgroups to join, all
/// made by the host. Shared by every bash of a session (its jobs
/// included). The default confines nothing (the sandbox is built up from
/// it).
#[derive(Default)]
pub struct Confinement {
    /// The mount and PID namespaces the child is cloned into.
    pub(crate) namespaces: Option<Namespaces>,
    /// The Landlock rules, made into a ruleset for each child ([`Entry`]).
    pub(crate) landlock: Option<Rules>,
    /// The seccomp filter (socket families), loaded into the child.
    pub(crate) seccomp: Option<BpfProgram>,
    /// `(resource, value)`: set as both soft and hard limit.
    pub(crate) rlimits: Vec<(libc::__rlimit_resource_t, u64)>,
    /// Each cgroup's `cgroup.procs`, opened for writing: the child joins by
    /// writing `0` to it.
    pub(crate) cgroup_procs: Vec<OwnedFd>,
    /// The network namespace of a domain policy's proxy, entered first.
    pub(crate) netns: Option<OwnedFd>,
}

impl std::fmt::Debug for Confinement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confinement")
            .field("namespaces", &self.namespaces.is_some())
            .field("landlock", &self.landlock.is_some())
            .field("seccomp", &self.seccomp.is_some())
            .field("rlimits", &self.rlimits)
            .field("cgroups", &self.cgroup_procs.len())
            .field("netns", &self.netns.is_some())
            .finish()
    }
}

/// `CAP_SYS_RESOURCE`: lets a process raise a hard limit.
const CAP_SYS_RESOURCE: libc::c_ulong = 24;

/// What one child needs of its own, made by the host before the clone: a
/// fresh ruleset, room for the trees its namespaces copy, and room for the
/// numbers its sandbox's descriptors take once lifted ([`Confinement::lift`]).
pub struct Entry {
    ruleset: Option<OwnedFd>,
    trees: Vec<RawFd>,
    /// The ruleset's number in the child (filled in by the child).
    lifted_ruleset: RawFd,
    /// Each `cgroup.procs`'s number in the child (filled in by the child).
    lifted_procs: Vec<RawFd>,
}

impl Confinement {
    /// The flags the child is cloned with (its namespaces).
    pub(crate) fn clone_flags(&self) -> c_int {
        self.namespaces.as_ref().map_or(0, Namespaces::clone_flags)
    }

    /// What a child entering this sandbox needs of its own.
    pub(crate) fn entry(&self) -> std::io::Result<Entry> {
        let ruleset = match &self.landlock {
            Some(rules) => Some(rules.ruleset().map_err(|e| {
                std::io::Error::other(format!("cannot make the Landlock ruleset: {e}"))
            })?),
            None => None,
        };
        let trees = vec![-1; self.namespaces.as_ref().map_or(0, Namespaces::trees)];
        Ok(Entry {
            ruleset,
            trees,
            lifted_ruleset: -1,
            lifted_procs: vec![-1; self.cgroup_procs.len()],
        })
    }

    /// Copies the descriptors the child uses after its own are moved into
    /// place (the ruleset, each `cgroup.procs`) to numbers at `above` or
    /// higher, close-on-exec, which [`Confinement::enter`] then uses. The
    /// host opened them wherever numbers were free, which may be the very
    /// numbers the child is given (its protocol descriptors, say): a
    /// `dup2` onto one would make the child restrict itself with a pipe
    /// (refused) or "join" a cgroup by writing to a pipe (its limit never
    /// applied).
    ///
    /// # Safety
    /// In the cloned child only, before its descriptors are placed. Makes
    /// no allocation.
    pub(crate) unsafe fn lift(&self, entry: &mut Entry, above: RawFd) -> Result<(), c_int> {
        // SAFETY: fcntl on descriptors `self` and `entry` own.
        unsafe {
            let lift = |fd: RawFd| match libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, above) {
                n if n < 0 => Err(*libc::__errno_location()),
                n => Ok(n),
            };
            if let Some(ruleset) = &entry.ruleset {
                entry.lifted_ruleset = lift(ruleset.as_raw_fd())?;
            }
            for (slot, procs) in entry.lifted_procs.iter_mut().zip(&self.cgroup_procs) {
                *slot = lift(procs.as_raw_fd())?;
            }
        }
        Ok(())
    }

    /// Enters the network namespace of the session's proxy, if it has one:
    /// first, before the child's descriptors are moved into place (one of
    /// which may take the namespace's number).
    ///
    /// # Safety
    /// In the cloned child only, before `execve`. Makes no allocation.
    pub(crate) unsafe fn enter_network(&self) -> Result<(), c_int> {
        let Some(netns) = &self.netns else {
            return Ok(());
        };
        // SAFETY: a plain system call on a descriptor `self` owns.
        unsafe {
            if libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) < 0 {
                return Err(*libc::__errno_location());
            }
        }
        Ok(())
    }

    /// Sets the child's namespaces up (see [`Namespaces::enter`]): before
    /// it enters its working directory, which must be found on the mounts
    /// made here.
    ///
    /// # Safety
    /// In the cloned child only, before `execve`. Makes no allocation.
    pub(crate) unsafe fn enter_namespaces(&self, entry: &mut Entry) -> Result<(), c_int> {
        match &self.namespaces {
            // SAFETY: as this function's.
            Some(namespaces) => unsafe { namespaces.enter(&mut entry.trees) },
            None => Ok(()),
        }
    }

    /// The program a sandboxed child runs its command under: none on Linux,
    /// where the child confines itself.
    pub(crate) fn wrapper(&self) -> Option<(&Path, &[OsString])> {
        None
    }

    /// Applies the sandbox to the calling process, for good: joins the
    /// cgroups, sets the limits, drops `CAP_SYS_RESOURCE` from the bounding
    /// set (so a root bash cannot raise a hard limit back), sets
    /// `no_new_privs`, restricts itself with its Landlock ruleset (given
    /// first the rule of the `/proc` its namespaces mounted) and loads the
    /// seccomp filter. Returns the errno of what failed.
    ///
    /// # Safety
    /// In the cloned child only, before `execve`: it restricts the calling
    /// process irreversibly. Makes no allocation.
    pub(crate) unsafe fn enter(&self, entry: &Entry) -> Result<(), c_int> {
        // SAFETY: plain system calls on data owned by `self`.
        unsafe {
            let errno = || *libc::__errno_location();
            for &procs in &entry.lifted_procs {
                if libc::write(procs, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(errno());
                }
            }
            for &(resource, value) in &self.rlimits {
                let limit = libc::rlimit {
                    rlim_cur: value,
                    rlim_max: value,
                };
                if libc::setrlimit(resource, &limit) < 0 {
                    return Err(errno());
                }
            }
            // Fails without CAP_SETPCAP, where the capability cannot be
            // had anyway (not root, or already dropped).
            libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_RESOURCE, 0, 0, 0);
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 {
                return Err(errno());
            }
            if entry.ruleset.is_some() {
                let ruleset = entry.lifted_ruleset;
                if let Some(rules) = &self.landlock
                    && self.namespaces.is_some()
                {
                    allow_proc(ruleset, rules.read_access())?;
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0) < 0 {
                    return Err(errno());
                }
            }
            if let Some(program) = &self.seccomp {
                let fprog = libc::sock_fprog {
                    len: program.len() as u16,
                    filter: program.as_ptr().cast::<libc::sock_filter>().cast_mut(),
                };
                let prog: *const libc::sock_fprog = &fprog;
                if libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, prog) < 0 {
                    return Err(errno());
                }
            }
            Ok(())
        }
    }
}
