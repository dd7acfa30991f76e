//! The process conch runs in, and what a fork of the host changes.
//!
//! A host may fork after it used conch (Python's `multiprocessing`, a
//! pre-forking server). The child has the parent's memory and none of its
//! threads: what conch holds for the parent (its sessions, its spawner
//! thread, its guard) is the parent's. Each holder notes the process it
//! belongs to ([`current`]) and, in a child, leaves the parent's alone. A
//! handler run as every fork returns in the child keeps [`current`] right
//! without a system call per ask (it is asked on every run) and closes the
//! child's copy of the one descriptor it must not keep
//! ([`close_in_child`]).
//!
//! conch's own children do not run it: the spawner clones them without
//! `fork` on Linux, and elsewhere they exec at once.

use std::os::fd::RawFd;
use std::sync::Once;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

static PID: AtomicU32 = AtomicU32::new(0);
static CLOSE_IN_CHILD: AtomicI32 = AtomicI32::new(-1);
static WATCH: Once = Once::new();

/// This process's id, read once and again by each forked child.
pub(crate) fn current() -> u32 {
    WATCH.call_once(|| {
        PID.store(std::process::id(), Ordering::SeqCst);
        // SAFETY: registers a handler that makes only async-signal-safe
        // calls (getpid, close).
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    });
    PID.load(Ordering::SeqCst)
}

/// Closes `fd` in every child forked from now on (-1: none): the host's
/// end of the lifeline, so that the guard reads the end of its input when
/// the host dies, whatever its forked children go on doing.
pub(crate) fn close_in_child(fd: RawFd) {
    current();
    CLOSE_IN_CHILD.store(fd, Ordering::SeqCst);
}

extern "C" fn in_child() {
    // SAFETY: getpid and close are async-signal-safe; the descriptor is
    // the child's copy of one nothing in the child uses.
    unsafe {
        PID.store(libc::getpid() as u32, Ordering::SeqCst);
        let fd = CLOSE_IN_CHILD.load(Ordering::SeqCst);
        if fd >= 0 {
            libc::close(fd);
        }
    }
}
