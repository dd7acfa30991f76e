//! What a sandboxed child does to itself between the fork and `execve` on
//! macOS and the BSDs: its hard resource limits. The rest of the sandbox
//! (macOS's Seatbelt profile) is a program the child is run under, which
//! applies it and execs the command: Seatbelt cannot be entered safely
//! between a fork and an exec (it allocates).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use libc::c_int;

/// The sandbox as the child applies it. The default confines nothing.
#[derive(Debug, Default)]
pub struct Confinement {
    /// `(resource, value)`: set as both soft and hard limit.
    pub(crate) rlimits: Vec<(c_int, u64)>,
    /// The program the child runs its own under, with the arguments
    /// before it (`sandbox-exec -p <profile> -D… --`).
    pub(crate) wrapper: Option<(PathBuf, Vec<OsString>)>,
}

/// What one child needs of its own: nothing here.
pub struct Entry;

impl Confinement {
    /// No namespaces here.
    pub(crate) fn clone_flags(&self) -> c_int {
        0
    }

    pub(crate) fn entry(&self) -> std::io::Result<Entry> {
        Ok(Entry)
    }

    /// No network namespace here.
    ///
    /// # Safety
    /// In the child only.
    pub(crate) unsafe fn enter_network(&self) -> Result<(), c_int> {
        Ok(())
    }

    /// No descriptor of the sandbox's is used in the child here.
    ///
    /// # Safety
    /// In the child only.
    pub(crate) unsafe fn lift(&self, _entry: &mut Entry, _above: c_int) -> Result<(), c_int> {
        Ok(())
    }

    /// No namespaces here.
    ///
    /// # Safety
    /// In the child only.
    pub(crate) unsafe fn enter_namespaces(&self, _entry: &mut Entry) -> Result<(), c_int> {
        Ok(())
    }

    /// Sets the limits. Returns the errno of what failed.
    ///
    /// # Safety
    /// In the child only, before `execve`. Makes no allocation.
    pub(crate) unsafe fn enter(&self, _entry: &Entry) -> Result<(), c_int> {
        for &(resource, value) in &self.rlimits {
            let limit = libc::rlimit {
                rlim_cur: value as libc::rlim_t,
                rlim_max: value as libc::rlim_t,
            };
            // SAFETY: setrlimit reads a struct owned for the call.
            if unsafe { libc::setrlimit(resource, &limit) } < 0 {
                return Err(crate::process::sys::errno());
            }
        }
        Ok(())
    }

    /// The program a sandboxed child runs its command under, and the
    /// arguments that come before the command.
    pub(crate) fn wrapper(&self) -> Option<(&Path, &[OsString])> {
        self.wrapper
            .as_ref()
            .map(|(program, args)| (program.as_path(), args.as_slice()))
    }
}
