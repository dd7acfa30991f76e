//! A contained child wired the way both bash engines need it: stdout and
//! stderr merged into one non-blocking pipe, a separate non-blocking status
//! pipe on [`STATUS_FD`], a pidfd to see it exit, and the containment of
//! [`super::spawner`] (own session, subreaper, dies with the host).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::ExitStatus;

use super::child::Process;
use super::io::{exit_fd, named_pipe, output_pipe, pipe, set_nonblocking};
use super::spawner::{Launch, spawn};
use crate::protocol::{PROTOCOL_FD, STATUS_FD};
use crate::{Error, Result};

/// Our side of a supervised child.
pub struct Supervised {
    pub child: Process,
    /// The merged stdout/stderr of the child (non-blocking).
    pub out: OwnedFd,
    /// What the child writes to [`STATUS_FD`] (non-blocking).
    pub status: OwnedFd,
    /// Readable once the child has exited.
    pub pidfd: OwnedFd,
}

/// Starts `launch` (program, arguments, env and cwd set) as a subreaper,
/// with `stdin`, and `protocol` (if any) on [`PROTOCOL_FD`]. With `fifos`,
/// the output and status pipes are FIFOs in that directory
/// ([`named_pipe`]), for a child that opens them again by path and may not
/// reach `/proc/<host pid>/fd`.
pub fn spawn_supervised(
    mut launch: Launch,
    stdin: OwnedFd,
    protocol: Option<OwnedFd>,
    fifos: Option<&Path>,
) -> Result<Supervised> {
    let ((out, out_w), (status, status_w)) = session_pipes(fifos)?;
    launch.subreaper = true;
    launch.fds.extend([
        (stdin.as_raw_fd(), 0),
        (out_w.as_raw_fd(), 1),
        (out_w.as_raw_fd(), 2),
        (status_w.as_raw_fd(), STATUS_FD),
    ]);
    if let Some(fd) = &protocol {
        launch.fds.push((fd.as_raw_fd(), PROTOCOL_FD));
    }
    let program = launch.program.display().to_string();
    let child = spawn(launch).map_err(|e| Error::Spawn(format!("cannot start {program}: {e}")))?;
    // Ours are closed now: the child's are the only write ends left.
    drop((stdin, out_w, status_w, protocol));
    set_nonblocking(&status)?;
    let pidfd = exit_fd(child.pid())?;
    Ok(Supervised {
        child,
        out,
        status,
        pidfd,
    })
}

/// A supervised child's output and status pipes, `(read, write)` each:
/// FIFOs in `fifos` if given.
pub(crate) fn session_pipes(fifos: Option<&Path>) -> Result<PipePair> {
    Ok(match fifos {
        Some(dir) => (named_pipe(dir)?, named_pipe(dir)?),
        None => (output_pipe()?, pipe()?),
    })
}

/// The output pipe's ends, then the status pipe's.
pub(crate) type PipePair = ((OwnedFd, OwnedFd), (OwnedFd, OwnedFd));

/// The exit code a shell would report: the status, or 128 + the signal.
pub fn status_code(status: ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s))
}

/// How a process ended, in words for an error message: `it exited with
/// code 2`, `it was killed by signal 9`.
pub fn describe_exit(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("it exited with code {code}"),
        (None, Some(signal)) => format!("it was killed by signal {signal}"),
        (None, None) => format!("it ended with status {}", status.into_raw()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn an_ending_reads_in_words() {
        // Wait statuses as the kernel encodes them: code << 8, or the signal.
        assert_eq!(
            describe_exit(ExitStatus::from_raw(2 << 8)),
            "it exited with code 2"
        );
        assert_eq!(
            describe_exit(ExitStatus::from_raw(9)),
            "it was killed by signal 9"
        );
        assert_eq!(status_code(ExitStatus::from_raw(9)), Some(137));
    }
}
