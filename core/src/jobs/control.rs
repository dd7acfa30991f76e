//! What conch holds of a job it runs in a bash: that bash (the job's root,
//! a child subreaper, so every process the command starts stays below it),
//! the job's input, and what keeps the root waiting. The root is a bash
//! started for the job (`launch`), or the session's own bash when a run
//! was moved to the background with the command it runs.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::Signal;

use crate::process::child::Process;
use crate::process::input_wait::{self, Reading};
use crate::process::io::poll;
use crate::process::tree::{self, Pid};
use crate::sync::lock;
use crate::{Error, Result};

/// The longest a write waits for a job that does not read its input.
const WRITE_WAIT: Duration = Duration::from_secs(10);

/// Which bash a job's root is.
pub(crate) enum Role {
    /// A bash started for the job; it runs the command in a subshell.
    Started {
        /// The write end of its stdin pipe, or its terminal's master.
        input: Option<OwnedFd>,
        /// The terminal's device number, when the input is a terminal.
        terminal: Option<u64>,
    },
    /// The session's bash, moved to the background while it ran the
    /// command itself. `spared` are its children from before the command
    /// (earlier runs' background work): they are not the job's, and the
    /// root stays their subreaper until they end or the session closes.
    /// `seq`: the run it was at (its unwind signal is that run's).
    Session { spared: Vec<Pid>, seq: u64 },
}

/// A job's root and its ends of the job's descriptors.
pub(crate) struct Control {
    pid: Pid,
    /// `None` once reaped.
    root: Mutex<Option<Process>>,
    /// The job's input: the write end of its stdin pipe, or its terminal's
    /// master; `None` when it has none (or it was closed). Shared with a
    /// write in progress, which holds no lock while it waits for the job
    /// to read: a kill or a close is never kept waiting behind it.
    input: Mutex<Option<Arc<OwnedFd>>>,
    /// One write at a time, so that two writes never interleave their
    /// bytes.
    writing: Mutex<()>,
    /// The input is a terminal (closing it sends end-of-file, ctrl+d):
    /// its device number.
    terminal: Option<u64>,
    /// The root waits until this closes (after the command, so that what
    /// the command left still has its subreaper).
    hold: Mutex<Option<OwnedFd>>,
    /// For [`Role::Session`]: the root runs the command itself, and its
    /// earlier children are spared.
    session: Option<Vec<Pid>>,
    /// The signal that has the session's bash abandon the command (see
    /// `crate::protocol`'s unwind trap); `None` for a bash started for the job.
    unwind: Option<Signal>,
    grace: Duration,
}

impl Control {
    /// `hold`: the root waits until it closes.
    pub(crate) fn new(root: Process, hold: OwnedFd, role: Role, grace: Duration) -> Control {
        let (input, terminal, session, unwind) = match role {
            Role::Started { input, terminal } => (input, terminal, None, None),
            Role::Session { spared, seq } => (
                None,
                None,
                Some(spared),
                Some(crate::protocol::unwind_signal(seq)),
            ),
        };
        Control {
            pid: root.pid(),
            root: Mutex::new(Some(root)),
            input: Mutex::new(input.map(Arc::new)),
            writing: Mutex::new(()),
            terminal,
            hold: Mutex::new(Some(hold)),
            session,
            unwind,
            grace,
        }
    }

    /// Whether the job has a terminal.
    pub(crate) fn is_terminal(&self) -> bool {
        self.terminal.is_some()
    }

    /// Whether a process in the foreground of the job's terminal is
    /// blocked reading it (docs/behaviour.md, "Jobs started beside the
    /// session": `waiting_for_input`). False without a terminal, and
    /// where the processes cannot be looked at.
    pub(crate) fn waits_for_input(&self) -> bool {
        let Some(rdev) = self.terminal else {
            return false;
        };
        let Some(master) = lock(&self.input).clone() else {
            return false;
        };
        let Some(foreground) = input_wait::foreground_group(master.as_fd()) else {
            return false;
        };
        self.below()
            .into_iter()
            .filter(|&pid| input_wait::group_of(pid) == Some(foreground))
            .any(|pid| {
                let mut on_terminal = |fd| input_wait::is_terminal_fd(pid, fd, rdev);
                input_wait::reading(pid, &mut on_terminal) == Reading::Yes
            })
    }

    /// The processes of the command now (the root too when it runs the
    /// command itself).
    pub(crate) fn processes(&self) -> Vec<Pid> {
        let mut pids = self.below();
        if self.session.is_some() {
            pids.push(self.pid);
        }
        pids
    }

    /// The processes below the root that are the job's.
    fn below(&self) -> Vec<Pid> {
        match &self.session {
            Some(spared) => tree::descendants_except(self.pid, spared),
            None => tree::descendants(self.pid),
        }
    }

