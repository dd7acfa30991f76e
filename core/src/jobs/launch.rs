//! Starting a job's bash: the root that runs the command in a subshell
//! given the session's state, reports its status, then waits.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Control, Role};
use crate::process::io::{
    Read, grow_pipe, output_pipe, pipe, pipe_size, poll, pollin, read, set_nonblocking, socketpair,
};
use crate::process::sandbox::Confinement;
use crate::process::spawner::{HostDeath, Launch, dev_null, spawn};
use crate::protocol::{PROTOCOL_FD, STATUS_FD};
use crate::pty::open_terminal;
use crate::{Error, Result};

/// The root's `-c` script; `$1` is where its state is read from
/// ([`STATE_FD`]). The root first moves
/// the job's output from its own stderr to descriptor 61 and sends its
/// stderr to `/dev/null`: what bash says of the subshell's end (`Killed
/// ( … )`, with the protocol's text) is the root's and must not reach the
/// job's output. The subshell tells the host it exists (`r` on the status
/// pipe: from then on a signal to the job reaches the command), closes the
/// status and hold descriptors, takes the output back as its stderr, takes
/// the argument, clears the positional parameters (before `source`, which
/// would otherwise leave `BASH_ARGV` holding them), sources the state (the
/// session's, then the job's variables, its command in `$__conch_c` and
/// the `set -x`/`set -v` held back for it in `$__conch_on`) and closes its
/// descriptor, shows the
/// command as `BASH_EXECUTION_STRING` as `bash -c` does, and `eval`s it,
/// its own first step unsetting the variables that carried it. Then the
/// root reports `1 NUL status NUL NUL` (a status record of run 1), lets go
/// of the output, and waits for the host to close descriptor 63, staying
/// the subreaper of what the command left. Plain `exec` throughout:
/// nothing of the user's is defined yet where it runs, and the
/// redirections of `builtin exec` are undone when it returns. SIGINT is
/// caught, so a ctrl+c on the job's terminal ends the command, not the
/// root.
const ROOT: &str = "builtin trap : INT; exec 61>&2 2>/dev/null; \
( builtin printf r >&62; exec 62>&- 63<&- 2>&61 61>&-; \
__conch_f=$1; builtin set --; builtin source \"$__conch_f\" </dev/null >/dev/null 2>&1; exec 60<&-; \
BASH_EXECUTION_STRING=$__conch_c; \
builtin eval \"builtin unset -v __conch_f __conch_c __conch_on; $__conch_on$__conch_c\" ); \
builtin printf '1\\0%s\\0\\0' \"$?\" >&62; exec 60<&- 61>&- 62>&- >/dev/null </dev/null; \
builtin read -r -u 63 _";

/// The descriptor the root reads its state from (as `/dev/fd/60`): the
/// read end of a pipe the host fills. The state holds the session's
/// variables, secrets included: in a pipe it is gone once read, where a
/// file would outlive a host that is killed. (60 is the session loop's
/// output descriptor; a root runs no loop.)
const STATE_FD: i32 = 60;

/// What a pipe holds at the most (Linux's default limit for a user): a
/// larger state is written by a thread as the root reads it.
const STATE_PIPE_BYTES: usize = 1 << 20;

/// The byte the job's subshell writes on the status pipe once it exists.
const READY: u8 = b'r';

/// How long [`launch`] waits for the subshell to exist: far beyond a
/// bash's start. Past it the job goes on unconfirmed (a signal sent
/// before its command exists reaches nothing).
const READY_WAIT: Duration = Duration::from_secs(10);

/// The run number of the root's status record.
pub(crate) const ROOT_SEQ: u64 = 1;

/// What to start.
pub(crate) struct Spec<'a> {
    pub shell: &'a Path,
    /// `$0`.
    pub name: &'a str,
    /// The state (see `crate::shell::state`) the job starts from.
    pub state: String,
    pub cwd: &'a Path,
    pub stdin: bool,
    pub pty: Option<(u16, u16)>,
    pub grace: Duration,
    /// The session's sandbox, which the job's bash enters too.
    pub sandbox: Option<Arc<Confinement>>,
}

/// A started root and the host's ends of the job's descriptors.
pub(crate) struct Launched {
    pub control: Control,
    /// The output: a pipe, or the terminal's master.
    pub output: OwnedFd,
    pub status: OwnedFd,
    /// What the status pipe carried after the ready byte (a status
    /// record, when the command ended that fast).
    pub initial_status: Vec<u8>,
}

