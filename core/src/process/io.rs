//! The system-call layer of the engines: pipes, a waker, pidfds and poll.
//!
//! Runs are driven by one `poll(2)` on the caller's thread (no reader
//! threads, no channels): output, completion and cancellation all wake the
//! same call, so a run ends the moment its status arrives and chunk
//! callbacks run on the caller's thread, in order.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Instant;

use crate::{Error, Result};

/// A pipe with both ends close-on-exec: `(read, write)`.
pub fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`, which we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::io("cannot create pipe", io::Error::last_os_error()));
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A connected pair of stream sockets, close-on-exec. Used where conch
/// writes to a process that may die: `send(MSG_NOSIGNAL)` cannot raise
/// SIGPIPE in the host.
pub fn socketpair() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two descriptors into `fds`, which we then own.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(Error::io(
            "cannot create socket pair",
            io::Error::last_os_error(),
        ));
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Sets `O_NONBLOCK` on a descriptor.
pub fn set_nonblocking(fd: &OwnedFd) -> Result<()> {
    let raw = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own.
    let ok = unsafe {
        let flags = libc::fcntl(raw, libc::F_GETFL);
        flags >= 0 && libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(Error::io(
            "cannot set O_NONBLOCK",
            io::Error::last_os_error(),
        ))
    }
}

/// Grows a pipe's buffer (best effort): fewer wake-ups under heavy output.
pub fn grow_pipe(fd: &OwnedFd, bytes: i32) {
    // SAFETY: fcntl on a descriptor we own; failure is harmless.
    unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, bytes) };
}

/// Writes all of `data` to a socket without ever raising SIGPIPE.
pub fn send_all(fd: &OwnedFd, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        // SAFETY: `data` is a valid buffer for its length.
        let n = unsafe {
            libc::send(
                fd.as_raw_fd(),
                data.as_ptr().cast(),
                data.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        data = &data[n as usize..];
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
        // SAFETY: eventfd returns a fresh descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::io(
                "cannot create eventfd",
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: fresh descriptor, owned here.
        Ok(Waker {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Clears pending wake-ups.
    pub fn reset(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a valid u64; EAGAIN when nothing pending.
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A pidfd for `pid` (Linux ≥ 5.3): readable once the process has exited,
/// whether or not something else holds its pipes.
pub fn pidfd_open(pid: i32) -> Result<OwnedFd> {
    // SAFETY: plain syscall; returns a fresh descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        return Err(Error::io("pidfd_open failed", io::Error::last_os_error()));
    }
    // SAFETY: fresh descriptor, owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Polls `fds` for input until one is ready or `until` passes (forever when
/// `None`). Returns the number of ready descriptors (0 on timeout).
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
