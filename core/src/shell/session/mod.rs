//! `Shell`: one long-lived real bash that runs command after command.
//!
//! bash runs in its own session as a child subreaper, killed if the host
//! dies. Commands arrive as data on a socket (see [`crate::protocol`]), their
//! stdout and stderr share one pipe, and completion arrives on a separate
//! status pipe the command cannot write to. One `poll` on the caller's
//! thread watches output, status, bash's pidfd and a cancel waker, so a run
//! returns the moment its status arrives, abort and timeout act at once, and
//! a background job holding the output pipe can never hold a call. A run
//! that leaves something running hands bash a new pipe before it returns;
//! the old one, if something still holds it, becomes a job of the session
//! ([`crate::jobs`]), so what the job writes later is its own, never a
//! later run's.
//!
//! This file holds the session's life: creating it, collecting its bash,
//! closing it. The rest is by concern: `start.rs` (a bash's start and the
//! wait for its answer), `reset.rs` (the session started afresh, by a
//! spare bash where there is one), `run.rs`
//! (one run, as a state machine driven in steps), `event_loop.rs` (the
//! loop that watches a run until its status arrives or it is stopped),
//! `job_calls.rs` (the job entry points, and a run's leftovers made jobs)
//! and `state_guard.rs` (the session's state, held by one run at a time).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::process::Signal;

use super::engine::{Engine, Wanted};
use super::options::{ShellOptions, Snapshot};
use super::queue::{Place, Queue};
use super::reentry::BusyKey;
use super::snapshot;
use crate::cwd::{nearest_dir, start_dir, utf8_path};
use crate::jobs::JobTable;
use crate::output::carriage::CarriageReturn;
use crate::output::{Mask, Masker};
use crate::process::bash::find_bash;
use crate::process::child::Process;
use crate::process::env::{Env, build_env, validate_var};
use crate::process::fork;
use crate::process::io::{FifoDir, Waker, poll, pollin};
use crate::process::sandbox::{
    Confinement, NetworkControl, PidsCgroup, ProgramOutput, SandboxApplied, SessionSandbox,
    Violation, run_program,
};
use crate::process::spare::SpareChannel;
use crate::process::tree::{self, Escalation, Pid};
use crate::protocol::{self, Kind, StatusParser};
use crate::sync::lock;
use crate::{CancelToken, Error, Result};

mod event_loop;
mod job_calls;
mod reset;
mod run;
mod start;
mod state_guard;
mod watchdog;

pub use run::Run;
use state_guard::StateSlot;

/// How long bash may take to start and source the snapshot.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a stopping run checks whether the command's processes are gone.
const STOP_POLL: Duration = Duration::from_millis(1);

/// Everything fixed at creation.
struct Config {
    shell: PathBuf,
    /// Where the session's first bash started: where a reset starts one.
    start: PathBuf,
    env: Env,
    snapshot: Option<String>,
    unset_script: String,
    prefix: Option<String>,
    max_bytes: usize,
    artifacts: Option<crate::artifact::ArtifactStore>,
    escalation: Escalation,
    job_artifact_cap: u64,
    /// Which values of the env given to the session, its runs and its jobs
    /// are masked (see [`crate::output::mask`]).
    mask: Mask,
    /// The session's `env` pairs `mask` covers, and their masker (`None`:
    /// nothing to mask).
    secrets: Vec<(String, String)>,
    masker: Option<Masker>,
    /// How runs and jobs show carriage returns.
    carriage_return: CarriageReturn,
    /// The loop its bash is asked to run (see [`super::engine`]).
    engine: Wanted,
    /// What every bash of the session enters (see [`crate::process::sandbox`]).
    confinement: Option<Arc<Confinement>>,
    /// Where a sandboxed session's pipes are FIFOs (see [`named_pipe`]).
    fifos: Option<PathBuf>,
    /// The session's `pids` cgroup, when it has a process limit: a run
    /// stuck at the limit is stopped (`watchdog.rs`).
    pids: Option<Arc<PidsCgroup>>,
}

