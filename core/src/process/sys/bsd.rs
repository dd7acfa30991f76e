//! macOS and the BSDs: `fork`, exit notification through kqueue, a
//! self-pipe waker, `SO_NOSIGPIPE`, and no parent-death signal (the host's
//! guard takes every tree down instead; see [`super`]). Type-checked on
//! Linux for aarch64/x86_64 macOS and x86_64 FreeBSD; run only there.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{LazyLock, Mutex};

use libc::{c_int, c_void};

use crate::process::io::{pipe, set_nonblocking};
use crate::process::tree::Pid;
use crate::sync::lock;
use crate::{Error, Result};

/// No parent-death signal here: the guard takes every child's tree down.
pub(crate) const HOST_DEATH_SIGNAL: bool = false;

/// No `/proc` here: a session's pipes are FIFOs.
pub(crate) const PIPES_BY_PROC: bool = false;

/// Pipes grow by themselves (to 64 KiB on macOS): nothing to ask.
pub fn grow_pipe(_fd: impl AsFd, _bytes: usize) {}

/// Not told by these systems.
pub(crate) fn pipe_size(_fd: impl AsFd) -> Option<usize> {
    None
}

/// No flag needed: sockets are made with `SO_NOSIGPIPE` ([`no_sigpipe`]).
pub(crate) const SEND_FLAGS: rustix::net::SendFlags = rustix::net::SendFlags::empty();

/// Makes a socket's writes fail with `EPIPE` rather than raise SIGPIPE.
pub(crate) fn no_sigpipe(socket: &OwnedFd) {
    let on: c_int = 1;
    // SAFETY: setsockopt reads an int owned for the call.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_NOSIGPIPE,
            (&on as *const c_int).cast(),
            std::mem::size_of::<c_int>() as libc::socklen_t,
        );
    }
}

/// A self-pipe a cancel writes to, so a blocked `poll` returns at once.
pub(crate) struct Waker {
    read: OwnedFd,
    write: OwnedFd,
}

impl Waker {
    pub(crate) fn new() -> Result<Waker> {
        let (read, write) = pipe()?;
        set_nonblocking(&read)?;
        set_nonblocking(&write)?;
        Ok(Waker { read, write })
    }

    pub(crate) fn wake(&self) {
        // A full pipe (EAGAIN) is as woken.
        let _ = rustix::io::write(&self.write, &[1]);
    }

    /// Clears pending wake-ups.
    pub(crate) fn reset(&self) {
        let mut buf = [0u8; 64];
        while matches!(rustix::io::read(&self.read, &mut buf), Ok(n) if n > 0) {}
    }

    pub(crate) fn raw(&self) -> RawFd {
        self.read.as_raw_fd()
    }
}

/// The kqueue thread that sees children exit: one kqueue for the host, a
/// `NOTE_EXIT` filter per child, and for each child the write end of a
/// pipe that it closes at the exit. The read end is what [`exit_fd`] hands
/// out, so every poll loop waits on it as on a Linux pidfd. (A kqueue
/// descriptor itself is not reliably pollable with `poll(2)` on macOS.)
struct Notifier {
    kqueue: OwnedFd,
    /// The write ends still open, by pid: whoever takes one out closes it.
    open: Mutex<HashMap<Pid, OwnedFd>>,
}

static NOTIFIER: LazyLock<io::Result<&'static Notifier>> = LazyLock::new(|| {
    // SAFETY: kqueue returns a fresh descriptor or -1.
    let kq = unsafe { libc::kqueue() };
    if kq < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor, owned from here on.
    let kqueue = unsafe { OwnedFd::from_raw_fd(kq) };
    rustix::io::fcntl_setfd(&kqueue, rustix::io::FdFlags::CLOEXEC)?;
    let notifier: &'static Notifier = Box::leak(Box::new(Notifier {
        kqueue,
        open: Mutex::default(),
    }));
    std::thread::Builder::new()
        .name("conch-exits".into())
        .stack_size(64 << 10)
        .spawn(move || notifier.run())?;
    Ok(notifier)
});

