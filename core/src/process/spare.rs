//! A session's spare bash: a copy of its bash as it was before its first
//! command, which takes the next bash's place when the session is reset.
//! A reset is then a fork made ahead of time, not a bash's start (an
//! `execve`, bash's own start-up, the start-up text and the loop builtin
//! loaded again): a pool that recycles a session per episode pays for the
//! fork only, and not while the next episode waits.
//!
//! The loop builtin forks it (`fork_spare` in `builtin/conch_loop.c`) once
//! its bash is ready and before it reads a command, as a child of the host
//! (`CLONE_PARENT`) rather than of that bash, so the reset that kills the
//! bash's tree leaves it. It has a session of its own, none of the
//! session's descriptors, dies with the host, and waits on the spare
//! channel (a socket pair whose other end the host keeps), where both the
//! bash that forked it and the spare itself write its pid as they go on
//! from the fork: a spare killed before it ran is still known, and
//! collected, and so is one whose bash was killed before its write (a
//! reset or close right after that bash was ready), which would otherwise
//! hold the channel open with nothing on it. The host reads one copy.
//! [`SpareChannel::take_over`] sends it the start directory and, as
//! `SCM_RIGHTS`, a new protocol socket, status pipe and output pipe, and the
//! channel of the spare it forks in turn: it becomes the session's bash,
//! frozen by the host's death and in the guard's care
//! ([`super::lifeline`]) as a bash the spawner starts. End-of-file on the
//! channel ends it; [`SpareChannel::discard`] kills and collects it.
//!
//! Only the builtin forks spares (the eval loop has no way to), on Linux,
//! where a bash is not the first process of a pid namespace; elsewhere the
//! host reads end-of-file and starts a bash as before.

use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};

use super::child::Process;
use super::io::{Read, exit_fd, poll, pollin, read, set_nonblocking, socketpair};
use super::supervised::{Supervised, session_pipes};
use super::tree::Pid;
use crate::Result;

/// How long the pid of a spare may take to come once the bash that forked
/// it is gone (that bash writes it right after the fork, the spare as it
/// starts).
const PID_WAIT: Duration = Duration::from_secs(5);

/// The longest start directory a spare takes (its buffer in the builtin
/// holds 4,095 bytes).
const MAX_DIR: usize = 4095;

/// The host's end of a bash's spare channel, and the directory that bash
/// (and so its spare) started in.
pub(crate) struct SpareChannel {
    fd: OwnedFd,
    dir: PathBuf,
}

impl SpareChannel {
    /// A channel for a bash that starts in `dir`, and the end that bash
    /// gets on `protocol::SPARE_FD`.
    pub(crate) fn new(dir: &Path) -> Result<(SpareChannel, OwnedFd)> {
        let (fd, theirs) = socketpair()?;
        let dir = dir.to_path_buf();
        Ok((SpareChannel { fd, dir }, theirs))
    }

    /// Where the spare is: where its bash started.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The spare's pid: `None` when its bash forked none (the channel's
    /// end-of-file). Only once that bash is gone: until then a spare may
    /// still come.
    fn pid(&self) -> Option<Pid> {
        let until = Instant::now() + PID_WAIT;
        let mut got = [0u8; 4];
        let mut len = 0;
        while len < got.len() {
            let mut fds = [pollin(self.fd.as_raw_fd())];
            if poll(&mut fds, Some(until)).ok()? == 0 {
                return None;
            }
            match read(self.fd.as_raw_fd(), &mut got[len..]) {
                Ok(Read::Data(n)) => len += n,
                Ok(Read::WouldBlock) => {}
                Ok(Read::Eof) | Err(_) => return None,
            }
        }
        Some(Pid::from_ne_bytes(got))
    }

    /// Waits, at most until `until`, for the first word on the channel:
    /// the spare's pid (from its bash or itself), or end-of-file when the
    /// bash forks none. A bash forks its spare right after its ready
    /// report, so a reset that comes before it has run anything finds the
    /// spare this way, rather than a channel its kill left empty (and a
    /// bash to start).
    pub(crate) fn wait_forked(&self, until: Instant) {
        let mut fds = [pollin(self.fd.as_raw_fd())];
        let _ = poll(&mut fds, Some(until));
    }

    /// Makes the spare the session's bash, in its directory (again: it may
    /// have been removed and made since), its pipes FIFOs in `fifos` if
    /// given, `next` its own spare's channel end. Returns the bash and the
    /// host's end of its protocol socket; `None` where there is no spare,
    /// or it could not take over (it is then killed): the caller starts a
    /// bash.
    pub(crate) fn take_over(
        self,
        fifos: Option<&Path>,
        next: Option<OwnedFd>,
    ) -> Option<(Supervised, OwnedFd)> {
        let pid = self.pid()?;
        // In the guard's care before it can start anything.
        super::lifeline::guard(pid);
        let mut child = Process::new(pid).into_guarded();
        let started = (|| -> Result<_> {
            let dir = self.dir.as_os_str().as_encoded_bytes();
            if dir.len() >= MAX_DIR {
                return Err(crate::Error::InvalidArgument(
                    "a start directory too long".into(),
                ));
            }
            let ((out, out_w), (status, status_w)) = session_pipes(fifos)?;
            let (theirs, input) = socketpair()?;
            let mut given: Vec<BorrowedFd<'_>> =
                vec![theirs.as_fd(), status_w.as_fd(), out_w.as_fd()];
            given.extend(next.as_ref().map(AsFd::as_fd));
            send_fds(&self.fd, dir, &given)?;
            set_nonblocking(&status)?;
            Ok((out, status, input, exit_fd(pid)?))
        })();
        match started {
            Ok((out, status, input, pidfd)) => Some((
                Supervised {
                    child,
                    out,
                    status,
                    pidfd,
                },
                input,
            )),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                None
            }
        }
    }

    /// Ends the spare, if there is one, and collects it. Only once the bash
    /// that forked it is gone. Killed rather than told (end-of-file): a
    /// command may have stopped it, and the host must not wait on it.
    pub(crate) fn discard(self) {
        if let Some(pid) = self.pid() {
            let mut spare = Process::new(pid);
            let _ = spare.kill();
            let _ = spare.wait();
        }
    }
}

/// Sends `data` and `fds` on `socket` in one message.
fn send_fds(socket: &OwnedFd, data: &[u8], fds: &[BorrowedFd<'_>]) -> Result<()> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(fds));
    let sent = sendmsg(
        socket,
        &[IoSlice::new(data)],
        &mut control,
        SendFlags::empty(),
    )
    .map_err(|e| crate::Error::io("cannot hand the spare bash its pipes", e.into()))?;
    if sent != data.len() {
        return Err(crate::Error::io(
            "cannot hand the spare bash its pipes",
            std::io::Error::other("a short send"),
        ));
    }
    Ok(())
}
