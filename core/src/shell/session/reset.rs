//! `Shell::reset`: the session started afresh, by its bash's spare where
//! there is one (see [`crate::process::spare`]).

use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Bash, Shell, reap};
use crate::Result;
use crate::cwd::resolve_dir;
use crate::process::io::send_all;
use crate::process::spare::SpareChannel;
use crate::protocol;
use crate::sync::lock;

/// How long a spare that took over may take to answer before a bash is
/// started instead: it answers in microseconds (no `execve`, nothing to
/// source), so this only bounds one that a command stopped.
const SPARE_ANSWER: Duration = Duration::from_secs(2);

/// How long a reset waits for a bash that has run nothing since it was
/// ready to fork its spare (a fork: well under a millisecond); past it
/// (a bash something stopped), the reset starts a bash instead.
const SPARE_FORK: Duration = Duration::from_millis(250);

impl Shell {
    /// Starts the session afresh, as a new `Shell` with the same options
    /// would start: everything it runs is ended as [`Shell::close`] ends it
    /// (the current run is cancelled, jobs and bash killed with their
    /// trees), the jobs are forgotten, and a fresh bash starts in the
    /// session's start directory, without waiting for its start-up, as
    /// [`Shell::new`]. The session stays open, its options and artifacts
    /// unchanged; its next run does not report a reset (it was asked for).
    /// A start directory that is gone is `Shell::new`'s error, after the
    /// session's processes are ended: the next run then starts a bash where
    /// a run starts one after its bash died (the nearest directory above).
    ///
    /// From the first reset on, each bash of the session forks a spare of
    /// itself before its first command (Linux, the loop builtin, no
    /// sandbox: see [`crate::process::spare`]), and the next reset makes
    /// that spare the session's bash: a fork made ahead of time instead of
    /// a bash's start. The reset returns once the spare answered (a bash
    /// started instead is waited for by the next run, as after `new`).
    pub fn reset(&self) -> Result<()> {
        self.check_open()?;
        self.busy.check("a reset was asked", "shell")?;
        self.resets.store(true, Ordering::SeqCst);
        self.abort();
        let mut state = self.state.take();
        // A close that came first has ended everything already.
        self.check_open()?;
        if let Some(bash) = state.bash.as_ref().filter(|b| b.ready && b.seq == 0) {
            // Ready and sent nothing since: about to fork its spare.
            if let Some(spare) = &bash.spare {
                spare.wait_forked(Instant::now() + SPARE_FORK);
            }
        }
        let spare = self.end_runs(&mut state);
        self.jobs.forget_all();
        *lock(&self.cwd) = self.config.start.clone();
        // As `Shell::new` with the same `cwd`. Without a bash, the next
        // run starts one where a run would (the nearest directory above).
        let start = resolve_dir(Path::new("/"), &self.config.start);
        let bash = match (spare, &start) {
            (Some(spare), Ok(start)) if spare.dir() == start => self.take_over(spare, start)?,
            (Some(spare), _) => {
                spare.discard();
                None
            }
            (None, _) => None,
        };
        let start = start?;
        state.reset_pending = false;
        if let Some(bash) = bash {
            self.bash_pid.store(bash.pid(), Ordering::SeqCst);
            state.bash = Some(bash);
            // A spare answers at once. One that does not (a command
            // stopped or killed it) is replaced by a bash started afresh.
            match self.ready_until(&mut state, Some(Instant::now() + SPARE_ANSWER)) {
                Ok(true) => return Ok(()),
                Ok(false) => {
                    if let Some(bash) = state.bash.take() {
                        reap(bash);
                    }
                }
                Err(_) => {}
            }
        }
        let bash = self.spawn_bash(&start, None)?;
        self.bash_pid.store(bash.pid(), Ordering::SeqCst);
        state.bash = Some(bash);
        Ok(())
    }

    /// The spare of the last bash as the session's bash in `start`, with
    /// a channel for its own spare; `None` when there is no spare (or it
    /// is gone).
    fn take_over(&self, channel: SpareChannel, start: &Path) -> Result<Option<Bash>> {
        let (next, theirs) = match self.forks_spares().then(|| SpareChannel::new(start)) {
            Some(Ok((ours, theirs))) => (Some(ours), Some(theirs)),
            Some(Err(e)) => {
                channel.discard();
                return Err(e);
            }
            None => (None, None),
        };
        let fifos = self.config.fifos.clone();
        let Some((supervised, input)) = channel.take_over(fifos.as_deref(), theirs) else {
            return Ok(None);
        };
        let bash = self.bash(supervised, input, fifos, next);
        if send_all(&bash.input, &protocol::spare_start(bash.out.as_raw_fd())).is_err() {
            // Gone since it took the pipes: a bash is started instead.
            reap(bash);
            return Ok(None);
        }
        Ok(Some(bash))
    }

    /// Whether the session's bashes fork spares: once it was reset, where
    /// the loop builtin runs, unsandboxed (a sandbox's process limits and
    /// namespaces are the bash's own).
    pub(super) fn forks_spares(&self) -> bool {
        cfg!(target_os = "linux")
            && self.resets.load(Ordering::SeqCst)
            && self.config.engine.builtin.is_some()
            && self.config.confinement.is_none()
    }
}