impl Notifier {
    fn run(&self) {
        loop {
            // SAFETY: an all-zero kevent is a valid value of the C struct.
            let mut events: [libc::kevent; 16] = unsafe { std::mem::zeroed() };
            // SAFETY: kevent writes at most `events.len()` entries.
            let n = unsafe {
                libc::kevent(
                    self.kqueue.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    events.as_mut_ptr(),
                    events.len() as c_int,
                    std::ptr::null(),
                )
            };
            for event in events.iter().take(n.max(0) as usize) {
                self.exited(event.ident as Pid);
            }
        }
    }

    /// Closes `pid`'s write end: its reader sees end of file.
    fn exited(&self, pid: Pid) {
        lock(&self.open).remove(&pid);
    }

    fn watch(&self, pid: Pid) -> Result<OwnedFd> {
        let (read, write) = pipe()?;
        // Before the filter: the thread may see the exit at once.
        lock(&self.open).insert(pid, write);
        // SAFETY: an all-zero kevent is a valid value of the C struct.
        let mut change: libc::kevent = unsafe { std::mem::zeroed() };
        change.ident = pid as libc::uintptr_t;
        change.filter = libc::EVFILT_PROC;
        change.flags = libc::EV_ADD | libc::EV_ONESHOT;
        change.fflags = libc::NOTE_EXIT;
        // SAFETY: one change read from a local, no event written back.
        let added = unsafe {
            libc::kevent(
                self.kqueue.as_raw_fd(),
                &change,
                1,
                std::ptr::null_mut(),
                0,
                std::ptr::null(),
            )
        };
        // A process that exited before the filter was added (ESRCH), or
        // between the two: its exit will not be reported, so report it now.
        if added < 0 || has_exited(pid) {
            self.exited(pid);
        }
        Ok(read)
    }
}

/// Whether `pid`, a child of ours, has exited (without reaping it).
fn has_exited(pid: Pid) -> bool {
    // SAFETY: waitid writes a siginfo owned for the call; WNOWAIT leaves
    // the child to its reaper.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let rc = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        rc < 0 || info.si_pid() != 0
    }
}

/// A descriptor readable (at end of file) once `pid`, a child of ours, has
/// exited, whether or not something else holds its pipes.
pub(crate) fn exit_fd(pid: Pid) -> Result<OwnedFd> {
    match &*NOTIFIER {
        Ok(notifier) => notifier.watch(pid),
        Err(e) => Err(Error::io(
            "cannot start the exit notifier",
            io::Error::new(e.kind(), e.to_string()),
        )),
    }
}

/// What starts children: `fork`. The child only makes system calls on data
/// prepared before (a multi-threaded host's other threads are not copied,
/// and may have held any lock at the fork).
pub(crate) struct Starter;

impl Starter {
    pub(crate) fn new() -> io::Result<Starter> {
        Ok(Starter)
    }

    /// Runs `main(arg)` in a forked child; returns its pid (or -1). There
    /// are no namespaces here: `namespaces` is always 0. The caller blocks
    /// every signal around this.
    ///
    /// # Safety
    /// `main` may only make system calls on data prepared before.
    pub(crate) unsafe fn start(
        &self,
        main: extern "C" fn(*mut c_void) -> c_int,
        arg: *mut c_void,
        namespaces: c_int,
    ) -> c_int {
        debug_assert_eq!(namespaces, 0);
        // SAFETY: as this function's.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                libc::_exit(main(arg));
            }
            pid
        }
    }
}

/// The calling thread's errno. In the child.
pub(crate) fn errno() -> c_int {
    // SAFETY: the thread's own errno slot.
    unsafe { *libc::__error() }
}

