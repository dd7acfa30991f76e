//! Linux: clone with `CLONE_VFORK`, pidfds, eventfd, `PR_SET_PDEATHSIG`, the
//! child subreaper and 1 MiB pipes (see [`super`]).

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};

use libc::{c_int, c_void};

use crate::process::tree::Pid;
use crate::{Error, Result};

/// Whether a child can be told to die (or freeze) with the host by the
/// kernel itself. Where it cannot, the guard takes every child's tree down.
pub(crate) const HOST_DEATH_SIGNAL: bool = true;

/// Whether a child can open the host's descriptors by path
/// (`/proc/<host pid>/fd/<n>`); where not, a session's pipes are FIFOs.
pub(crate) const PIPES_BY_PROC: bool = true;

/// Grows a pipe's buffer (best effort): fewer wake-ups under heavy output.
pub fn grow_pipe(fd: impl AsFd, bytes: usize) {
    // Failure (a size above the user's limit) only costs wake-ups.
    let _ = rustix::pipe::fcntl_setpipe_size(fd, bytes);
}

/// A pipe's buffer size, where the system tells it.
pub(crate) fn pipe_size(fd: impl AsFd) -> Option<usize> {
    rustix::pipe::fcntl_getpipe_size(fd).ok()
}

/// The flags of a socket write that must not raise SIGPIPE.
pub(crate) const SEND_FLAGS: rustix::net::SendFlags = rustix::net::SendFlags::NOSIGNAL;

/// Makes a socket's writes fail with `EPIPE` rather than raise SIGPIPE,
/// where that is a property of the socket ([`SEND_FLAGS`] does it here).
pub(crate) fn no_sigpipe(_socket: &OwnedFd) {}

/// An eventfd a cancel writes to, so a blocked `poll` returns at once.
pub(crate) struct Waker {
    fd: OwnedFd,
}

impl Waker {
    pub(crate) fn new() -> Result<Waker> {
        use rustix::event::{EventfdFlags, eventfd};
        let fd = eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC)
            .map_err(|e| Error::io("cannot create eventfd", e.into()))?;
        Ok(Waker { fd })
    }

    pub(crate) fn wake(&self) {
        // Cannot fail short of a counter at its maximum, which is as woken.
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
    }

    /// Clears pending wake-ups.
    pub(crate) fn reset(&self) {
        // EAGAIN when nothing is pending.
        let _ = rustix::io::read(&self.fd, &mut [0u8; 8]);
    }

    pub(crate) fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A pidfd for `pid` (Linux ≥ 5.3): readable once the process has exited,
/// whether or not something else holds its pipes.
///
/// Made through libc's `syscall()`, not rustix's raw system call: valgrind
/// 3.19 (Debian 12's) lacks `pidfd_open`, and the C tests run under it with
/// `tests/c/pidfd_shim.c` preloaded, which wraps `syscall()` to emulate it.
pub(crate) fn exit_fd(pid: Pid) -> Result<OwnedFd> {
    // SAFETY: plain syscall; returns a fresh descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    if fd < 0 {
        return Err(Error::io("pidfd_open failed", io::Error::last_os_error()));
    }
    // SAFETY: a fresh descriptor, owned from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// What starts children: a stack for the clone, mapped once with a guard
/// page below it, and reused (the spawner starts one child at a time, and
/// the clone returns only once the child is done with it).
pub(crate) struct Starter {
    base: *mut c_void,
}

const STACK_BYTES: usize = 256 << 10;
const GUARD_BYTES: usize = 4096;

impl Starter {
    pub(crate) fn new() -> io::Result<Starter> {
        // SAFETY: a fresh anonymous mapping, owned by the returned value.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                STACK_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            libc::mprotect(base, GUARD_BYTES, libc::PROT_NONE);
            Ok(Starter { base })
        }
    }

    /// Runs `main(arg)` in a new process that shares the host's memory
    /// until it execs (`CLONE_VM | CLONE_VFORK`), in the namespaces of
    /// `namespaces` (clone flags); returns its pid once it has exec'd or
    /// exited. The caller blocks every signal around this.
    ///
    /// # Safety
    /// `arg` must stay valid until this returns, and `main` may only make
    /// system calls on data prepared before.
    pub(crate) unsafe fn start(
        &self,
        main: extern "C" fn(*mut c_void) -> c_int,
        arg: *mut c_void,
        namespaces: c_int,
    ) -> c_int {
        let top = (self.base as usize + STACK_BYTES) as *mut c_void;
        // SAFETY: `top` is the top of a mapping owned by `self`; as this
        // function's for the rest.
        unsafe {
            libc::clone(
                main,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD | namespaces,
                arg,
            )
        }
    }
}

/// The calling thread's errno. In the child.
pub(crate) fn errno() -> c_int {
    // SAFETY: the thread's own errno slot.
    unsafe { *libc::__errno_location() }
}

/// Marks every descriptor from 3 up close-on-exec, even one another thread
/// of the host has just opened and not yet marked (`openpty` does so in two
/// steps). Linux 5.11; without it, conch's own descriptors are
/// close-on-exec anyway. In the child.
///
/// # Safety
/// In the child only.
pub(crate) unsafe fn close_inherited_on_exec(_inherited: &Inherited) {
    // SAFETY: a plain system call.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
    }
}

/// Asks the kernel to send `signal` to the child when the host's thread
/// that started it dies (0: nothing). In the child.
///
/// # Safety
/// In the child only.
pub(crate) unsafe fn on_host_death(signal: c_int) {
    // SAFETY: a plain system call on the calling process.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal) };
}

/// Makes the child a child subreaper: double-forked orphans come back to
/// it. In the child.
///
/// # Safety
/// In the child only.
pub(crate) unsafe fn become_subreaper() {
    // SAFETY: a plain system call on the calling process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
}

/// Makes stdin the controlling terminal of the child's new session. In the
/// child.
///
/// # Safety
/// In the child only.
pub(crate) unsafe fn take_terminal() -> c_int {
    // SAFETY: a plain system call on descriptor 0.
    unsafe { libc::ioctl(0, libc::TIOCSCTTY, 0) }
}

/// The highest signal number (real-time ones included).
pub(crate) fn last_signal() -> c_int {
    libc::SIGRTMAX()
}

/// Two signals no program sends by accident, for the session's unwinds:
/// the last two real-time ones.
pub(crate) fn unwind_signals() -> [c_int; 2] {
    [libc::SIGRTMAX(), libc::SIGRTMAX() - 1]
}

/// Nothing to list before the clone: `close_range` marks every inherited
/// descriptor in the child.
#[derive(Default)]
pub(crate) struct Inherited;

impl Inherited {
    pub(crate) fn list() -> Inherited {
        Inherited
    }
}
