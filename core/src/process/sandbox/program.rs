//! One program run to its end inside a sandbox, its input given whole and
//! its output taken whole: for a host's own helper that must reach the
//! files a sandboxed session's commands reach, and no others (the remote
//! file requests). The helper enters the very confinement a session's
//! bash enters (its mount namespace, Landlock rules, seccomp filter,
//! limits, cgroups), so what the sandbox denies or hides, it is denied or
//! hidden too: no path check of the host's to race with a symlink, nothing
//! the namespaces' view differs in.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;

use super::session::SessionPaths;
use super::{Confinement, Sandbox, SandboxApplied, SessionSandbox};
use crate::error::{Error, Result};
use crate::process::spawner::{Launch, spawn};

/// What a program run with [`ProgramSandbox::run`] or
/// [`crate::Shell::run_program`] left.
#[derive(Debug)]
pub struct ProgramOutput {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// A sandbox made from a policy for programs run one at a time, with no
/// session of bash: what a session opened with `policy` in `cwd` would
/// confine its commands to. Its temp directory and cgroups go when it is
/// dropped.
#[derive(Debug)]
pub struct ProgramSandbox {
    sandbox: SessionSandbox,
    cwd: PathBuf,
}

impl ProgramSandbox {
    /// The sandbox of `policy` for programs started in `cwd` (writable, as
    /// a session's starting cwd is); `program` is among what it may read
    /// (so it may be executed even when `policy.readable` is a list).
    /// Fails as a session with that policy would
    /// ([`Error::SandboxUnavailable`]).
    pub fn new(policy: &Sandbox, cwd: &Path, program: &Path) -> Result<ProgramSandbox> {
        let base = crate::private_dir::private_dir()?;
        let paths = SessionPaths {
            cwd,
            base,
            // What probes the namespaces (as `Sandbox::check` does): a
            // shell, which `program` need not be.
            shell: Path::new("/bin/sh"),
            readable: vec![base.clone(), program.to_path_buf()],
        };
        Ok(ProgramSandbox {
            sandbox: SessionSandbox::new(policy, paths)?,
            cwd: cwd.to_path_buf(),
        })
    }

    /// What of the sandbox is in force.
    pub fn applied(&self) -> &SandboxApplied {
        self.sandbox.applied()
    }

    /// Runs `program` with `args` in the sandbox's cwd, `input` on its
    /// stdin, to its end.
    pub fn run(&self, program: &Path, args: &[&str], input: &[u8]) -> Result<ProgramOutput> {
        run_program(
            Some(self.sandbox.confinement()),
            &self.cwd,
            program,
            args,
            input,
        )
    }
}

/// Runs `program` in `cwd` under `confinement` (none: unconfined), with an
/// empty environment, `input` on its stdin, and waits for its end. Its
/// stdout and stderr are read whole, each on a thread of its own while
/// the input is written, so no pipe fills while another is waited on.
pub(crate) fn run_program(
    confinement: Option<Arc<Confinement>>,
    cwd: &Path,
    program: &Path,
    args: &[&str],
    input: &[u8],
) -> Result<ProgramOutput> {
    let pipe = || std::io::pipe().map_err(|e| Error::io("cannot make a pipe", e));
    let (stdin_r, mut stdin_w) = pipe()?;
    let (mut stdout_r, stdout_w) = pipe()?;
    let (mut stderr_r, stderr_w) = pipe()?;
    let launch = Launch {
        program: program.to_path_buf(),
        args: args.iter().map(Into::into).collect(),
        cwd: Some(cwd.to_path_buf()),
        fds: vec![
            (stdin_r.as_raw_fd(), 0),
            (stdout_w.as_raw_fd(), 1),
            (stderr_w.as_raw_fd(), 2),
        ],
        sandbox: confinement,
        ..Launch::default()
    };
    let mut child = spawn(launch)
        .map_err(|e| Error::Spawn(format!("cannot start {}: {e}", program.display())))?;
    drop((stdin_r, stdout_w, stderr_w));
    let (stdout, stderr) = std::thread::scope(|scope| {
        let stderr = scope.spawn(move || {
            let mut text = Vec::new();
            let _ = stderr_r.read_to_end(&mut text);
            text
        });
        let stdout = scope.spawn(move || {
            let mut text = Vec::new();
            let _ = stdout_r.read_to_end(&mut text);
            text
        });
        // A program that exits before reading all of it closes the pipe:
        // its status says why.
        let _ = stdin_w.write_all(input);
        drop(stdin_w);
        (
            stdout.join().unwrap_or_default(),
            stderr.join().unwrap_or_default(),
        )
    });
    let status = child
        .wait()
        .map_err(|e| Error::io(format!("cannot wait for {}", program.display()), e))?;
    Ok(ProgramOutput {
        status,
        stdout,
        stderr,
    })
}
