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
use crate::process::io::{poll, send_all};
use crate::process::supervised::status_code;
use crate::process::tree::{self, Pid};
use crate::sync::lock;
use crate::{Error, Result};

/// The longest a write waits for a job that does not read its input.
const WRITE_WAIT: Duration = Duration::from_secs(10);

/// How often [`Control::interrupt`] looks whether a process died.
const INTERRUPT_LOOK: Duration = Duration::from_millis(2);

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
    /// `release`: the run that has its loop let go of the job's pipes
    /// once the command has ended (`crate::protocol::RELEASE`).
    Session {
        spared: Vec<Pid>,
        seq: u64,
        release: Vec<u8>,
    },
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
    /// For [`Role::Session`]: the root runs the command itself; `None`
    /// for a bash started for the job.
    session: Option<SessionRoot>,
    grace: Duration,
}

/// What a root that is the session's bash, running the command itself,
/// is given besides the job's descriptors.
struct SessionRoot {
    /// Its earlier children, spared.
    spared: Vec<Pid>,
    /// The signal that has it abandon the command (see `crate::protocol`'s
    /// unwind trap).
    unwind: Signal,
    /// The run that lets it go (see [`Control::release`]).
    release: Vec<u8>,
}

impl Control {
    /// `hold`: the root waits until it closes.
    pub(crate) fn new(root: Process, hold: OwnedFd, role: Role, grace: Duration) -> Control {
        let (input, terminal, session) = match role {
            Role::Started { input, terminal } => (input, terminal, None),
            Role::Session {
                spared,
                seq,
                release,
            } => (
                None,
                None,
                Some(SessionRoot {
                    spared,
                    unwind: crate::protocol::unwind_signal(seq),
                    release,
                }),
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
            grace,
        }
    }

    /// The command of a session's bash has ended (its record came; by
    /// `exit` when `exited`): tells the root to let go of the job's output
    /// and status pipes and to wait until the job is over. Sent only now,
    /// in answer to the record, as the host answers one in the
    /// foreground: after `exit` a fresh bash has taken the old one's place
    /// and reads a start-up text, where the loop reads a run. Nothing for
    /// a bash started for the job, which lets go by itself.
    pub(crate) fn release(&self, exited: bool) {
        let Some(session) = &self.session else {
            return;
        };
        let Some(hold) = &*lock(&self.hold) else {
            return;
        };
        // A root gone already has nothing to let go of.
        let _ = if exited {
            send_all(hold, &crate::protocol::released_startup())
        } else {
            send_all(hold, &session.release)
        };
    }

    /// The command's exit code as its root's own end gives it (128 + N
    /// for a signal N), once the root has ended, for a root that runs the
    /// command itself (`None` otherwise): it was killed, or `exec`'d the
    /// program that ended. The root is left for [`Control::reap`], its
    /// pid its own until then.
    pub(crate) fn root_exit_code(&self) -> Option<i32> {
        self.session.as_ref()?;
        let status = lock(&self.root).as_ref()?.ended()?;
        status_code(status)
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

    /// The processes of the command now, a root that runs the command
    /// itself first: a signal sent in this order reaches bash before its
    /// program. The other way round, the program could die of it and
    /// bash go on with the line (`sleep 30; echo after`) before its own
    /// signal came.
    pub(crate) fn processes(&self) -> Vec<Pid> {
        let mut pids = Vec::new();
        if self.session.is_some() {
            pids.push(self.pid);
        }
        pids.extend(self.below());
        pids
    }

    /// The processes below the root that are the job's.
    fn below(&self) -> Vec<Pid> {
        match &self.session {
            Some(session) => tree::descendants_except(self.pid, &session.spared),
            None => tree::descendants(self.pid),
        }
    }

    /// Sends `signal` to every process of the command (the root too, when
    /// it runs the command itself), and to what one of them that held it
    /// blocked forks before it takes it (as a subshell does when signalled
    /// right as it starts the command): see [`tree::signal_with_forks`].
    /// SIGINT to a root that runs the command itself is
    /// [`Control::interrupt`], which calls `cut` to cut the line.
    pub(crate) fn signal(&self, signal: Signal, cut: impl FnOnce() -> bool) {
        // Held throughout: the root is not reaped meanwhile, so its pid
        // stays its own.
        let root = lock(&self.root);
        if root.is_none() {
            return;
        }
        match &self.session {
            Some(session) if signal == Signal::INT => {
                self.interrupt(session.unwind, &session.spared, cut);
            }
            session => {
                let spared = session.as_ref().map_or(&[][..], |s| &s.spared);
                tree::signal_with_forks(&self.processes(), self.pid, spared, signal);
            }
        }
        drop(root);
    }

    /// SIGINT to a command that a session's bash runs itself. That bash
    /// traps SIGINT for the session's sake (`crate::protocol`), where the
    /// bash of `( command )` dies of it once the program it waits for has
    /// died of it, and the rest of the line with it. So bash is frozen
    /// (it must not go on with the line meanwhile) and only the command's
    /// processes get it; when one of them is gone within the grace (at
    /// once when there are none: bash runs builtins), `cut` is called,
    /// and if it says the command still runs, bash is told to abandon the
    /// rest of the line as an interrupt does (`crate::protocol`'s unwind
    /// trap). Otherwise (they catch or ignore it) bash goes on, as after
    /// a program that caught it.
    fn interrupt(&self, unwind: Signal, spared: &[Pid], cut: impl FnOnce() -> bool) {
        tree::signal_all(&[self.pid], Signal::STOP);
        let pids = self.below();
        tree::signal_with_forks(&pids, self.pid, spared, Signal::INT);
        let deadline = Instant::now() + self.grace;
        let died = loop {
            if pids.is_empty() || pids.iter().any(|&p| !tree::is_alive(p)) {
                break true;
            }
            if Instant::now() >= deadline {
                break false;
            }
            std::thread::sleep(INTERRUPT_LOOK);
        };
        if died && cut() {
            tree::signal_all(&[self.pid], unwind);
        }
        tree::signal_all(&[self.pid], Signal::CONT);
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
        if let Some(session) = &self.session {
            tree::signal_all(&[self.pid], session.unwind);
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
            .is_some_and(|session| session.spared.iter().any(|&p| tree::is_alive(p)));
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