/// A live bash process and our ends of its pipes.
struct Bash {
    child: Process,
    input: OwnedFd,
    out: OwnedFd,
    status: OwnedFd,
    pidfd: OwnedFd,
    parser: StatusParser,
    seq: u64,
    /// bash answered the startup text (see [`Shell::ready`]).
    ready: bool,
    /// The loop that answered it (the eval loop until then).
    engine: Engine,
    /// A command's `exit` replaced the bash in this process with a fresh
    /// one (protocol's `EXIT_TRAP`): the next run is a reset.
    replaced: bool,
    /// When it must have answered its start-up text (set when a run first
    /// waits for it).
    ready_by: Option<Instant>,
    /// Where its pipes are FIFOs (a sandboxed session, or any where there is
    /// no `/proc`: see [`named_pipe`]); `None`: plain pipes, opened through
    /// `/proc`.
    fifos: Option<PathBuf>,
    /// Its `EXIT` trap (`protocol::exit_trap`), which a run that says
    /// `trap` puts back.
    exit_trap: String,
    /// Its direct children, read before and after each run.
    children: tree::ChildrenOf,
    /// The channel of the spare it forks (see [`crate::process::spare`]).
    spare: Option<SpareChannel>,
}

impl Bash {
    /// One run for this bash (`protocol::run`).
    fn message(&self, kind: Kind, payload: &str) -> Vec<u8> {
        protocol::run(self.seq, self.out.as_raw_fd(), kind, payload)
    }

    /// Where it opens the host's pipe ends by number.
    fn pipes(&self) -> String {
        match &self.fifos {
            Some(dir) => dir.to_string_lossy().into_owned(),
            None => format!("/proc/{}/fd", std::process::id()),
        }
    }
}

struct State {
    bash: Option<Bash>,
    /// A bash got through its start-up before, so the next start is a reset.
    started: bool,
    /// The bash was started afresh since the last run (for a job's start):
    /// the next run reports the reset.
    reset_pending: bool,
}

/// A persistent bash session. `Send + Sync`: `run` may be called from any
/// thread (runs queue in order), `abort` from any thread at any moment.
pub struct Shell {
    config: Config,
    state: Arc<StateSlot>,
    queue: Arc<Queue>,
    /// Marks the threads waiting for a run of this shell (its callbacks'
    /// threads), so a run started from a callback fails instead of waiting
    /// for itself.
    busy: BusyKey,
    /// The session cwd: where the last run left bash. Apart from `state`,
    /// so it is readable while a run holds `state` (from its own callback,
    /// say).
    cwd: Mutex<PathBuf>,
    current: Mutex<Option<CancelToken>>,
    bash_pid: AtomicI32,
    /// The loop the last bash that answered runs (`Engine as u8 + 1`; 0:
    /// none has answered yet).
    engine: AtomicU8,
    closed: AtomicBool,
    /// The session was reset: its bashes fork spares from now on.
    resets: AtomicBool,
    /// Wakes a run's `poll` when it is cancelled (one per shell, reset per run).
    waker: Arc<Waker>,
    /// What runs left writing in the background.
    jobs: JobTable,
    /// The session's sandbox (its temp directory, cgroups), closed with it.
    sandbox: Mutex<Option<SessionSandbox>>,
    sandbox_applied: Option<SandboxApplied>,
    /// Its domain policy's proxy, changed and read without the sandbox's
    /// lock (which a program run in the sandbox holds).
    network: Option<NetworkControl>,
    /// The directory of an unsandboxed session's FIFOs, where it needs one
    /// ([`FifoDir`]); removed with the session.
    _fifo_dir: Option<FifoDir>,
    /// The process that opened the session. In a child it forked, the
    /// session is the parent's: see [`Shell::foreign`].
    owner: u32,
}

