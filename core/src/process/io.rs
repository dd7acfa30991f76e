//! The system-call layer of the engines: pipes, a waker, pidfds and poll.
//!
//! Runs are driven by one `poll(2)` on the caller's thread (no reader
//! threads, no channels): output, completion and cancellation all wake the
//! same call, so a run ends the moment its status arrives and chunk
//! callbacks run on the caller's thread, in order.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rustix::io::Errno;

use super::tree::Pid;
use crate::{Error, Result};

/// A pipe with both ends close-on-exec: `(read, write)`.
pub fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let (read, write) = std::io::pipe().map_err(|e| Error::io("cannot create pipe", e))?;
    Ok((read.into(), write.into()))
}

/// Blocks SIGPIPE on the calling thread, for the thread's life: a write to
/// a pipe or socket whose reader is gone then fails with `EPIPE` instead of
/// killing the host (a C host keeps SIGPIPE's default; the signal is
/// directed at the writing thread, so blocking it there is enough).
pub fn block_sigpipe() {
    // SAFETY: a signal-mask call on this thread's own mask.
    unsafe {
        let mut pipe: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, std::ptr::null_mut());
    }
}

/// A connected pair of stream sockets, close-on-exec. Used where conch
/// writes to a process that may die: [`send_all`] cannot raise SIGPIPE in
/// the host.
pub fn socketpair() -> Result<(OwnedFd, OwnedFd)> {
    let (ours, theirs) =
        UnixStream::pair().map_err(|e| Error::io("cannot create socket pair", e))?;
    Ok((ours.into(), theirs.into()))
}

/// Sets `O_NONBLOCK` on a descriptor (one `FIONBIO`, no read-modify-write
/// of the flags).
pub fn set_nonblocking(fd: impl AsFd) -> Result<()> {
    rustix::io::ioctl_fionbio(fd, true).map_err(|e| Error::io("cannot set O_NONBLOCK", e.into()))
}

/// A pipe for a command's output: `(read, write)`, the read end
/// non-blocking and grown to 1 MiB (fewer wake-ups under heavy output).
pub fn output_pipe() -> Result<(OwnedFd, OwnedFd)> {
    let (read, write) = pipe()?;
    grow_pipe(&read, 1 << 20);
    set_nonblocking(&read)?;
    Ok((read, write))
}

/// A pipe whose ends a process can open by path where `/proc/<host
/// pid>/fd/<n>` is out of its reach (a sandboxed bash may not look into the
/// host's `/proc` entries): a FIFO in `dir`, named after the number of our
/// read end, as `/proc/<host pid>/fd` names it. `(read, write)`, the read
/// end non-blocking and grown to 1 MiB, both close-on-exec. A later one
/// that gets the same number takes the name over.
pub fn named_pipe(dir: &Path) -> Result<(OwnedFd, OwnedFd)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let new = dir.join(format!(".new-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
    let failed = |e| Error::io(format!("cannot make a FIFO in {}", dir.display()), e);
    let path = CString::new(new.as_os_str().as_bytes()).map_err(|e| failed(e.into()))?;
    // SAFETY: mkfifo reads a NUL-terminated path, owned for the call.
    if unsafe { libc::mkfifo(path.as_ptr(), 0o600) } != 0 {
        return Err(failed(io::Error::last_os_error()));
    }
    let ends = || -> io::Result<(File, File)> {
        // A FIFO opened for reading without O_NONBLOCK waits for a writer.
        let read = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&new)?;
        // With a reader there, opening for writing does not wait.
        let write = OpenOptions::new().write(true).open(&new)?;
        std::fs::rename(&new, dir.join(read.as_raw_fd().to_string()))?;
        Ok((read, write))
    };
    let (read, write) = ends().map_err(|e| {
        let _ = std::fs::remove_file(&new);
        failed(e)
    })?;
    grow_pipe(&read, 1 << 20);
    Ok((read.into(), write.into()))
}