/// Starts the root of a job, with an empty environment (the state file
/// sets the session's), in its own session, a child subreaper held by the
/// host's guard, and returns once the subshell that runs the command
/// exists, so that a signal sent right after reaches it.
pub(crate) fn launch(spec: Spec<'_>) -> Result<Launched> {
    let (status, status_w) = pipe()?;
    set_nonblocking(&status)?;
    let (hold, hold_theirs) = socketpair()?;
    let (state, rest) = state_pipe(spec.state)?;
    let state_path = format!("/dev/fd/{STATE_FD}");
    let mut launch = Launch {
        program: spec.shell.to_path_buf(),
        arg0: Some(spec.name.into()),
        args: ["--noprofile", "--norc", "-c", ROOT, spec.name, &state_path]
            .map(OsString::from)
            .into(),
        cwd: Some(spec.cwd.to_path_buf()),
        subreaper: true,
        on_host_death: HostDeath::Freeze,
        fds: vec![
            (status_w.as_raw_fd(), STATUS_FD),
            (hold_theirs.as_raw_fd(), PROTOCOL_FD),
            (state.as_raw_fd(), STATE_FD),
        ],
        sandbox: spec.sandbox.clone(),
        ..Launch::default()
    };
    let mut tty = None;
    let (output, input, keep) = match spec.pty {
        Some((cols, rows)) => {
            let (master, slave, rdev) = terminal(cols, rows)?;
            tty = Some(rdev);
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
    drop((keep, status_w, hold_theirs, state));
    if let Some((write, state)) = rest {
        write_in_background(write, state);
    }
    let initial_status = wait_ready(&status)?;
    Ok(Launched {
        control: Control::new(
            root,
            hold,
            Role::Started {
                input,
                terminal: tty,
            },
            spec.grace,
        ),
        output,
        status,
        initial_status,
    })
}

/// A pipe holding `state` for a root to read: its read end, and, when
/// the state is larger than the pipe holds, its write end and the state,
/// for [`write_in_background`].
fn state_pipe(state: String) -> Result<(OwnedFd, Option<(File, String)>)> {
    let (read, write) = pipe()?;
    grow_pipe(&read, state.len().clamp(1, STATE_PIPE_BYTES));
    let room = pipe_size(&read).unwrap_or(0);
    let mut write = File::from(write);
    if state.len() <= room {
        // The read end is ours: the write cannot block or meet a closed
        // pipe.
        write
            .write_all(state.as_bytes())
            .map_err(|e| Error::io("cannot pass a job its state", e))?;
        return Ok((read, None));
    }
    Ok((read, Some((write, state))))
}

/// Writes `state` to a state pipe on a thread of its own, as the root
/// reads it; the thread ends once it is written or the root is gone
/// (`EPIPE`: SIGPIPE is blocked on that thread, so it never reaches the
/// host).
fn write_in_background(mut write: File, state: String) {
    std::thread::spawn(move || {
        crate::process::io::block_sigpipe();
        let _ = write.write_all(state.as_bytes());
    });
}

/// Waits for the ready byte on the (non-blocking) status pipe, for at
/// most [`READY_WAIT`], and returns what came after it. The root's end
/// (end of file: it died before its subshell existed) ends the wait too;
/// its end is then the job's.
fn wait_ready(status: &OwnedFd) -> Result<Vec<u8>> {
    let deadline = Instant::now() + READY_WAIT;
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    while got.is_empty() {
        if poll(&mut [pollin(status.as_raw_fd())], Some(deadline))? == 0 {
            break;
        }
        match read(status.as_raw_fd(), &mut buf) {
            Ok(Read::Data(n)) => got.extend_from_slice(&buf[..n]),
            Ok(Read::WouldBlock) => {}
            Ok(Read::Eof) => break,
            Err(e) => return Err(Error::io("cannot read a job's status", e)),
        }
    }
    if got.first() == Some(&READY) {
        got.remove(0);
    }
    Ok(got)
}

/// A terminal of `cols` × `rows`: the master (non-blocking), the slave,
/// and the terminal's device number.
fn terminal(cols: u16, rows: u16) -> Result<(OwnedFd, OwnedFd, u64)> {
    let failed = |e: String| Error::Spawn(format!("cannot open a PTY: {e}"));
    // The pair stays open until the clone and the slave are made.
    let (_pair, fd, tty) = open_terminal(cols, rows).map_err(Error::Spawn)?;
    // SAFETY: `fd` is the open master of `_pair`, alive for this borrow;
    // the clone owns a descriptor of its own.
    let master = unsafe { BorrowedFd::borrow_raw(fd) }
        .try_clone_to_owned()
        .map_err(|e| failed(e.to_string()))?;
    set_nonblocking(master.as_fd()).map_err(|e| failed(e.to_string()))?;
    let slave = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(&tty)
        .map_err(|e| failed(format!("{}: {e}", tty.display())))?;
    let rdev = slave
        .metadata()
        .map_err(|e| failed(format!("{}: {e}", tty.display())))?
        .rdev();
    Ok((master, slave.into(), rdev))
}
