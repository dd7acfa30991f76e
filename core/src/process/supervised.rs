//! A contained child wired the way both bash engines need it: stdout and
//! stderr merged into one non-blocking pipe, a separate non-blocking status
//! pipe on [`STATUS_FD`], a pidfd to see it exit, and the containment of
//! [`super::spawner`] (own session, subreaper, dies with the host).

use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Child, Command, ExitStatus, Stdio};

use super::io::{grow_pipe, pidfd_open, pipe, set_nonblocking};
use super::spawner::{Containment, spawn};
use super::tree::Pid;
use crate::shell::protocol::{PROTOCOL_FD, STATUS_FD};
use crate::{Error, Result};

/// Our side of a supervised child.
pub struct Supervised {
    pub child: Child,
    pub pid: Pid,
    /// The merged stdout/stderr of the child (non-blocking).
    pub out: OwnedFd,
    /// What the child writes to [`STATUS_FD`] (non-blocking).
    pub status: OwnedFd,
    /// Readable once the child has exited.
    pub pidfd: OwnedFd,
}

/// Spawns `cmd` (program and arguments set, env and cwd too) with `stdin`,
/// and `protocol` (if any) on [`PROTOCOL_FD`].
pub fn spawn_supervised(
    mut cmd: Command,
    stdin: Stdio,
    protocol: Option<OwnedFd>,
) -> Result<Supervised> {
    let (out, out_w) = pipe()?;
    let (status, status_w) = pipe()?;
    grow_pipe(&out, 1 << 20);
    let out_w2 = out_w
        .try_clone()
        .map_err(|e| Error::io("cannot duplicate pipe", e))?;
    cmd.stdin(stdin)
        .stdout(Stdio::from(out_w2))
        .stderr(Stdio::from(out_w));
    let how = Containment {
        subreaper: true,
        dups: [
            Some((status_w.as_raw_fd(), STATUS_FD)),
            protocol.as_ref().map(|fd| (fd.as_raw_fd(), PROTOCOL_FD)),
        ],
    };
    let program = cmd.get_program().to_string_lossy().into_owned();
    let child =
        spawn(cmd, how).map_err(|e| Error::Spawn(format!("cannot start {program}: {e}")))?;
    drop(status_w);
    drop(protocol);
    set_nonblocking(&out)?;
    set_nonblocking(&status)?;
    let pid = child.id() as Pid;
    let pidfd = pidfd_open(pid)?;
    Ok(Supervised {
        child,
        pid,
        out,
        status,
        pidfd,
    })
}

/// The exit code a shell would report: the status, or 128 + the signal.
pub fn status_code(status: ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s))
}
