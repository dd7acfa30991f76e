//! The system-call layer of the engines: pipes, sockets and poll (the
//! waker and the exit descriptors are the platform's: [`super::sys`]).
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

use super::sys;
use crate::{Error, Result};

pub use super::sys::grow_pipe;
pub(crate) use super::sys::{Waker, exit_fd, pipe_size};

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
    let (ours, theirs) = (ours.into(), theirs.into());
    sys::no_sigpipe(&ours);
    sys::no_sigpipe(&theirs);
    Ok((ours, theirs))
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

/// A directory for a session's FIFOs where bash cannot open the host's
/// pipes through `/proc/<host pid>/fd` (no `/proc`: macOS, the BSDs): made
/// in conch's private directory, removed when dropped.
#[derive(Debug)]
pub struct FifoDir(std::path::PathBuf);

impl FifoDir {
    /// One for a session, or `None` where `/proc` serves.
    pub fn for_session() -> Result<Option<FifoDir>> {
        use std::os::unix::fs::DirBuilderExt;
        if sys::PIPES_BY_PROC {
            return Ok(None);
        }
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = crate::private_dir::private_dir()?.join(format!(
            "pipes-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        Ok(Some(FifoDir(dir)))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for FifoDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes all of `data` to a socket of ours ([`socketpair`]): a peer that
/// died gives `EPIPE`, never SIGPIPE in the host.
pub fn send_all(fd: impl AsFd, mut data: &[u8]) -> io::Result<()> {
    let fd = fd.as_fd();
    while !data.is_empty() {
        match rustix::net::send(fd, data, sys::SEND_FLAGS) {
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
