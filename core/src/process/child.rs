//! A child process conch started: its pid, killed and waited for here.
//!
//! The spawner does not go through `std::process::Command` (see
//! [`super::spawner`]), and std's `Child` cannot be made from a pid.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use rustix::io::Errno;
use rustix::process::{Signal, WaitOptions, kill_process, waitpid};

use super::tree::{self, Pid};

/// A started child, until waited for. Dropping it neither kills nor reaps
/// it (like std's `Child`).
#[derive(Debug)]
pub struct Process {
    pid: Pid,
    status: Option<ExitStatus>,
    /// In the host guard's care (see [`super::lifeline`]) until reaped.
    guarded: bool,
}

impl Process {
    pub(super) fn new(pid: Pid) -> Process {
        Process {
            pid,
            status: None,
            guarded: false,
        }
    }

    /// The same child, told to the guard: it is taken out of the guard's
    /// care before it is reaped.
    pub(super) fn into_guarded(self) -> Process {
        Process {
            guarded: true,
            ..self
        }
    }

    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Sends SIGKILL, unless the child was already waited for (its pid may
    /// belong to another process by then).
    pub fn kill(&mut self) -> io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        Ok(kill_process(tree::rustix_pid(self.pid)?, Signal::KILL)?)
    }

    /// Waits for the child to exit.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.reap(WaitOptions::empty())? {
                return Ok(status);
            }
        }
    }

    /// The exit status if the child has exited, without blocking.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.reap(WaitOptions::NOHANG)
    }

    fn reap(&mut self, options: WaitOptions) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        if self.guarded && (options.is_empty() || self.has_exited()) {
            super::lifeline::release(self.pid);
            self.guarded = false;
        }
        let pid = tree::rustix_pid(self.pid)?;
        loop {
            match waitpid(Some(pid), options) {
                Ok(Some((_, raw))) => {
                    let status = ExitStatus::from_raw(raw.as_raw());
                    self.status = Some(status);
                    return Ok(Some(status));
                }
                Ok(None) => return Ok(None),
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Whether the child has exited, leaving it to be reaped.
    fn has_exited(&self) -> bool {
        self.ended().is_some()
    }

    /// How the child ended, once it has, without reaping it: until
    /// [`Process::wait`] its pid stays its own (a zombie), so that what
    /// is sent to that pid meanwhile reaches no other process.
    pub fn ended(&self) -> Option<ExitStatus> {
        if self.status.is_some() {
            return self.status;
        }
        // SAFETY: an all-zero siginfo_t is valid; `waitid` fills it in.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: plain syscall on a valid out-pointer.
        let r = unsafe { libc::waitid(libc::P_PID, self.pid as libc::id_t, &mut info, flags) };
        // SAFETY: `si_pid` is set (to 0 when nothing has exited) by waitid,
        // and `si_status` with it.
        let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
        if r != 0 || pid == 0 {
            return None;
        }
        // The wait status `waitpid` would give: the code, or the signal.
        let raw = match info.si_code {
            libc::CLD_EXITED => (status & 0xff) << 8,
            libc::CLD_DUMPED => status | 0x80,
            _ => status,
        };
        Some(ExitStatus::from_raw(raw))
    }
}