    /// Sends `signal` to every process of the command (the root too, when
    /// it runs the command itself), and to what one of them that held it
    /// blocked forks before it takes it (as a subshell does when signalled
    /// right as it starts the command): see [`tree::signal_with_forks`].
    pub(crate) fn signal(&self, signal: Signal) {
        // Held throughout: the root is not reaped meanwhile, so its pid
        // stays its own.
        let root = lock(&self.root);
        if root.is_none() {
            return;
        }
        let mut pids = self.below();
        if self.session.is_some() {
            pids.push(self.pid);
        }
        let spared = self.session.as_deref().unwrap_or_default();
        tree::signal_with_forks(&pids, self.pid, spared, signal);
        drop(root);
    }

    /// Writes all of `data` to the job's input, waiting (a bounded time)
    /// while the job does not read it. `what` names the job in errors,
    /// which say how much of `data` went in when some did.
    pub(crate) fn write(&self, data: &[u8], what: &str) -> Result<()> {
        let _turn = lock(&self.writing);
        let Some(fd) = lock(&self.input).clone() else {
            return Err(Error::NoInput(format!("{what} takes no input")));
        };
        let deadline = Instant::now() + WRITE_WAIT;
        let mut written = 0;
        let stopped = |why: String, written: usize| {
            let part = match written {
                0 => String::new(),
                n => format!(" ({n} of {} bytes were written)", data.len()),
            };
            Err(Error::NoInput(format!("{what} {why}{part}")))
        };
        while written < data.len() {
            match rustix::io::write(&*fd, &data[written..]) {
                Ok(n) => written += n,
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => {
                    let mut fds = [libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLOUT,
                        revents: 0,
                    }];
                    if poll(&mut fds, Some(deadline))? == 0 {
                        let why = format!("did not read its input for {WRITE_WAIT:?}");
                        return stopped(why, written);
                    }
                    if fds[0].revents & (libc::POLLERR | libc::POLLHUP) != 0 {
                        return stopped("takes no more input".into(), written);
                    }
                }
                // EPIPE: nothing reads the pipe; EIO: nothing holds the terminal.
                Err(Errno::PIPE | Errno::IO) => {
                    return stopped("takes no more input".into(), written);
                }
                Err(e) => return Err(Error::io("cannot write to the job", e.into())),
            }
        }
        Ok(())
    }

    /// Ends the job's input: its stdin pipe closes (a terminal gets
    /// ctrl+d, as typed, and stays open for keys).
    pub(crate) fn close_input(&self, what: &str) -> Result<()> {
        if self.terminal.is_some() {
            return self.write(b"\x04", what);
        }
        match lock(&self.input).take() {
            Some(_) => Ok(()),
            None => Err(Error::NoInput(format!("{what} takes no input"))),
        }
    }

    /// Kills the command's whole tree as the kill escalation does (SIGINT,
    /// SIGTERM, SIGKILL, a grace period after each). The root is frozen
    /// meanwhile, so it starts nothing more and stays the subreaper of
    /// what dies. A bash started for the job is then killed; the session's
    /// bash is told to abandon the command (as a run's abort does, see
    /// `crate::protocol`'s unwind trap) and let go: the job ends when it
    /// has ([`Control::reap`] if it does not).
    pub(crate) fn kill(&self) {
        if lock(&self.root).is_none() {
            return;
        }
        tree::signal_all(&[self.pid], Signal::STOP);
        if let Some(unwind) = self.unwind {
            tree::signal_all(&[self.pid], unwind);
        }
        tree::escalate_blocking(|| self.below(), self.grace);
        match self.session {
            Some(_) => tree::signal_all(&[self.pid], Signal::CONT),
            None => self.reap(),
        }
    }

    /// After the job's natural end: kills what the command left that did
    /// not hold its output, and lets the root go (unless it still is the
    /// subreaper of earlier work, see [`Role::Session`]).
    pub(crate) fn finish(&self) {
        let left = self.below();
        if !left.is_empty() {
            tree::terminate(&left, self.grace);
        }
        let spared_live = self
            .session
            .as_ref()
            .is_some_and(|spared| spared.iter().any(|&p| tree::is_alive(p)));
        if !spared_live {
            self.reap();
        }
    }

    /// Whether the root was collected (nothing of the job is left).
    pub(crate) fn is_reaped(&self) -> bool {
        lock(&self.root).is_none()
    }

    /// Kills and collects the root, with anything that escaped its tree
    /// but kept its session (as the session's bash is reaped).
    pub(crate) fn reap(&self) {
        lock(&self.hold).take();
        lock(&self.input).take();
        let Some(mut root) = lock(&self.root).take() else {
            return;
        };
        tree::signal_all(&[self.pid], Signal::STOP);
        let _ = root.kill();
        tree::signal_all(&tree::session_members(self.pid), Signal::KILL);
        let _ = root.wait();
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        self.reap();
    }
}