/// The descriptors the host has open, listed before the fork (macOS has no
/// `close_range`): the child marks each close-on-exec. One opened by
/// another thread between the list and the fork without close-on-exec (none
/// of conch's is) would reach the child.
#[derive(Default)]
pub(crate) struct Inherited {
    #[cfg(target_vendor = "apple")]
    fds: Vec<c_int>,
}

impl Inherited {
    /// Lists the host's descriptors now (in the spawner, before the fork).
    pub(crate) fn list() -> Inherited {
        #[cfg(target_vendor = "apple")]
        {
            let pid = std::process::id() as c_int;
            let size = std::mem::size_of::<libc::proc_fdinfo>();
            // SAFETY: a null buffer asks for the size needed.
            let bytes = unsafe {
                libc::proc_pidinfo(pid, libc::PROC_PIDLISTFDS, 0, std::ptr::null_mut(), 0)
            };
            // Room for a few opened meanwhile.
            let room = bytes.max(0) as usize / size + 16;
            // SAFETY: an all-zero proc_fdinfo is a valid value of the C struct.
            let mut infos: Vec<libc::proc_fdinfo> = vec![unsafe { std::mem::zeroed() }; room];
            // SAFETY: proc_pidinfo writes at most the buffer's size.
            let bytes = unsafe {
                libc::proc_pidinfo(
                    pid,
                    libc::PROC_PIDLISTFDS,
                    0,
                    infos.as_mut_ptr().cast(),
                    (room * size) as c_int,
                )
            };
            infos.truncate(bytes.max(0) as usize / size);
            Inherited {
                fds: infos
                    .iter()
                    .map(|i| i.proc_fd)
                    .filter(|&fd| fd > 2)
                    .collect(),
            }
        }
        #[cfg(not(target_vendor = "apple"))]
        Inherited {}
    }
}

/// Marks every inherited descriptor from 3 up close-on-exec. In the child.
///
/// # Safety
/// In the child only.
pub(crate) unsafe fn close_inherited_on_exec(inherited: &Inherited) {
    // SAFETY: plain system calls on the child's own descriptors.
    unsafe {
        #[cfg(target_vendor = "apple")]
        for &fd in &inherited.fds {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        #[cfg(not(target_vendor = "apple"))]
        {
            let _ = inherited;
            libc::close_range(3, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC as c_int);
        }
    }
}

/// No parent-death signal here ([`HOST_DEATH_SIGNAL`]). In the child.
///
/// # Safety
/// In the child only.
pub(crate) unsafe fn on_host_death(_signal: c_int) {}

/// FreeBSD: the child becomes a reaper (`PROC_REAP_ACQUIRE`), so orphans
/// come back to it. macOS has no such thing: its orphans go to launchd and
/// are found by session and process group. In the child.
///
/// # Safety
/// In the child only.
pub(crate) unsafe fn become_subreaper() {
    #[cfg(target_os = "freebsd")]
    // SAFETY: a plain system call on the calling process.
    unsafe {
        libc::procctl(
            libc::P_PID,
            libc::getpid() as libc::id_t,
            libc::PROC_REAP_ACQUIRE,
            std::ptr::null_mut(),
        );
    }
}

/// Makes stdin the controlling terminal of the child's new session. In the
/// child.
///
/// # Safety
/// In the child only.
pub(crate) unsafe fn take_terminal() -> c_int {
    // SAFETY: a plain system call on descriptor 0.
    unsafe { libc::ioctl(0, libc::TIOCSCTTY as _, 0) }
}

/// Above the highest signal of any of these systems (`sigaction` refuses
/// the numbers that do not exist).
pub(crate) fn last_signal() -> c_int {
    128
}

/// Two signals no program sends by accident, for the session's unwinds:
/// there are no real-time signals on macOS; SIGINFO comes only from a
/// terminal's ^T (a session's bash has no terminal) and SIGEMT from no
/// hardware conch runs on.
pub(crate) fn unwind_signals() -> [c_int; 2] {
    [libc::SIGINFO, libc::SIGEMT]
}
