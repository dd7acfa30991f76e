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

/// The capabilities a sandboxed root keeps: what root needs for the files
/// and processes of its own session (owners, modes, signals, user ids,
/// low ports, `chroot`): the set container runtimes give a container, but
/// `CAP_MKNOD` and `CAP_NET_RAW`. Every other is dropped from the bounding
/// set, so no program the session runs has it: `CAP_DAC_READ_SEARCH` opens
/// any file of a mounted filesystem by its handle (`open_by_handle_at`),
/// past the namespaces' mounts and Landlock; `CAP_SYS_ADMIN`,
/// `CAP_SYS_TIME`, `CAP_SYS_MODULE`, `CAP_SYS_PTRACE`, `CAP_BPF`,
/// `CAP_PERFMON`, `CAP_NET_ADMIN`… act on the whole machine; and
/// `CAP_SYS_RESOURCE` would raise a hard limit back.
const KEPT_CAPABILITIES: [libc::c_ulong; 12] = [
    0,  // CAP_CHOWN
    1,  // CAP_DAC_OVERRIDE
    3,  // CAP_FOWNER
    4,  // CAP_FSETID
    5,  // CAP_KILL
    6,  // CAP_SETGID
    7,  // CAP_SETUID
    8,  // CAP_SETPCAP
    10, // CAP_NET_BIND_SERVICE
    18, // CAP_SYS_CHROOT
    29, // CAP_AUDIT_WRITE
    31, // CAP_SETFCAP
];

/// Past the highest capability any kernel has (63 fits the 64-bit sets).
const CAPABILITY_LIMIT: libc::c_ulong = 64;

/// `capget`'s and `capset`'s header (`_LINUX_CAPABILITY_VERSION_3`).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: c_int,
}

/// One half (32 capabilities) of `capget`'s and `capset`'s sets.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Leaves the calling process's capabilities such that what it execs has
/// [`KEPT_CAPABILITIES`] at most: drops the rest from the bounding set,
/// and empties the inheritable and ambient sets, which `execve` would
/// otherwise add past the bounding set. Failures are ignored: a process
/// without `CAP_SETPCAP` (not root, or a sandbox within a sandbox) has
/// none of these capabilities to give its programs.
///
/// # Safety
/// Plain system calls on the stack; in the cloned child before `execve`.
unsafe fn drop_capabilities() {
    // SAFETY: prctl and capget/capset on memory of this frame.
    unsafe {
        for cap in 0..CAPABILITY_LIMIT {
            if !KEPT_CAPABILITIES.contains(&cap) {
                libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
            }
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let mut header = CapHeader {
            version: 0x2008_0522,
            pid: 0,
        };
        let mut data = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) == 0 {
            for half in &mut data {
                half.inheritable = 0;
            }
            libc::syscall(libc::SYS_capset, &header, data.as_ptr());
        }
    }
}

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
    /// cgroups, sets the limits, drops every capability its programs do
    /// not need ([`KEPT_CAPABILITIES`]: a root bash can neither raise a
    /// hard limit back nor reach past the sandbox), sets
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
            drop_capabilities();
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
