//! Opening a terminal, and starting a PTY run's child on it with the shared
//! spawner. Jobs started with a terminal (`jobs::launch`) open theirs here
//! too.
//!
//! The child leads a new session with the PTY as its controlling terminal
//! (so ctrl+c and SIGWINCH reach it): the slave becomes its stdin, stdout
//! and stderr, and `Launch::controlling_terminal` makes it the session's
//! terminal. Like every contained child it is cloned without copying the
//! host (see `process::spawner`): `fork` copies the host's page tables, and
//! the copy-on-write faults that follow cost more the bigger the host (a
//! PTY run of `exit 0` took 2.8 ms from a small host, 42 ms from one
//! holding 1 GiB), and agent hosts are big.

use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use portable_pty::{PtyPair, PtySize, native_pty_system};

use crate::process::child::Process;
use crate::process::env::Env;
use crate::process::sandbox::Confinement;
use crate::process::spawner::{HostDeath, Launch, spawn};

/// A new terminal of `cols` × `rows`: the pair, its master's descriptor
/// and the path of its slave. The error reads `cannot open a PTY: …`.
pub(crate) fn open_terminal(cols: u16, rows: u16) -> Result<(PtyPair, RawFd, PathBuf), String> {
    let failed = |e: &dyn std::fmt::Display| format!("cannot open a PTY: {e}");
    let pair = native_pty_system()
        .openpty(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(|e| failed(&e))?;
    let fd = pair
        .master
        .as_raw_fd()
        .ok_or_else(|| failed(&"no master descriptor"))?;
    let tty = pair
        .master
        .tty_name()
        .ok_or_else(|| failed(&"the terminal has no name"))?;
    Ok((pair, fd, tty))
}

/// What the child runs: `program -c command`, with exactly `env`, in `cwd`.
pub(super) struct ChildSpec {
    pub program: PathBuf,
    pub command: String,
    pub env: Env,
    pub cwd: PathBuf,
    pub sandbox: Option<Arc<Confinement>>,
}

impl ChildSpec {
    /// Starts the child on the terminal whose slave is at `tty`. The caller
    /// reaps it.
    pub(super) fn spawn(&self, tty: &Path) -> io::Result<Process> {
        let slave = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(tty)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot open {}: {e}", tty.display())))?;
        let fd = slave.as_raw_fd();
        spawn(Launch {
            program: self.program.clone(),
            arg0: None,
            args: vec!["-c".into(), self.command.clone().into()],
            env: self.env.clone(),
            cwd: Some(self.cwd.clone()),
            fds: vec![(fd, 0), (fd, 1), (fd, 2)],
            controlling_terminal: true,
            // Orphans come back to it, and on the host's death the guard
            // takes its whole tree (see `process::lifeline`).
            subreaper: true,
            on_host_death: HostDeath::Freeze,
            sandbox: self.sandbox.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;
    use crate::process::tree::Pid;

    /// Fields of `/proc/<pid>/stat` after the command name.
    fn stat_fields(pid: Pid) -> Vec<String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let (_, rest) = stat.rsplit_once(')').unwrap();
        rest.split_whitespace().map(str::to_string).collect()
    }

    /// The child leads a session with the terminal as its controlling
    /// terminal, with the exact environment, in the working directory.
    #[test]
    fn the_child_owns_the_terminal() {
        let pair = native_pty_system().openpty(PtySize::default()).unwrap();
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let spec = ChildSpec {
            program: "/bin/sh".into(),
            command: "read -r line".into(),
            env: vec![("CONCH_SPAWN_TEST".into(), "yes".into())],
            cwd: dir.clone(),
            sandbox: None,
        };
        let tty = pair.master.tty_name().unwrap();
        let mut child = spec.spawn(&tty).unwrap();
        let pid = child.pid();
        drop(pair.slave);
        // `spawn` returns once `execve` is past its point of no return; the
        // new image may still be setting up its environment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let environ = loop {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
            let environ = std::fs::read_to_string(format!("/proc/{pid}/environ")).unwrap();
            if comm == "sh\n" && !environ.is_empty() {
                break environ;
            }
            assert!(std::time::Instant::now() < deadline, "child never exec'd");
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        let fields = stat_fields(pid);
        // state ppid pgrp session tty_nr
        assert_eq!(fields[3], pid.to_string(), "session leader");
        assert_ne!(fields[4], "0", "has a controlling terminal");
        let vars: Vec<&str> = environ.split_terminator('\0').collect();
        assert_eq!(vars, ["CONCH_SPAWN_TEST=yes"]);
        assert_eq!(std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(), dir);
        let mut writer = pair.master.take_writer().unwrap();
        writer.write_all(b"done\n").unwrap();
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn a_terminal_that_cannot_be_opened_is_an_error() {
        let spec = ChildSpec {
            program: "/bin/sh".into(),
            command: "true".into(),
            env: Vec::new(),
            cwd: "/".into(),
            sandbox: None,
        };
        let e = spec
            .spawn(Path::new("/dev/pts/no-such-terminal"))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot open /dev/pts/no-such-terminal: No such file or directory (os error 2)"
        );
    }
}