impl Shell {
    /// Starts bash (failing early for a bad shell path or cwd). It does not
    /// wait for bash to get through its start-up (a few milliseconds, more
    /// with a large snapshot): the first run does, so a host can open many
    /// sessions at once and they start in parallel. A shell that starts but
    /// cannot run the session is reported by that run.
    pub fn new(opts: ShellOptions) -> Result<Shell> {
        let shell = find_bash(opts.shell.as_deref())?;
        let cwd = start_dir(opts.cwd.as_deref())?;
        for (k, v) in &opts.session_env {
            validate_var(k, v)?;
        }
        let snapshot = match &opts.snapshot {
            Snapshot::None => None,
            Snapshot::Auto => snapshot::for_shell(&shell),
            Snapshot::Path(p) => Some(p.clone()),
        };
        let snapshot = snapshot
            .map(|p| utf8_path(&p).map(str::to_string))
            .transpose()?;
        let engine = Wanted::resolve(opts.engine)?;
        let mut env = build_env(
            &opts.env_policy,
            opts.non_interactive_env,
            &opts.session_env,
        );
        let sandbox = match &opts.sandbox {
            Some(policy) => {
                let files: Vec<&Path> = (snapshot.as_deref().map(Path::new).into_iter())
                    .chain(engine.builtin.as_deref())
                    .collect();
                let sandbox = SessionSandbox::for_shell(policy, &cwd, &shell, &files)?;
                sandbox.set_env(&mut env);
                Some(sandbox)
            }
            None => None,
        };
        // Where bash cannot reopen the host's pipes through `/proc`, an
        // unsandboxed session's are FIFOs too.
        let fifo_dir = match &sandbox {
            Some(_) => None,
            None => FifoDir::for_session()?,
        };
        let config = Config {
            start: cwd.clone(),
            env,
            unset_script: opts.env_policy.bash_unset_script(),
            shell,
            snapshot,
            prefix: opts.prefix.clone(),
            max_bytes: opts.max_bytes,
            artifacts: opts.artifacts.clone(),
            escalation: opts.kill_ladder,
            job_artifact_cap: opts.job_artifact_cap,
            secrets: opts.mask.secrets(&opts.session_env),
            masker: opts.mask.masker(&opts.session_env),
            mask: opts.mask.clone(),
            carriage_return: opts.carriage_return,
            engine,
            confinement: sandbox.as_ref().map(SessionSandbox::confinement),
            fifos: sandbox
                .as_ref()
                .map(|s| s.pipes().to_path_buf())
                .or_else(|| fifo_dir.as_ref().map(|d| d.path().to_path_buf())),
            pids: sandbox
                .as_ref()
                .filter(|s| s.applied().processes)
                .zip(opts.sandbox.as_ref().and_then(|p| p.limits.processes))
                .and_then(|(s, limit)| {
                    PidsCgroup::of_session(&s.dir().file_name()?.to_string_lossy(), limit)
                })
                .map(Arc::new),
        };
        let queue: Arc<Queue> = Arc::default();
        let shell = Shell {
            config,
            state: Arc::new(StateSlot::new(State {
                bash: None,
                started: false,
                reset_pending: false,
            })),
            busy: BusyKey::of(queue.clone()),
            queue,
            cwd: Mutex::new(cwd),
            current: Mutex::new(None),
            bash_pid: AtomicI32::new(0),
            engine: AtomicU8::new(0),
            closed: AtomicBool::new(false),
            resets: AtomicBool::new(false),
            waker: Arc::new(Waker::new()?),
            jobs: JobTable::new(opts.max_jobs, opts.on_job_exit.clone()),
            sandbox_applied: sandbox.as_ref().map(|s| s.applied().clone()),
            network: sandbox.as_ref().and_then(SessionSandbox::network),
            sandbox: Mutex::new(sandbox),
            _fifo_dir: fifo_dir,
            owner: fork::current(),
        };
        {
            let mut state = shell.state.take();
            let bash = shell.spawn_bash(&shell.cwd(), None)?;
            shell.bash_pid.store(bash.pid(), Ordering::SeqCst);
            state.bash = Some(bash);
        }
        Ok(shell)
    }

    /// Makes sure a bash is there and ready: a dead one is buried, a
    /// missing one started (the next run then reports a reset).
    fn live_bash(&self, state: &mut State) -> Result<()> {
        self.prepare_bash(state)?;
        self.ready(state)
    }

    /// [`Shell::live_bash`] without the wait for a new bash's start-up.
    fn prepare_bash(&self, state: &mut State) -> Result<()> {
        if state.bash.as_ref().is_some_and(Bash::has_exited) {
            self.discard_dead_bash(state);
        }
        if state.bash.is_none() {
            let bash = self.spawn_bash(&self.start_cwd(), None)?;
            self.bash_pid.store(bash.pid(), Ordering::SeqCst);
            state.bash = Some(bash);
            state.reset_pending |= state.started;
        }
        if let Some(bash) = state.bash.as_mut().filter(|b| b.replaced) {
            bash.replaced = false;
            state.reset_pending = true;
        }
        Ok(())
    }

    /// Cancels the running command (if any), from any thread.
    pub fn abort(&self) {
        if let Some(token) = lock(&self.current).as_ref() {
            token.cancel();
        }
    }

    /// Pids of the processes bash still runs in the background (direct
    /// children of bash; orphans of a double fork are re-parented to it).
    pub fn background_jobs(&self) -> Vec<u32> {
        let pid = self.bash_pid.load(Ordering::SeqCst);
        if pid <= 0 {
            return Vec::new();
        }
        tree::children(pid)
            .into_iter()
            .filter(|&p| tree::is_alive(p))
            .map(|p| p as u32)
            .collect()
    }

    /// What of the session's sandbox is in force; `None`: the session has
    /// no sandbox. Everything asked is, unless the sandbox was made with
    /// `best_effort` on a kernel or host lacking something: then
    /// [`SandboxApplied::not_applied`] names it.
    pub fn sandbox_applied(&self) -> Option<&SandboxApplied> {
        self.sandbox_applied.as_ref()
    }

