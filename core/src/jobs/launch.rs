//! Starting a job's bash: the root that runs the command in a subshell
//! given the session's state, reports its status, then waits.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use portable_pty::{PtySize, native_pty_system};

use super::{Control, Role};
use crate::process::io::{output_pipe, pipe, set_nonblocking, socketpair};
use crate::process::spawner::{HostDeath, Launch, dev_null, spawn};
use crate::shell::protocol::{FUNCTION_NAMES, PROTOCOL_FD, STATUS_FD};
use crate::{Error, Result};

/// The root's `-c` script; `$1` is the state file, `$2` the protocol's
/// function names. The subshell takes both, clears the positional
/// parameters (before `source`, which would otherwise leave `BASH_ARGV`
/// holding them), sources the file (the session's state, then the job's
/// variables and its command in `$__conch_c`), drops the protocol's
/// functions (a job runs no protocol), shows the command as
/// `BASH_EXECUTION_STRING` as `bash -c` does, and `eval`s it, its own
/// first step unsetting the variables that carried it. The status and hold
/// descriptors are closed for it. Then the root reports `1 NUL status NUL
/// NUL` (a status record of run 1), lets go of the output (plain `exec`:
/// the redirections of `builtin exec` are undone when it returns) and
/// waits for the host to close descriptor 63, staying the subreaper of
/// what the command left. SIGINT is caught, so a ctrl+c on the job's
/// terminal ends the command, not the root.
const ROOT: &str = "builtin trap : INT; \
( __conch_f=$1 __conch_u=($2); builtin set --; builtin source \"$__conch_f\" </dev/null >/dev/null 2>&1; \
builtin unset -f \"${__conch_u[@]}\"; BASH_EXECUTION_STRING=$__conch_c; \
builtin eval \"builtin unset -v __conch_f __conch_u __conch_c __conch_on; $__conch_on$__conch_c\" ) 62>&- 63<&-; \
builtin printf '1\\0%s\\0\\0' \"$?\" >&62; exec 62>&- >/dev/null 2>&1 </dev/null; \
builtin read -r -u 63 _";

/// The run number of the root's status record.
pub(crate) const ROOT_SEQ: u64 = 1;

/// What to start.
pub(crate) struct Spec<'a> {
    pub shell: &'a Path,
    /// `$0`.
    pub name: &'a str,
    /// The state file (removed when the job is over).
    pub state: PathBuf,
    pub cwd: &'a Path,
    pub stdin: bool,
    pub pty: Option<(u16, u16)>,
    pub grace: Duration,
}

/// A started root and the host's ends of the job's descriptors.
pub(crate) struct Launched {
    pub control: Control,
    /// The output: a pipe, or the terminal's master.
    pub output: OwnedFd,
    pub status: OwnedFd,
}

/// Starts the root of a job, with an empty environment (the state file
/// sets the session's), in its own session, a child subreaper held by the
/// host's guard.
pub(crate) fn launch(spec: Spec<'_>) -> Result<Launched> {
    let (status, status_w) = pipe()?;
    set_nonblocking(&status)?;
    let (hold, hold_theirs) = socketpair()?;
    let state = spec
        .state
        .to_str()
        .ok_or_else(|| Error::InvalidArgument("the state file's path is not UTF-8".into()))?;
    let mut launch = Launch {
        program: spec.shell.to_path_buf(),
        arg0: Some(spec.name.into()),
        args: [
            "--noprofile",
            "--norc",
            "-c",
            ROOT,
            spec.name,
            state,
            FUNCTION_NAMES,
        ]
        .map(OsString::from)
        .into(),
        cwd: Some(spec.cwd.to_path_buf()),
        subreaper: true,
        on_host_death: HostDeath::Freeze,
        fds: vec![
            (status_w.as_raw_fd(), STATUS_FD),
            (hold_theirs.as_raw_fd(), PROTOCOL_FD),
        ],
        ..Launch::default()
    };
    let (output, input, keep) = match spec.pty {
        Some((cols, rows)) => {
            let (master, slave) = terminal(cols, rows)?;
            launch.controlling_terminal = true;
            for n in 0..3 {
                launch.fds.push((slave.as_raw_fd(), n));
            }
            let input = master
                .try_clone()
                .map_err(|e| Error::io("cannot open a PTY", e))?;
            (master, Some(input), vec![slave])
        }
        None => {
            let (output, output_w) = output_pipe()?;
            let (stdin_r, stdin_w) = if spec.stdin {
                let (r, w) = pipe()?;
                set_nonblocking(&w)?;
                (r, Some(w))
            } else {
                (
                    dev_null().map_err(|e| Error::io("cannot open /dev/null", e))?,
                    None,
                )
            };
            launch.fds.push((stdin_r.as_raw_fd(), 0));
            launch.fds.push((output_w.as_raw_fd(), 1));
            launch.fds.push((output_w.as_raw_fd(), 2));
            (output, stdin_w, vec![stdin_r, output_w])
        }
    };
    let program = launch.program.display().to_string();
    let root = spawn(launch).map_err(|e| Error::Spawn(format!("cannot start {program}: {e}")))?;
    drop((keep, status_w, hold_theirs));
    let terminal = spec.pty.is_some();
    Ok(Launched {
        control: Control::new(
            root,
            hold,
            Role::Started {
                input,
                terminal,
                file: spec.state,
            },
            spec.grace,
        ),
        output,
        status,
    })
}

/// A terminal of `cols` × `rows`: the master (non-blocking) and the slave.
fn terminal(cols: u16, rows: u16) -> Result<(OwnedFd, OwnedFd)> {
    let failed = |e: String| Error::Spawn(format!("cannot open a PTY: {e}"));
    let pair = native_pty_system()
        .openpty(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(|e| failed(e.to_string()))?;
    let fd = pair
        .master
        .as_raw_fd()
        .ok_or_else(|| failed("no master descriptor".into()))?;
    // SAFETY: `fd` is the open master of `pair`, alive for this borrow;
    // the clone owns a descriptor of its own.
    let master = unsafe { BorrowedFd::borrow_raw(fd) }
        .try_clone_to_owned()
        .map_err(|e| failed(e.to_string()))?;
    set_nonblocking(master.as_fd()).map_err(|e| failed(e.to_string()))?;
    let tty = pair
        .master
        .tty_name()
        .ok_or_else(|| failed("the terminal has no name".into()))?;
    let slave = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(&tty)
        .map_err(|e| failed(format!("{}: {e}", tty.display())))?;
    Ok((master, slave.into()))
}
