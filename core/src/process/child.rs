//! A child process conch started: its pid, killed and waited for here.
//!
//! The spawner does not go through `std::process::Command` (see
//! [`super::spawner`]), and std's `Child` cannot be made from a pid.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use super::tree::Pid;

/// A started child, until waited for. Dropping it neither kills nor reaps
/// it (like std's `Child`).
#[derive(Debug)]
pub struct Process {
    pid: Pid,
    status: Option<ExitStatus>,
}

impl Process {
    pub(super) fn new(pid: Pid) -> Process {
        Process { pid, status: None }
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
        // SAFETY: kill(2) has no memory effects.
        if unsafe { libc::kill(self.pid, libc::SIGKILL) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Waits for the child to exit.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.reap(0)? {
                return Ok(status);
            }
        }
    }

    /// The exit status if the child has exited, without blocking.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.reap(libc::WNOHANG)
    }

    fn reap(&mut self, flags: i32) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let mut raw = 0;
        loop {
            // SAFETY: waitpid writes the status into `raw`.
            let got = unsafe { libc::waitpid(self.pid, &mut raw, flags) };
            if got == self.pid {
                let status = ExitStatus::from_raw(raw);
                self.status = Some(status);
                return Ok(Some(status));
            }
            if got == 0 {
                return Ok(None);
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }
}
