//! What a sandboxed child does to itself between the clone and `execve`:
//! only system calls on data the host prepared (see
//! [`crate::process::spawner`]: the child shares the host's memory until
//! it execs, so it may not allocate, lock or panic).

use std::os::fd::{AsRawFd, OwnedFd};

use libc::c_int;
use seccompiler::BpfProgram;

/// The sandbox as the child applies it: a Landlock ruleset, a seccomp
/// program, hard resource limits and the cgroups to join, all made by the
/// host. Shared by every bash of a session (its jobs included). The
/// default confines nothing (the sandbox is built up from it).
#[derive(Default)]
pub struct Confinement {
    /// A Landlock ruleset (its descriptor), to restrict the child with.
    pub(crate) landlock: Option<OwnedFd>,
    /// The seccomp filter (socket families), loaded into the child.
    pub(crate) seccomp: Option<BpfProgram>,
    /// `(resource, value)`: set as both soft and hard limit.
    pub(crate) rlimits: Vec<(libc::__rlimit_resource_t, u64)>,
    /// Each cgroup's `cgroup.procs`, opened for writing: the child joins by
    /// writing `0` to it.
    pub(crate) cgroup_procs: Vec<OwnedFd>,
}

impl std::fmt::Debug for Confinement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confinement")
            .field("landlock", &self.landlock.is_some())
            .field("seccomp", &self.seccomp.is_some())
            .field("rlimits", &self.rlimits)
            .field("cgroups", &self.cgroup_procs.len())
            .finish()
    }
}

/// `CAP_SYS_RESOURCE`: lets a process raise a hard limit.
const CAP_SYS_RESOURCE: libc::c_ulong = 24;

impl Confinement {
    /// Applies the sandbox to the calling process, for good: joins the
    /// cgroups, sets the limits, drops `CAP_SYS_RESOURCE` from the bounding
    /// set (so a root bash cannot raise a hard limit back), sets
    /// `no_new_privs`, restricts itself with the Landlock ruleset and
    /// loads the seccomp filter. Returns the errno of what failed.
    ///
    /// # Safety
    /// In the cloned child only, before `execve`: it restricts the calling
    /// process irreversibly. Makes no allocation.
    pub(crate) unsafe fn enter(&self) -> Result<(), c_int> {
        // SAFETY: plain system calls on data owned by `self`.
        unsafe {
            let errno = || *libc::__errno_location();
            for procs in &self.cgroup_procs {
                if libc::write(procs.as_raw_fd(), b"0".as_ptr().cast(), 1) != 1 {
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
            if let Some(ruleset) = &self.landlock
                && libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0) < 0
            {
                return Err(errno());
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