    /// Changes the domains a session started with a domain policy
    /// ([`crate::Network::Domains`]) may reach: the host approved a domain,
    /// or took one back. Connections made from now on are checked against
    /// `network` (a command running keeps its open ones); `Network::Deny`
    /// allows none. The whole network cannot be opened this way, and a
    /// session without a domain policy has nothing to change: both are
    /// [`Error::InvalidArgument`].
    pub fn set_network(&self, network: &crate::Network) -> Result<()> {
        self.check_open()?;
        match &self.network {
            Some(control) => control.set_network(network),
            None => Err(NetworkControl::absent()),
        }
    }

    /// Stops the session's domain proxy as if it had died, so tests can
    /// show that commands then fail closed.
    #[doc(hidden)]
    pub fn stop_network_proxy(&self) {
        if let Some(sandbox) = lock(&self.sandbox).as_mut() {
            sandbox.stop_proxy();
        }
    }

    /// The connections refused since the last run collected them: this
    /// run's, and what background jobs tried in between.
    fn take_violations(&self) -> Vec<Violation> {
        (self.network.as_ref())
            .map(NetworkControl::take_violations)
            .unwrap_or_default()
    }

    /// The store the session's outputs are spilled to (its
    /// `artifacts_dir`), for reading `artifact://<id>`; `None`: no
    /// artifacts.
    pub fn artifacts(&self) -> Option<&crate::artifact::ArtifactStore> {
        self.config.artifacts.as_ref()
    }

    /// The loop the session's bash runs (see [`crate::shell::engine`]):
    /// known once bash has answered its start-up text, which this waits for
    /// the first time (a bash that cannot start is the error a run would
    /// get).
    pub fn engine(&self) -> Result<Engine> {
        self.check_open()?;
        match self.engine.load(Ordering::SeqCst) {
            0 => {
                let mut state = self.state.take();
                self.live_bash(&mut state)?;
                Ok(state.bash.as_ref().expect("bash started above").engine)
            }
            known => Ok([Engine::Builtin, Engine::Eval][usize::from(known - 1)]),
        }
    }

    /// The session's current working directory, as the last run left it
    /// (never waits for a run in progress).
    pub fn cwd(&self) -> PathBuf {
        lock(&self.cwd).clone()
    }

    /// Where a new bash of this session starts: the session's cwd, or
    /// where [`Shell::move_off_removed_cwd`] moved it.
    fn start_cwd(&self) -> PathBuf {
        self.move_off_removed_cwd().unwrap_or_else(|| self.cwd())
    }

    /// When a command removed the session's cwd (`cd build && rm -rf
    /// ../build`, then a command that ended bash), makes the nearest
    /// directory above it the session's cwd and returns it: a session is
    /// never left unable to start a bash.
    fn move_off_removed_cwd(&self) -> Option<PathBuf> {
        let mut cwd = lock(&self.cwd);
        let nearest = nearest_dir(&cwd);
        (nearest != *cwd).then(|| {
            *cwd = nearest.clone();
            nearest
        })
    }

    /// The masker of a run's or a job's output: the session's secrets and
    /// those of its own `env` (`None`: nothing to mask).
    pub(super) fn masker(&self, env: &[(String, String)]) -> Option<Masker> {
        let own = self.config.mask.secrets(env);
        if own.is_empty() {
            return self.config.masker.clone();
        }
        Masker::of(self.config.secrets.iter().chain(&own).cloned())
    }

    /// Runs `program` with `args` to its end, `input` on its stdin, under
    /// this session's sandbox exactly as its bash is (none: unconfined),
    /// in the session's cwd: a host's helper that must reach what the
    /// session's commands reach, and nothing more. The sandbox is held for
    /// the run (a `close` meanwhile waits for it).
    pub fn run_program(
        &self,
        program: &Path,
        args: &[&str],
        input: &[u8],
    ) -> Result<ProgramOutput> {
        let sandbox = lock(&self.sandbox);
        self.check_open()?;
        let confinement = sandbox.as_ref().map(SessionSandbox::confinement);
        run_program(confinement, &self.cwd(), program, args, input)
    }

