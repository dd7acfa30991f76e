//! Spawning contained children from one long-lived thread.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits,
//! not the process. Hosts call conch from short-lived threads (a Python
//! `threading.Thread`, a worker pool), and a shell spawned there would be
//! killed when that thread ends. So every contained child is forked by one
//! process-global thread that lives as long as the host.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc::{Sender, channel};
use std::sync::{LazyLock, Mutex};

type Job = (Command, Sender<io::Result<Child>>);

static SPAWNER: LazyLock<Mutex<Sender<Job>>> = LazyLock::new(|| {
    let (tx, rx) = channel::<Job>();
    std::thread::Builder::new()
        .name("conch-spawner".into())
        .spawn(move || {
            for (mut cmd, reply) in rx {
                let _ = reply.send(cmd.spawn());
            }
        })
        .expect("cannot start the conch spawner thread");
    Mutex::new(tx)
});

/// Above every descriptor a contained child is given.
const HIGH_FD: i32 = 64;

/// How a contained child is set up between fork and exec.
#[derive(Debug, Clone, Copy, Default)]
pub struct Containment {
    /// Make the child a child subreaper, so double-forked orphans come back to it.
    pub subreaper: bool,
    /// `(from, to)`: put `from` on descriptor `to` in the child.
    pub dups: [Option<(i32, i32)>; 2],
}

/// Spawns `cmd` in a new session, killed if the host dies, with default
/// signal dispositions and mask (a host that ignores SIGINT or SIGPIPE must
/// not pass that on to the commands).
pub fn spawn(mut cmd: Command, how: Containment) -> io::Result<Child> {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure only makes async-signal-safe system calls.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                // The host died between fork and prctl.
                libc::_exit(1);
            }
            if how.subreaper {
                libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
            }
            for sig in [
                libc::SIGINT,
                libc::SIGQUIT,
                libc::SIGTERM,
                libc::SIGHUP,
                libc::SIGPIPE,
                libc::SIGCHLD,
                libc::SIGTSTP,
                libc::SIGTTIN,
                libc::SIGTTOU,
            ] {
                libc::signal(sig, libc::SIG_DFL);
            }
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            // Each source is first copied above every target (close-on-exec),
            // so no dup2 can overwrite a source still to be placed, and a
            // source already on its target loses FD_CLOEXEC all the same.
            let mut high = [-1; 2];
            for (slot, dup) in high.iter_mut().zip(how.dups) {
                if let Some((from, _)) = dup {
                    *slot = libc::fcntl(from, libc::F_DUPFD_CLOEXEC, HIGH_FD);
                    if *slot < 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
            }
            for (fd, dup) in high.into_iter().zip(how.dups) {
                if let Some((_, to)) = dup
                    && libc::dup2(fd, to) < 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let (tx, rx) = channel();
    crate::cancel::lock(&SPAWNER)
        .send((cmd, tx))
        .map_err(|_| io::Error::other("conch spawner thread is gone"))?;
    rx.recv()
        .map_err(|_| io::Error::other("conch spawner thread is gone"))?
}