/// Grows a pipe's buffer (best effort): fewer wake-ups under heavy output.
pub fn grow_pipe(fd: impl AsFd, bytes: usize) {
    // Failure (a size above the user's limit) only costs wake-ups.
    let _ = rustix::pipe::fcntl_setpipe_size(fd, bytes);
}

/// Writes all of `data` to a socket with `MSG_NOSIGNAL`: a peer that died
/// gives `EPIPE`, never SIGPIPE in the host.
pub fn send_all(fd: impl AsFd, mut data: &[u8]) -> io::Result<()> {
    let fd = fd.as_fd();
    while !data.is_empty() {
        match rustix::net::send(fd, data, rustix::net::SendFlags::NOSIGNAL) {
            Ok(n) => data = &data[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Outcome of a non-blocking read.
pub enum Read {
    Data(usize),
    WouldBlock,
    Eof,
}

/// One `read(2)` into `buf`, mapping EAGAIN and EOF.
///
/// Takes the raw descriptor of a [`poll`] slot, as the event loops keep
/// them (a slot is switched off by setting its descriptor to -1), so this
/// stays a `libc` call: a safe wrapper would need a borrowed descriptor.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<Read> {
    loop {
        // SAFETY: `buf` is a valid writable buffer for its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            return Ok(Read::Data(n as usize));
        }
        if n == 0 {
            return Ok(Read::Eof);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(Read::WouldBlock),
            _ => return Err(e),
        }
    }
}

/// An eventfd that a [`crate::CancelToken`] waker writes to, so a blocked
/// `poll` returns at once on cancellation.
pub struct Waker {
    fd: OwnedFd,
}

impl Waker {
    pub fn new() -> Result<Waker> {
        use rustix::event::{EventfdFlags, eventfd};
        let fd = eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC)
            .map_err(|e| Error::io("cannot create eventfd", e.into()))?;
        Ok(Waker { fd })
    }

    pub fn wake(&self) {
        // Cannot fail short of a counter at its maximum, which is as woken.
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
    }

    /// Clears pending wake-ups.
    pub fn reset(&self) {
        // EAGAIN when nothing is pending.
        let _ = rustix::io::read(&self.fd, &mut [0u8; 8]);
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A pidfd for `pid` (Linux ≥ 5.3): readable once the process has exited,
/// whether or not something else holds its pipes.
///
/// Made through libc's `syscall()`, not rustix's raw system call: valgrind
/// 3.19 (Debian 12's) lacks `pidfd_open`, and the C tests run under it with
/// `tests/c/pidfd_shim.c` preloaded, which wraps `syscall()` to emulate it.
pub fn pidfd_open(pid: Pid) -> Result<OwnedFd> {
    // SAFETY: plain syscall; returns a fresh descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    if fd < 0 {
        return Err(Error::io("pidfd_open failed", io::Error::last_os_error()));
    }
    // SAFETY: a fresh descriptor, owned from here on.
    Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
}

/// Polls `fds` for input until one is ready or `until` passes (forever when
/// `None`). Returns the number of ready descriptors (0 on timeout).
///
/// The set is plain `pollfd` entries, not rustix's `PollFd`: the event
/// loops keep fixed arrays and switch a slot off by setting its descriptor
/// to -1 (which `poll(2)` skips), and a `PollFd` always holds a borrowed,
/// live descriptor.
pub fn poll(fds: &mut [libc::pollfd], until: Option<Instant>) -> Result<usize> {
    loop {
        let timeout = match until {
            None => -1,
            Some(t) => {
                let left = t.saturating_duration_since(Instant::now());
                // Round up so we never wake just before the deadline and spin.
                left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
            }
        };
        // SAFETY: `fds` is a valid slice of pollfd structs.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(Error::io("poll failed", e));
        }
    }
}

/// A pollfd entry asking for input readiness.
pub fn pollin(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// Whether a polled descriptor has input, hang-up or error to handle.
pub fn ready(p: &libc::pollfd) -> bool {
    p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0
}