    /// Kills whatever the session still runs (the current command, background
    /// jobs, bash) and refuses further runs. Idempotent; also done on drop.
    /// Called from a callback of a run of this shell, it cancels that run
    /// and returns at once; the session ends as the run returns.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if self.foreign() {
            return;
        }
        self.abort();
        if self.busy.is_entered() {
            return;
        }
        self.end_session();
    }

    /// Kills bash and everything below it (once: bash is taken).
    fn end_session(&self) {
        let mut state = self.state.take();
        if let Some(spare) = self.end_runs(&mut state) {
            spare.discard();
        }
        if let Some(sandbox) = lock(&self.sandbox).as_mut() {
            sandbox.close();
        }
    }

    /// Ends everything the session runs: its jobs, then what bash runs,
    /// then bash, killed and collected. Returns bash's spare, left (a
    /// reset takes it, a close discards it).
    fn end_runs(&self, state: &mut State) -> Option<SpareChannel> {
        self.jobs.mark_all_killed();
        self.jobs.close();
        let mut bash = state.bash.take()?;
        self.bash_pid.store(0, Ordering::SeqCst);
        // Frozen first: bash starts nothing more while what it runs is
        // terminated.
        tree::signal_all(&[bash.pid()], Signal::STOP);
        tree::terminate(&tree::descendants(bash.pid()), self.config.escalation.grace);
        kill_bash(&mut bash);
        bash.spare.take()
    }

    /// Refuses a place taken on another shell (it would never be served).
    fn check_place(&self, place: &Place) -> Result<()> {
        if place.belongs_to(&self.queue) {
            Ok(())
        } else {
            Err(Error::InvalidArgument(
                "the queue place was taken on another shell".into(),
            ))
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.foreign() {
            Err(Error::InvalidArgument(format!(
                "this shell belongs to process {}, which opened it: a forked process opens \
                 shells of its own",
                self.owner
            )))
        } else if self.closed.load(Ordering::SeqCst) {
            Err(Error::Closed("shell"))
        } else {
            Ok(())
        }
    }

    /// Whether this is a copy of the session in a child the host forked
    /// (Python's `multiprocessing`, a pre-forking server): its bash, jobs,
    /// sandbox and directories are the parent's, which the child neither
    /// runs on nor closes (closing them at its exit killed the parent's
    /// session).
    fn foreign(&self) -> bool {
        fork::current() != self.owner
    }

    /// Forgets a bash that died between runs, killing what it left.
    fn discard_dead_bash(&self, state: &mut State) {
        if let Some(bash) = state.bash.take() {
            self.jobs.mark_all_killed();
            reap(bash);
        }
    }

    /// `command` as bash gets it: after the configured prefix, if any.
    fn prefixed(&self, command: &str) -> String {
        match &self.config.prefix {
            Some(prefix) => format!("{prefix} {command}"),
            None => command.to_string(),
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        if self.foreign() {
            // The parent's: not killed, not removed (only this process's
            // copies of its descriptors close, with the rest of `self`).
            let sandbox = self
                .sandbox
                .get_mut()
                .map_or_else(|e| e.into_inner().take(), Option::take);
            std::mem::forget(sandbox);
            std::mem::forget(self.network.take());
            std::mem::forget(self._fifo_dir.take());
            std::mem::forget(std::mem::replace(&mut self.jobs, JobTable::new(0, None)));
            return;
        }
        self.close();
    }
}

impl Bash {
    fn pid(&self) -> Pid {
        self.child.pid()
    }

    /// Whether bash has exited (its pidfd is readable), without blocking.
    fn has_exited(&self) -> bool {
        let mut fds = [pollin(self.pidfd.as_raw_fd())];
        poll(&mut fds, Some(Instant::now())).is_ok_and(|n| n > 0)
    }
}

/// Kills and collects bash (live or dead) with what is left of its session.
///
/// A bash frozen alive with nothing below it left nothing anywhere: as a
/// subreaper it gets the orphans of whatever it started. Once it is dead,
/// orphans keep the session id after re-parenting elsewhere, and only a
/// scan of every process on the machine reaches them; the scan comes
/// before the wait so the pid (and with it the session id) cannot have
/// been reused yet.
fn reap(mut bash: Bash) -> Option<std::process::ExitStatus> {
    let status = kill_bash(&mut bash);
    discard_spare(bash);
    status
}

/// [`reap`], leaving the spare.
fn kill_bash(bash: &mut Bash) -> Option<std::process::ExitStatus> {
    tree::signal_all(&[bash.pid()], Signal::STOP);
    let alone = tree::descendants(bash.pid()).is_empty() && !bash.has_exited();
    let _ = bash.child.kill();
    if !alone {
        tree::signal_all(&tree::session_members(bash.pid()), Signal::KILL);
    }
    bash.child.wait().ok()
}

/// Ends the spare of a bash that is gone, if it forked one.
fn discard_spare(mut bash: Bash) {
    if let Some(spare) = bash.spare.take() {
        spare.discard();
    }
}
