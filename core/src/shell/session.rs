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

use std::ffi::OsString;
use std::ops::{Deref, DerefMut};
use std::os::fd::{AsRawFd, OwnedFd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant, SystemTime};

use rustix::process::Signal;

use super::options::{RunOptions, ShellOptions, Snapshot};
use super::queue::{Place, Queue, Turn, Waited};
use super::reentry::BusyKey;
use super::snapshot;
use super::state::{self, Extra};
use crate::cancel::CancelGuard;
use crate::cwd::{resolve_dir, utf8_path};
use crate::jobs::{
    self, Control, JobId, JobInfo, JobOptions, JobPoll, JobStatus, JobTable, PollOptions,
    Processes, Role,
};
use crate::jobs::{JobSpec, NewJob};
use crate::output::sink::{OutputSink, SinkOptions};
use crate::private_dir;
use crate::process::child::Process;
use crate::process::env::os_env;
use crate::process::env::{build_env, validate_var};
use crate::process::io::{
    Read, Waker, named_pipe, output_pipe, poll, pollin, read, ready, send_all, socketpair,
};
use crate::process::pump::Pump;
use crate::process::pump::{DRAIN_BUDGET, read_error};
use crate::process::sandbox::{Confinement, SandboxApplied, SessionSandbox};
use crate::process::spawner::{HostDeath, Launch, dev_null, find_on_path};
use crate::process::stop::{Stop, Stopper};
use crate::process::supervised::{Supervised, describe_exit, spawn_supervised, status_code};
use crate::process::tree::{self, KillLadder, Pid, Rung};
use crate::process::watch::Watch;
use crate::protocol::{
    self, CommandText, INLINE_LIMIT, Kind, SEQ_MODULUS, Script, StatusParser, StatusRecord,
};
use crate::pty::Key;
use crate::run_result::{BashResult, Outcome, conclude};
use crate::sync::lock;
use crate::{CancelToken, Error, Result};

/// How long bash may take to start and source the snapshot.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a stopping run checks whether the command's processes are gone.
const STOP_POLL: Duration = Duration::from_millis(1);

/// Everything fixed at creation.
struct Config {
    shell: PathBuf,
    env: Vec<(String, String)>,
    snapshot: Option<String>,
    unset_script: String,
    prefix: Option<String>,
    max_bytes: usize,
    artifacts: Option<crate::artifact::ArtifactStore>,
    ladder: KillLadder,
    job_artifact_cap: u64,
    /// What every bash of the session enters (see [`crate::process::sandbox`]).
    confinement: Option<Arc<Confinement>>,
    /// Where a sandboxed session's pipes are FIFOs (see [`named_pipe`]).
    fifos: Option<PathBuf>,
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
    /// A command's `exit` replaced the bash in this process with a fresh
    /// one (protocol's `EXIT_TRAP`): the next run is a reset.
    replaced: bool,
    /// The state file it starts from, removed once it is ready.
    restore: Option<PathBuf>,
    /// When it must have answered its start-up text (set when a run first
    /// waits for it).
    ready_by: Option<Instant>,
    /// Where its pipes are FIFOs (a sandboxed session: see
    /// [`named_pipe`]); `None`: plain pipes, opened through `/proc`.
    fifos: Option<PathBuf>,
    /// Its `EXIT` trap (`protocol::exit_trap`), which a run that says
    /// `trap` puts back.
    exit_trap: String,
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
    closed: AtomicBool,
    /// Wakes a run's `poll` when it is cancelled (one per shell, reset per run).
    waker: Arc<Waker>,
    /// What runs left writing in the background.
    jobs: JobTable,
    /// The session's sandbox (its temp directory, cgroups), closed with it.
    sandbox: Mutex<Option<SessionSandbox>>,
    sandbox_applied: Option<SandboxApplied>,
}

/// How the event loop of one run ended.
struct Ending {
    record: Option<StatusRecord>,
    exited: bool,
    /// The command ended its bash with `exit`, which started a fresh one
    /// in the same process (protocol's `EXIT_TRAP`).
    replaced: bool,
    stop: Option<Stop>,
    /// bash's children when the run started (background jobs of earlier runs).
    baseline: Vec<Pid>,
    /// The command still ran at the run's `yield_after`.
    yielded: bool,
}

impl Shell {
    /// Starts bash (failing early for a bad shell path or cwd). It does not
    /// wait for bash to get through its start-up (a few milliseconds, more
    /// with a large snapshot): the first run does, so a host can open many
    /// sessions at once and they start in parallel. A shell that starts but
    /// cannot run the session is reported by that run.
    pub fn new(opts: ShellOptions) -> Result<Shell> {
        let shell = match &opts.shell {
            Some(p) => p.clone(),
            None => {
                find_on_path("bash").ok_or_else(|| Error::Spawn("bash not found on PATH".into()))?
            }
        };
        let host_cwd = std::env::current_dir()
            .map_err(|e| Error::io("cannot read the current directory", e))?;
        let cwd = match &opts.cwd {
            Some(dir) => resolve_dir(&host_cwd, dir)?,
            None => host_cwd,
        };
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
        let mut env = build_env(
            &opts.env_policy,
            opts.non_interactive_env,
            &opts.session_env,
        );
        let sandbox = match &opts.sandbox {
            Some(policy) => {
                let sandbox = SessionSandbox::for_shell(
                    policy,
                    &cwd,
                    &shell,
                    snapshot.as_deref().map(Path::new),
                )?;
                sandbox.set_tmpdir(&mut env);
                Some(sandbox)
            }
            None => None,
        };
        let config = Config {
            env,
            unset_script: opts.env_policy.bash_unset_script(),
            shell,
            snapshot,
            prefix: opts.prefix.clone(),
            max_bytes: opts.max_bytes,
            artifacts: opts.artifacts.clone(),
            ladder: opts.kill_ladder,
            job_artifact_cap: opts.job_artifact_cap,
            confinement: sandbox.as_ref().map(SessionSandbox::confinement),
            fifos: sandbox.as_ref().map(|s| s.pipes().to_path_buf()),
        };
        let queue: Arc<Queue> = Arc::default();
        let shell = Shell {
            config,
            state: Arc::new(StateSlot {
                state: Mutex::new(Some(State {
                    bash: None,
                    started: false,
                    reset_pending: false,
                })),
                back: Condvar::new(),
            }),
            busy: BusyKey::of(queue.clone()),
            queue,
            cwd: Mutex::new(cwd),
            current: Mutex::new(None),
            bash_pid: AtomicI32::new(0),
            closed: AtomicBool::new(false),
            waker: Arc::new(Waker::new()?),
            jobs: JobTable::new(opts.max_jobs, opts.on_job_exit.clone()),
            sandbox_applied: sandbox.as_ref().map(|s| s.applied().clone()),
            sandbox: Mutex::new(sandbox),
        };
        {
            let mut state = shell.state.lease();
            let bash = shell.spawn_bash(&shell.cwd(), None)?;
            shell.bash_pid.store(bash.pid(), Ordering::SeqCst);
            state.bash = Some(bash);
        }
        Ok(shell)
    }

    /// Runs one command, streaming sanitized output to `on_chunk` on this
    /// thread. Timeout and cancellation are results, not errors; errors are
    /// bad input, a closed shell, or a bash that cannot be started.
    /// Concurrent runs take their turns in the order they called `run`.
    pub fn run(&self, opts: RunOptions, on_chunk: impl FnMut(&str)) -> Result<BashResult> {
        self.run_in_place(self.reserve()?, opts, on_chunk)
    }

    /// Takes the next place in this shell's run queue, for a run made later
    /// with [`Shell::run_in_place`], possibly on another thread. A host that
    /// hands runs to worker threads takes the place where the call was made,
    /// so runs keep the order of the calls whichever worker starts first. A
    /// place dropped unused is given up.
    ///
    /// Fails when this thread is inside a callback of a run of this shell
    /// (see [`Shell::busy_key`]): that place would never be served.
    pub fn reserve(&self) -> Result<Place> {
        self.busy.check("Shell.run")?;
        Ok(self.queue.place())
    }

    /// The mark of the threads waiting for a run of this shell. A face that
    /// calls a run's callbacks on a thread other than the one running it
    /// holds [`BusyKey::enter`] there while it does, so that a callback
    /// which starts a run on this shell, or closes it, does not wait for
    /// itself.
    pub fn busy_key(&self) -> &BusyKey {
        &self.busy
    }

    /// [`Shell::run`] at a place taken earlier with [`Shell::reserve`]
    /// (on this shell: a place of another shell is refused).
    pub fn run_in_place(
        &self,
        place: Place,
        opts: RunOptions,
        mut on_chunk: impl FnMut(&str),
    ) -> Result<BashResult> {
        let mut run = Run::new(self, place, opts);
        match run.drive(None, &mut on_chunk) {
            Poll::Ready(result) => result,
            Poll::Pending => unreachable!("a run driven without a deadline ends"),
        }
    }

    /// Drives `stage` on this thread until the run ends or `until` passes.
    fn step(
        &self,
        stage: &mut Stage,
        until: Option<Instant>,
        on_chunk: &mut dyn FnMut(&str),
    ) -> Poll<Result<BashResult>> {
        if matches!(stage, Stage::Queued { .. }) {
            let Stage::Queued { place, opts } = std::mem::replace(stage, Stage::Ended) else {
                unreachable!("queued")
            };
            match self.start_run(place, opts, until) {
                Err(e) => return Poll::Ready(Err(e)),
                Ok(Begun::Later(place, opts)) => {
                    *stage = Stage::Queued { place, opts };
                    return Poll::Pending;
                }
                Ok(Begun::Ended(result)) => return Poll::Ready(Ok(result)),
                Ok(Begun::Started(started)) => *stage = Stage::Started(started),
            }
        }
        let Stage::Started(run) = stage else {
            return Poll::Ready(Err(Error::InvalidArgument(
                "this run has ended already".into(),
            )));
        };
        match self.go_on(run, until, on_chunk) {
            Ok(None) => Poll::Pending,
            Ok(Some(ending)) => {
                let Stage::Started(run) = std::mem::replace(stage, Stage::Ended) else {
                    unreachable!("started")
                };
                Poll::Ready(self.finish(*run, ending, on_chunk))
            }
            Err(e) => {
                *lock(&self.current) = None;
                // A bash left in the middle of a command is killed as the
                // run drops (see `Lease`).
                *stage = Stage::Ended;
                Poll::Ready(Err(e))
            }
        }
    }

    /// Waits for the turn (up to `until`) and takes the session.
    fn start_run(
        &self,
        place: Place,
        opts: Box<RunOptions>,
        until: Option<Instant>,
    ) -> Result<Begun> {
        self.check_place(&place)?;
        self.check_open()?;
        check_command(&opts.command, &opts.env)?;
        let cancel = opts.cancel.clone().unwrap_or_default();
        let turn = match place.wait_until(&cancel, until) {
            Waited::Later(place) => return Ok(Begun::Later(place, opts)),
            Waited::Cancelled => None,
            Waited::Turn(turn) => Some(turn),
        };
        let started = (SystemTime::now(), Instant::now());
        self.check_open()?;
        let mut state = self.state.lease();
        let run_cwd = match &opts.cwd {
            Some(dir) => Some(resolve_dir(&self.cwd(), dir)?),
            None => None,
        };
        let artifact = opts.artifact.clone().or_else(|| {
            self.config
                .artifacts
                .as_ref()
                .map(|store| store.slot("bash"))
        });
        let sink = OutputSink::new(SinkOptions {
            max_bytes: self.config.max_bytes,
            head_lines: opts.head_lines,
            artifact,
            ..SinkOptions::default()
        });
        let session_cwd = Some(self.cwd().to_string_lossy().into_owned());
        let Some(turn) = turn.filter(|_| !cancel.is_cancelled()) else {
            return Ok(Begun::Ended(BashResult::cancelled_before_start(
                sink.dump(None),
                session_cwd,
            )));
        };
        self.prepare_bash(&mut state)?;
        Ok(Begun::Started(Box::new(Started {
            opts: *opts,
            lease: state,
            run_cwd,
            started,
            pump: Some(Pump::new(sink, &mut |_: &str| {}).into_parts()),
            sent: None,
            _turn: turn,
        })))
    }

    /// Waits (up to `until`) for bash to be ready, sends the command, and
    /// drives it; `None` if it still runs at `until`.
    fn go_on(
        &self,
        run: &mut Started,
        until: Option<Instant>,
        on_chunk: &mut dyn FnMut(&str),
    ) -> Result<Option<Ending>> {
        if run.sent.is_none() {
            if !self.ready_until(&mut run.lease, until)? {
                return Ok(None);
            }
            run.sent = Some(self.send(run)?);
            run.lease.mid_command = true;
        }
        let sent = run.sent.as_mut().expect("sent above");
        let mut pump = Pump::from_parts(run.pump.take().expect("the run's sink"), on_chunk);
        let bash = run.lease.bash.as_mut().expect("bash present");
        let ending = drive(bash, &mut pump, &self.waker, &mut sent.looping, until);
        run.pump = Some(pump.into_parts());
        ending
    }

    /// Sends the command of `run` to its ready bash.
    fn send(&self, run: &mut Started) -> Result<Sent> {
        let state = &mut *run.lease;
        let opts = &run.opts;
        let reset = std::mem::take(&mut state.reset_pending);
        // The state to go on with if the command is moved to the
        // background: taken before it runs.
        let standby = match opts.yield_after {
            Some(after) if self.jobs.check_room().is_ok() => {
                let bash = state.bash.as_mut().expect("bash started above");
                Some((after, self.dump_state(bash)?))
            }
            _ => None,
        };

        let run_token = CancelToken::new();
        let cancel = opts.cancel.clone().unwrap_or_default();
        let link = cancel.on_cancel({
            let t = run_token.clone();
            move || t.cancel()
        });
        *lock(&self.current) = Some(run_token.clone());
        if self.closed.load(Ordering::SeqCst) {
            // `close` ran between the check above and now: its abort found
            // no run to cancel, so this run cancels itself.
            run_token.cancel();
        }
        let waker = self.waker.clone();
        waker.reset();
        let wake = run_token.on_cancel({
            let w = waker.clone();
            move || w.wake()
        });

        let command = self.prefixed(&opts.command);
        let home = self.cwd();
        let cwd_text = match run.run_cwd.as_deref() {
            Some(dir) => Some((utf8_path(dir)?, utf8_path(&home)?)),
            None => None,
        };
        let bash = state.bash.as_mut().expect("bash started above");
        let looping = send_line(
            bash,
            Line {
                command: &command,
                cwd: cwd_text,
                env: &opts.env,
                yield_at: standby.as_ref().map(|(after, _)| run.started.1 + *after),
            },
            Stopper::new(opts.timeout, run_token.clone(), self.config.ladder),
        )?;
        Ok(Sent {
            reset,
            run_token,
            standby,
            _links: [link, wake],
            looping,
        })
    }

    /// What follows the end of the command: the session's cwd, a bash
    /// replaced or gone, what the command left running, the result.
    fn finish(
        &self,
        run: Started,
        ending: Ending,
        on_chunk: &mut dyn FnMut(&str),
    ) -> Result<BashResult> {
        *lock(&self.current) = None;
        let Started {
            opts,
            lease: mut state,
            started,
            pump,
            sent,
            _turn,
            ..
        } = run;
        state.mid_command = false;
        let Sent { reset, standby, .. } = sent.expect("a command that ended was sent");
        let mut pump = Pump::from_parts(pump.expect("the run's sink"), on_chunk);
        if ending.yielded
            && let Some((after, dump)) = standby
        {
            let job = self.background(&mut state, &opts, started, &dump, ending.baseline)?;
            let outcome = Outcome {
                exit_code: None,
                stop: None,
                working_dir: Some(self.cwd().to_string_lossy().into_owned()),
                session_reset: reset,
                session_ended: false,
                backgrounded: Some((job, after)),
            };
            drop(state);
            return Ok(conclude(pump, outcome, opts.timeout, None, None));
        }

        let mut exit_code = ending.record.as_ref().map(|r| r.status);
        if let Some(rec) = &ending.record {
            *lock(&self.cwd) = PathBuf::from(&rec.cwd);
        }
        if ending.replaced {
            let bash = state.bash.as_mut().expect("bash present");
            if self.restart(bash).is_err() {
                // It cannot take the new start-up: the next run starts afresh.
                self.bury(&mut state);
            }
        } else if ending.exited {
            self.jobs.mark_all_killed();
            let status = reap(state.bash.take().expect("bash present"));
            exit_code = exit_code.or_else(|| status.and_then(status_code));
        } else if ending.stop.is_some() {
            // What the command started and left behind dies with it.
            let bash = state.bash.as_ref().expect("bash present");
            let left = targets(bash.pid(), &ending.baseline);
            tree::terminate(&left, self.config.ladder.grace);
        }
        if let Some(bash) = state.bash.as_mut().filter(|b| !b.replaced) {
            let left = new_children(bash, &ending.baseline);
            if !left.is_empty()
                && let Some(old) = switch_output(bash, &mut pump)?
            {
                self.adopt(old, left, &opts.command, started);
            }
        }
        let outcome = Outcome {
            exit_code,
            stop: ending.stop,
            working_dir: Some(self.cwd().to_string_lossy().into_owned()),
            session_reset: reset,
            session_ended: ending.exited || ending.replaced,
            backgrounded: None,
        };
        drop(state);
        Ok(conclude(
            pump,
            outcome,
            opts.timeout,
            opts.head_lines,
            opts.tail_lines,
        ))
    }

    /// Makes the output pipe of a run that left `left` running, something
    /// still holding it, a job.
    fn adopt(&self, out: OwnedFd, left: Vec<Pid>, command: &str, started: (SystemTime, Instant)) {
        let processes = Processes::Left {
            pids: left,
            grace: self.config.ladder.grace,
        };
        self.jobs.add(NewJob {
            spec: self.job_spec(command, started, processes, None),
            output: out,
            status: None,
            initial_status: Vec::new(),
        });
    }

    /// A job's description, with the session's bounds on its output.
    fn job_spec(
        &self,
        command: &str,
        started: (SystemTime, Instant),
        processes: Processes,
        timeout: Option<Duration>,
    ) -> JobSpec {
        let sink = SinkOptions {
            max_bytes: self.config.max_bytes,
            artifact: self
                .config
                .artifacts
                .as_ref()
                .map(|store| store.slot("job")),
            artifact_cap: Some(self.config.job_artifact_cap),
            ..SinkOptions::default()
        };
        JobSpec {
            command: command.to_string(),
            started,
            processes,
            timeout,
            sink,
        }
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
            self.bury(state);
        }
        if state.bash.is_none() {
            let bash = self.spawn_bash(&self.cwd(), None)?;
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

    /// Has the session's bash write its state (see [`state`]) and reads it.
    fn dump_state(&self, bash: &mut Bash) -> Result<Vec<u8>> {
        // A sandboxed bash writes only where its sandbox lets it.
        let dir = match lock(&self.sandbox).as_ref() {
            Some(sandbox) => sandbox.dir().to_path_buf(),
            None => private_dir::private_dir()?.clone(),
        };
        let path = dir.join(private_dir::unique_name("state"));
        let failed =
            |why: String| Error::Spawn(format!("the session's bash did not give its state: {why}"));
        bash.seq = (bash.seq + 1) % SEQ_MODULUS;
        let script = state::dump_script(utf8_path(&path)?);
        send_all(&bash.input, &bash.message(Kind::Script, &script))
            .map_err(|e| failed(e.to_string()))?;
        wait_record(bash, bash.seq, STARTUP_TIMEOUT).map_err(failed)?;
        let dump =
            std::fs::read(&path).map_err(|e| Error::io("cannot read the session's state", e));
        let _ = std::fs::remove_file(&path);
        dump
    }

    /// The command of a run still going at its `yield_after`: its bash
    /// becomes the job (its output, its status, its whole tree), and a new
    /// bash, given the state `dump` from before the command, becomes the
    /// session's. Returns the job.
    fn background(
        &self,
        state: &mut State,
        opts: &RunOptions,
        started: (SystemTime, Instant),
        dump: &[u8],
        spared: Vec<Pid>,
    ) -> Result<JobId> {
        let mut old = state.bash.take().expect("bash present");
        self.bash_pid.store(0, Ordering::SeqCst);
        // Read after the command: bash lets go of the output (so the job
        // ends when what the command left closes it) and of the status
        // pipe, then waits until the job is over.
        // The command's record carries its exit status.
        let seq = old.seq;
        old.seq = (old.seq + 1) % SEQ_MODULUS;
        let _ = send_all(&old.input, &old.message(Kind::Script, protocol::RELEASE));
        let Bash {
            child,
            input,
            out,
            status,
            parser,
            ..
        } = old;
        let control = Control::new(
            child,
            input,
            Role::Session { spared, seq },
            self.config.ladder.grace,
        );
        let timeout = opts.timeout;
        let id = self.jobs.add(NewJob {
            spec: self.job_spec(
                &opts.command,
                started,
                Processes::Root { control, seq },
                timeout,
            ),
            output: out,
            status: Some(status),
            initial_status: parser.into_pending(),
        });
        let restore = private_dir::write_private(
            &private_dir::unique_name("session"),
            state::restore_text(dump, &Extra::default()).as_bytes(),
        )?;
        let bash = self.spawn_bash(&self.cwd(), Some(restore))?;
        self.bash_pid.store(bash.pid(), Ordering::SeqCst);
        state.bash = Some(bash);
        id.ok_or_else(|| Error::Spawn("cannot read the output of a background job".into()))
    }

    /// The jobs of this session: what runs left writing in the background,
    /// running or among the last finished (see [`crate::jobs`]). Never waits
    /// for a run.
    pub fn jobs(&self) -> Vec<JobInfo> {
        self.jobs.list()
    }

    /// Reads a job's output (see [`PollOptions`]), waiting at most
    /// `opts.wait` for it to end or for `opts.until` to match; `cancel`
    /// ends the wait early (never the job). Never waits for a run, and a
    /// run never waits for it.
    pub fn poll(
        &self,
        job: JobId,
        opts: &PollOptions,
        cancel: Option<&CancelToken>,
    ) -> Result<JobPoll> {
        self.check_open()?;
        let found = self.jobs.get(job)?;
        let none = CancelToken::new();
        Ok(found.poll(opts, self.config.max_bytes, cancel.unwrap_or(&none)))
    }

    /// Starts `opts.command` as a job beside the session and returns its
    /// id at once (see [`crate::jobs`]): it runs in a bash of its own,
    /// given the session's state as it is now (it waits for the runs
    /// called before it), and nothing it changes reaches the session.
    /// Fails with [`Error::TooManyJobs`] when the session runs
    /// `max_jobs` jobs already; nothing is started then.
    pub fn start(&self, opts: JobOptions) -> Result<JobId> {
        self.busy.check("Shell.start")?;
        self.start_in_place(self.queue.place(), opts)
    }

    /// [`Shell::start`] at a place taken earlier with [`Shell::reserve`]:
    /// the job is given the session's state as the runs called before the
    /// place was taken left it, whichever thread gets here first.
    pub fn start_in_place(&self, place: Place, opts: JobOptions) -> Result<JobId> {
        self.check_place(&place)?;
        self.check_open()?;
        check_command(&opts.command, &opts.env)?;
        if let Some((cols, rows)) = opts.pty
            && (cols == 0 || rows == 0)
        {
            return Err(Error::InvalidArgument(format!(
                "a job's terminal needs at least 1 column and 1 row, got {cols}x{rows}"
            )));
        }
        self.jobs.check_room()?;
        let _turn = place.wait(&CancelToken::new());
        self.check_open()?;
        let started = (SystemTime::now(), Instant::now());
        let mut state = self.state.lease();
        let cwd = match &opts.cwd {
            Some(dir) => resolve_dir(&self.cwd(), dir)?,
            None => self.cwd(),
        };
        self.live_bash(&mut state)?;
        let bash = state.bash.as_mut().expect("bash started above");
        let dump = self.dump_state(bash)?;
        drop(state);
        let command = self.prefixed(&opts.command);
        let mut env = opts.env.clone();
        if opts.pty.is_some() && !env.iter().any(|(k, _)| k == "TERM") {
            env.push(("TERM".into(), "xterm-256color".into()));
        }
        let text = state::restore_text(
            &dump,
            &Extra {
                env: &env,
                command: Some(&command),
                ..Extra::default()
            },
        );
        let file = private_dir::write_private(&private_dir::unique_name("job"), text.as_bytes())?;
        let launched = jobs::launch(jobs::Spec {
            shell: &self.config.shell,
            name: &self.shell_name(),
            state: file.clone(),
            cwd: &cwd,
            stdin: opts.stdin,
            pty: opts.pty,
            grace: self.config.ladder.grace,
            sandbox: self.config.confinement.clone(),
        });
        let jobs::Launched {
            control,
            output,
            status,
            initial_status,
        } = match launched {
            Ok(launched) => launched,
            Err(e) => {
                let _ = std::fs::remove_file(&file);
                return Err(e);
            }
        };
        let processes = Processes::Root {
            control,
            seq: jobs::ROOT_SEQ,
        };
        self.jobs
            .add(NewJob {
                spec: self.job_spec(&opts.command, started, processes, opts.timeout),
                output,
                status: Some(status),
                initial_status,
            })
            .ok_or_else(|| Error::Spawn("cannot read the output of a job".into()))
    }

    /// Writes `data` to a job's input: its stdin pipe (a job started with
    /// `stdin`) or its terminal. Waits while the job does not read, up to
    /// a bound. Fails with [`Error::NoInput`] for a job that takes none
    /// (ended, input closed, started without one).
    pub fn write(&self, job: JobId, data: &[u8]) -> Result<()> {
        self.check_open()?;
        let found = self.jobs.get(job)?;
        let what = format!("job {job}");
        match found.control() {
            Some(control) if found.is_running() => control.write(data, &what),
            Some(_) => Err(Error::NoInput(format!("{what} has ended"))),
            None => Err(Error::NoInput(format!(
                "{what} takes no input (it was left running by a command)"
            ))),
        }
    }

    /// Ends a job's input: its stdin pipe closes; on a terminal, ctrl+d.
    pub fn close_stdin(&self, job: JobId) -> Result<()> {
        self.check_open()?;
        let found = self.jobs.get(job)?;
        let what = format!("job {job}");
        match found.control() {
            Some(control) if found.is_running() => control.close_input(&what),
            Some(_) => Err(Error::NoInput(format!("{what} has ended"))),
            None => Err(Error::NoInput(format!("{what} takes no input"))),
        }
    }

    /// Sends a key to a job on a terminal, by name as the PTY engine
    /// takes them (`"ctrl+c"`, `"enter"`, `"up"`).
    pub fn write_key(&self, job: JobId, key: &str) -> Result<()> {
        let key = Key::parse(key)?;
        self.check_open()?;
        let found = self.jobs.get(job)?;
        if !found.control().is_some_and(Control::is_terminal) {
            return Err(Error::NoInput(format!(
                "job {job} has no terminal: keys need a job started with a PTY"
            )));
        }
        self.write(job, &key.encode(false))
    }

    /// Sends a signal (`"TERM"`, `"SIGINT"`, `"9"`…) to every process of a
    /// running job.
    pub fn signal(&self, job: JobId, signal: &str) -> Result<()> {
        let signal = crate::input::signal_option("signal", signal)?;
        self.check_open()?;
        let found = self.jobs.get(job)?;
        if found.is_running() {
            found.signal(signal);
        }
        Ok(())
    }

    /// Kills a job's whole tree with the kill ladder (SIGINT, SIGTERM,
    /// SIGKILL, the grace between) and returns its final poll: what it
    /// wrote since the last poll, status `killed` (or how it had ended).
    pub fn kill(&self, job: JobId) -> Result<JobPoll> {
        self.check_open()?;
        let found = self.jobs.get(job)?;
        found.kill(JobStatus::Killed);
        Ok(found.poll(
            &PollOptions::default(),
            self.config.max_bytes,
            &CancelToken::new(),
        ))
    }

    /// The first of `jobs` that has ended, waiting up to `timeout` for one
    /// to; `None` when none did, or when `cancel` ended the wait. Fails for
    /// an id the session does not have. Closing the shell meanwhile kills
    /// the jobs, which ends the wait.
    pub fn wait_any(
        &self,
        jobs: &[JobId],
        timeout: Duration,
        cancel: Option<&CancelToken>,
    ) -> Result<Option<JobId>> {
        self.check_open()?;
        let none = CancelToken::new();
        self.jobs.wait_any(jobs, timeout, cancel.unwrap_or(&none))
    }

    /// Whether some job of the session still runs.
    pub fn runs_jobs(&self) -> bool {
        self.jobs
            .list()
            .iter()
            .any(|j| j.status == JobStatus::Running)
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

    /// The session's current working directory, as the last run left it
    /// (never waits for a run in progress).
    pub fn cwd(&self) -> PathBuf {
        lock(&self.cwd).clone()
    }

    /// Kills whatever the session still runs (the current command, background
    /// jobs, bash) and refuses further runs. Idempotent; also done on drop.
    /// Called from a callback of a run of this shell, it cancels that run
    /// and returns at once; the session ends as the run returns.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.abort();
        if self.busy.is_entered() {
            return;
        }
        self.end_session();
    }

    /// Kills bash and everything below it (once: bash is taken).
    fn end_session(&self) {
        let mut state = self.state.lease();
        self.jobs.mark_all_killed();
        self.jobs.close();
        if let Some(bash) = state.bash.take() {
            // Frozen first: bash starts nothing more while what it runs is
            // terminated.
            tree::signal_all(&[bash.pid()], Signal::STOP);
            tree::terminate(&tree::descendants(bash.pid()), self.config.ladder.grace);
            reap(bash);
        }
        self.bash_pid.store(0, Ordering::SeqCst);
        if let Some(sandbox) = lock(&self.sandbox).as_mut() {
            sandbox.close();
        }
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
        if self.closed.load(Ordering::SeqCst) {
            Err(Error::Closed("shell"))
        } else {
            Ok(())
        }
    }

    /// Forgets a bash that died between runs, killing what it left.
    fn bury(&self, state: &mut State) {
        if let Some(bash) = state.bash.take() {
            self.jobs.mark_all_killed();
            reap(bash);
        }
    }

    /// Starts bash in `cwd` and sends it the start-up text (the snapshot
    /// and the protocol loop); [`Shell::ready`] waits for its answer.
    /// With `restore`, a state file (see [`state`]) the bash sources in
    /// place of the snapshot, with an empty environment (the file sets
    /// the session's); it is removed once bash is ready.
    fn spawn_bash(&self, cwd: &Path, restore: Option<PathBuf>) -> Result<Bash> {
        let (theirs, input) = socketpair()?;
        let launch = Launch {
            program: self.config.shell.clone(),
            // `$0` is the shell's name, as in `bash -c` run from a `PATH`.
            arg0: Some(self.shell_name().into()),
            args: ["--noprofile", "--norc", "-c", protocol::BOOTSTRAP]
                .map(OsString::from)
                .into(),
            env: match restore {
                Some(_) => Vec::new(),
                None => os_env(&self.config.env),
            },
            cwd: Some(cwd.to_path_buf()),
            on_host_death: HostDeath::Freeze,
            sandbox: self.config.confinement.clone(),
            ..Launch::default()
        };
        let stdin = dev_null().map_err(|e| Error::io("cannot open /dev/null", e))?;
        let fifos = self.config.fifos.clone();
        let Supervised {
            child,
            out,
            status,
            pidfd,
        } = spawn_supervised(launch, stdin, Some(theirs), fifos.as_deref())?;
        let mut bash = Bash {
            child,
            input,
            out,
            status,
            pidfd,
            parser: StatusParser::default(),
            seq: 0,
            ready: false,
            replaced: false,
            restore,
            ready_by: None,
            fifos,
            exit_trap: String::new(),
        };
        bash.exit_trap = protocol::exit_trap(&protocol::ExitTrap {
            pipes: &bash.pipes(),
            status_fd: bash.status.as_raw_fd(),
            shell: &self.config.shell.to_string_lossy(),
            name: &self.shell_name(),
        });
        let text = self.startup_text(&bash, true);
        if let Err(e) = send_all(&bash.input, &text) {
            return Err(self.failed_start(bash, format!("cannot send to it: {e}")));
        }
        Ok(bash)
    }

    /// `command` as bash gets it: after the configured prefix, if any.
    fn prefixed(&self, command: &str) -> String {
        match &self.config.prefix {
            Some(prefix) => format!("{prefix} {command}"),
            None => command.to_string(),
        }
    }

    /// The shell's file name (`bash`): its `$0` in the session.
    fn shell_name(&self) -> String {
        self.config.shell.file_name().map_or_else(
            || self.config.shell.to_string_lossy().into_owned(),
            |name| name.to_string_lossy().into_owned(),
        )
    }

    /// The start-up text for `bash`: `first` for the bash the host started
    /// (its environment set), else for the one a command's `exit` put in
    /// its place.
    fn startup_text(&self, bash: &Bash, first: bool) -> Vec<u8> {
        let restore = bash
            .restore
            .as_deref()
            .and_then(Path::to_str)
            .filter(|_| first);
        protocol::startup(&protocol::Startup {
            snapshot: self
                .config
                .snapshot
                .as_deref()
                .filter(|_| restore.is_none()),
            unset_script: if restore.is_some() {
                ""
            } else {
                &self.config.unset_script
            },
            restore,
            exit_trap: &bash.exit_trap,
            out_fd: bash.out.as_raw_fd(),
            exports: if first { &[] } else { &self.config.env },
        })
    }

    /// Sends the start-up text to the fresh bash a command's `exit` put in
    /// the place of the old one; the next run waits for its answer.
    fn restart(&self, bash: &mut Bash) -> std::io::Result<()> {
        bash.parser = StatusParser::default();
        bash.seq = 0;
        bash.ready = false;
        bash.ready_by = None;
        bash.replaced = true;
        send_all(&bash.input, &self.startup_text(bash, false))
    }

    /// Waits, once per bash, until it has sourced the snapshot and entered
    /// the protocol loop; a bash that does not is killed and reported.
    fn ready(&self, state: &mut State) -> Result<()> {
        self.ready_until(state, None).map(drop)
    }

    /// [`Shell::ready`], waiting no later than `until`: false if bash has
    /// not answered by then (and its start-up time is not up).
    fn ready_until(&self, state: &mut State, until: Option<Instant>) -> Result<bool> {
        let bash = state.bash.as_mut().expect("bash started");
        if bash.ready {
            return Ok(true);
        }
        let by = *bash
            .ready_by
            .get_or_insert_with(|| Instant::now() + STARTUP_TIMEOUT);
        let started = match wait_record_until(bash, 0, (by, STARTUP_TIMEOUT), until) {
            Ok(None) => return Ok(false),
            Ok(Some(_)) => Ok(()),
            Err(why) => Err(why),
        };
        if let Some(file) = bash.restore.take() {
            let _ = std::fs::remove_file(file);
        }
        match started {
            Ok(()) => {
                bash.ready = true;
                state.started = true;
                Ok(true)
            }
            Err(why) => {
                let bash = state.bash.take().expect("bash started");
                self.bash_pid.store(0, Ordering::SeqCst);
                Err(self.failed_start(bash, why))
            }
        }
    }

    fn failed_start(&self, bash: Bash, why: String) -> Error {
        let ended = match reap(bash) {
            Some(status) => describe_exit(status),
            None => "it could not be waited for".to_string(),
        };
        Error::Spawn(format!(
            "{} did not start a session: {why} ({ended})",
            self.config.shell.display()
        ))
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
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

/// Refuses a command bash cannot be given (a NUL byte) and variables it
/// cannot hold, before anything waits or runs.
fn check_command(command: &str, env: &[(String, String)]) -> Result<()> {
    if command.contains('\0') {
        return Err(Error::InvalidArgument("command contains a NUL byte".into()));
    }
    env.iter().try_for_each(|(k, v)| validate_var(k, v))
}

/// Gives bash a new output pipe, for a run that left something running
/// (`protocol::switch_output`): what it left keeps the old pipe. Drains
/// the old pipe into `pump` (what arrived before the switch is the run's
/// output) and returns it when something still holds it, to become a job;
/// `None` when nothing does, or when bash could not take the new pipe (it
/// then keeps the old one).
fn switch_output(bash: &mut Bash, pump: &mut Pump<'_>) -> Result<Option<OwnedFd>> {
    let (read_end, write_end) = match &bash.fifos {
        Some(dir) => named_pipe(dir)?,
        None => output_pipe()?,
    };
    // bash opens the read end for writing: ours is not needed.
    drop(write_end);
    bash.seq = (bash.seq + 1) % SEQ_MODULUS;
    let script = protocol::switch_output(&bash.pipes(), read_end.as_raw_fd());
    let switched = send_all(&bash.input, &bash.message(Kind::Script, &script)).is_ok()
        && wait_record(bash, bash.seq, STARTUP_TIMEOUT).is_ok_and(|r| r.status == 0);
    if !switched {
        return Ok(None);
    }
    let old = std::mem::replace(&mut bash.out, read_end);
    let ended = pump
        .read_available(old.as_raw_fd(), DRAIN_BUDGET)
        .map_err(read_error)?;
    Ok((!ended).then_some(old))
}

/// Where the session's [`State`] lives between runs. A run takes it out
/// ([`Lease`]) for as long as it lasts, on whichever threads drive it.
struct StateSlot {
    state: Mutex<Option<State>>,
    /// Signalled when a lease gives the state back.
    back: Condvar,
}

impl StateSlot {
    /// Takes the state, waiting while someone else holds it.
    fn lease(self: &Arc<Self>) -> Lease {
        let mut slot = lock(&self.state);
        loop {
            if let Some(state) = slot.take() {
                return Lease {
                    slot: self.clone(),
                    state: Some(state),
                    mid_command: false,
                };
            }
            slot = self.back.wait(slot).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The session's state held by one run (or a job's start, or the close),
/// given back when dropped. Owned and `Send`, unlike a mutex guard: a run
/// driven in steps may go on on another thread.
struct Lease {
    slot: Arc<StateSlot>,
    state: Option<State>,
    /// A command was sent to the bash and has not ended. A lease dropped
    /// so (a failed read, a panic) kills that bash, which is in the middle
    /// of something: the next run starts afresh.
    mid_command: bool,
}

impl Deref for Lease {
    type Target = State;
    fn deref(&self) -> &State {
        self.state.as_ref().expect("state held until dropped")
    }
}

impl DerefMut for Lease {
    fn deref_mut(&mut self) -> &mut State {
        self.state.as_mut().expect("state held until dropped")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(mut state) = self.state.take() else {
            return;
        };
        if self.mid_command
            && let Some(bash) = state.bash.take()
        {
            reap(bash);
        }
        *lock(&self.slot.state) = Some(state);
        self.slot.back.notify_all();
    }
}

/// One run of a [`Shell`], driven a step at a time, on one thread or on
/// several in turn: drive it until a deadline on one thread and, if it has
/// not ended by then, hand it over to another that drives it on to its
/// end. It is `Send` when `S` is (`&Shell`, `Arc<Shell>`: how the run
/// holds its shell). [`Shell::run`] is a run driven to its end at once.
///
/// Each [`Run::drive`] delivers the output it reads to its own callback,
/// on the thread driving, so chunks keep their order across hand-overs.
/// While a run waits for its turn, for its bash's start-up and for its
/// command, the driving thread sleeps (never spinning) until something
/// happens or the deadline passes. The steps that are the session's own
/// (a state dump for `yield_after`, putting away what the command left
/// running, moving a yielded command to a job) are not split.
///
/// Dropping a run whose command was sent and has not ended cancels the
/// command and waits for it to stop; dropping one still waiting for its
/// turn gives up its place.
pub struct Run<S: Deref<Target = Shell>> {
    shell: S,
    stage: Stage,
}

enum Stage {
    /// Waiting for the turn at `place`.
    Queued {
        place: Place,
        opts: Box<RunOptions>,
    },
    /// Holding the turn and the session.
    Started(Box<Started>),
    Ended,
}

/// How a run's first step ended.
enum Begun {
    Later(Place, Box<RunOptions>),
    Ended(BashResult),
    Started(Box<Started>),
}

/// A run holding its turn and the session's state.
struct Started {
    opts: RunOptions,
    lease: Lease,
    run_cwd: Option<PathBuf>,
    started: (SystemTime, Instant),
    /// The sink and read buffer (a pump without its callback).
    pump: Option<(OutputSink, Vec<u8>)>,
    /// Once bash is ready and has the command.
    sent: Option<Sent>,
    /// Dropped last: the next run's turn comes once the state is back.
    _turn: Turn,
}

/// A run whose command bash has.
struct Sent {
    reset: bool,
    standby: Option<(Duration, Vec<u8>)>,
    run_token: CancelToken,
    /// The caller's cancel to the run's token, the run's token to the waker.
    _links: [CancelGuard; 2],
    looping: Looping,
}

impl<S: Deref<Target = Shell>> Run<S> {
    /// A run of `opts` at `place` (taken with [`Shell::reserve`] on
    /// `shell`). Nothing happens until it is driven.
    pub fn new(shell: S, place: Place, opts: RunOptions) -> Self {
        Run {
            shell,
            stage: Stage::Queued {
                place,
                opts: Box::new(opts),
            },
        }
    }

    /// Drives the run on this thread until it ends (`Poll::Ready`, with
    /// what [`Shell::run_in_place`] returns) or `until` passes
    /// (`Poll::Pending`; `None`: no limit). Output read meanwhile goes to
    /// `on_chunk`, on this thread, as [`Shell::run`] gives it. A run that
    /// ended answers a further call with an error.
    pub fn drive(
        &mut self,
        until: Option<Instant>,
        on_chunk: &mut dyn FnMut(&str),
    ) -> Poll<Result<BashResult>> {
        let shell = &*self.shell;
        let busy = shell.busy.enter();
        let polled = shell.step(&mut self.stage, until, on_chunk);
        drop(busy);
        if polled.is_ready() && shell.closed.load(Ordering::SeqCst) && !shell.busy.is_entered() {
            // Closed from a callback of this run, which could not wait for
            // the run to end: the session ends now.
            shell.end_session();
        }
        polled
    }
}

impl<S: Deref<Target = Shell>> Drop for Run<S> {
    fn drop(&mut self) {
        let Stage::Started(run) = &self.stage else {
            return;
        };
        let Some(sent) = &run.sent else {
            return;
        };
        sent.run_token.cancel();
        let shell = &*self.shell;
        let stage = &mut self.stage;
        // A panic here leaves the run as it was: its lease then kills the
        // bash it was using.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            while shell.step(stage, None, &mut |_| {}).is_pending() {}
        }));
    }
}

/// One run as the loop receives it.
struct Line<'a> {
    command: &'a str,
    /// The run's directory and the session's.
    cwd: Option<(&'a str, &'a str)>,
    env: &'a [(String, String)],
    /// When the run returns if the command still runs (`yield_after`).
    yield_at: Option<Instant>,
}

/// Where the event loop of one run is, between steps.
struct Looping {
    /// bash's children when the run started (background jobs of earlier runs).
    baseline: Vec<Pid>,
    yield_at: Option<Instant>,
    stopper: Stopper,
    record: Option<StatusRecord>,
    exited: bool,
    replaced: bool,
    frozen: bool,
    resumed: bool,
    /// While the ladder is on its SIGINT rung, who got it (see Interrupts).
    interrupts: Option<tree::Interrupts>,
    output_open: bool,
    status_open: bool,
    /// The file holding a long command, removed at the end.
    file: Option<PathBuf>,
}

impl Drop for Looping {
    fn drop(&mut self) {
        if let Some(path) = self.file.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Sends one run to bash; [`drive`] drives it.
fn send_line(bash: &mut Bash, line: Line<'_>, stopper: Stopper) -> Result<Looping> {
    let Line {
        command,
        cwd,
        env,
        yield_at,
    } = line;
    bash.seq = (bash.seq + 1) % SEQ_MODULUS;
    let file = if command.len() > INLINE_LIMIT {
        let name = format!("cmd-{}-{}.sh", std::process::id(), bash.pid());
        Some(private_dir::write_private(&name, command.as_bytes())?)
    } else {
        None
    };
    let text = match &file {
        Some(path) => CommandText::File(utf8_path(path)?),
        None => CommandText::Inline(command),
    };
    // Only a command that says `trap` can set an `EXIT` trap of its own
    // (or call what does); checking costs a fork (protocol::Script).
    let exit_trap = command.contains("trap").then_some(bash.exit_trap.as_str());
    let message = match (&text, cwd, env.is_empty(), exit_trap) {
        (CommandText::Inline(cmd), None, true, None) => bash.message(Kind::Command, cmd),
        _ => {
            let script = Script {
                command: text,
                cwd,
                env,
                exit_trap,
            }
            .render();
            bash.message(Kind::Script, &script)
        }
    };
    let baseline = baseline_of(bash);
    // bash dead before reading the line is reported like any death.
    let exited = send_all(&bash.input, &message).is_err();
    Ok(Looping {
        baseline,
        yield_at,
        stopper,
        record: None,
        exited,
        replaced: false,
        frozen: false,
        resumed: false,
        interrupts: None,
        output_open: true,
        status_open: true,
        file,
    })
}

/// The event loop of one run, from where `lp` left it until the run ends
/// (`Some`) or `until` passes (`None`).
fn drive(
    bash: &mut Bash,
    pump: &mut Pump<'_>,
    waker: &Waker,
    lp: &mut Looping,
    until: Option<Instant>,
) -> Result<Option<Ending>> {
    let mut watch = Watch::new(
        bash.out.as_raw_fd(),
        bash.status.as_raw_fd(),
        bash.pidfd.as_raw_fd(),
        waker,
    )
    .resume(lp.output_open, lp.status_open);
    let ending = drive_turns(bash, pump, &mut watch, lp, until);
    lp.output_open = watch.output_open();
    lp.status_open = watch.status_open();
    ending
}

fn drive_turns(
    bash: &mut Bash,
    pump: &mut Pump<'_>,
    watch: &mut Watch<'_>,
    lp: &mut Looping,
    until: Option<Instant>,
) -> Result<Option<Ending>> {
    while lp.record.is_none() && !lp.exited {
        // While stopping, look every few milliseconds whether the command's
        // processes are gone, rather than waiting out each grace period.
        let wake_at = match (lp.frozen, lp.stopper.wake_at()) {
            (true, Some(t)) => Some(t.min(Instant::now() + STOP_POLL)),
            (false, t) => [t, lp.yield_at].into_iter().flatten().min(),
            (true, None) => None,
        };
        let wake_at = [wake_at, until].into_iter().flatten().min();
        let seen = watch.turn(pump, wake_at)?;
        lp.exited = seen.exited;
        bash.parser.push(seen.status);
        while let Some(rec) = bash.parser.next_record() {
            if rec.seq == bash.seq {
                lp.record = Some(rec);
            } else if rec.seq == protocol::exit_record_seq(bash.seq) {
                lp.replaced = true;
                lp.record = Some(rec);
            }
        }
        if lp.record.is_none()
            && !lp.exited
            && !lp.frozen
            && lp.yield_at.is_some_and(|t| Instant::now() >= t)
        {
            // Still running at `yield_after`: the caller moves it to a job.
            return Ok(Some(Ending {
                record: None,
                exited: false,
                replaced: false,
                stop: None,
                baseline: std::mem::take(&mut lp.baseline),
                yielded: true,
            }));
        }
        let rung = lp.stopper.check(Instant::now(), pump.sink.head_satisfied());
        if (lp.record.is_some() || lp.exited) && !lp.frozen {
            // The command has ended (a cancel from its last chunk's callback,
            // say): nothing is left to stop, and bash, back in its loop,
            // must not get the unwind signal meant for a command. (A bash
            // frozen already goes on below: it is let go once its command's
            // processes are gone.)
            break;
        }
        let aborting = matches!(lp.stopper.reason, Some(Stop::Timeout | Stop::Cancel));
        if aborting && !lp.frozen {
            // Freeze bash before touching its children: once the running
            // command dies, bash would go on with the rest of the command
            // line (`make; rm -rf build`). The unwind signal waits, pending,
            // until bash runs again; then bash abandons the rest of the
            // line and reports, its state intact (protocol::UNWIND_TRAP).
            tree::signal_all(&[bash.pid()], Signal::STOP);
            tree::signal_all(&[bash.pid()], protocol::unwind_signal(bash.seq));
            lp.frozen = true;
        }
        match rung {
            Some(Rung::Signal(sig)) => {
                let mut pids = targets(bash.pid(), &lp.baseline);
                // A closed status pipe with bash alive means `exec`: the
                // process is now the command itself.
                if !watch.status_open() && !lp.frozen {
                    pids.push(bash.pid());
                }
                if sig == Signal::INT {
                    lp.interrupts.get_or_insert_default().send(&pids);
                } else {
                    lp.interrupts = None;
                    tree::signal_all(&pids, sig);
                }
            }
            // Still on the SIGINT rung: a process that missed it (bash
            // had not exec'd it yet, or started it before it could unwind)
            // gets it now.
            None if lp.frozen => {
                if let Some(sent) = &mut lp.interrupts {
                    sent.send(&targets(bash.pid(), &lp.baseline));
                }
            }
            // Every signal went unheeded (or bash itself is stuck in a
            // builtin loop): end it all.
            Some(Rung::Exhausted) => {
                tree::signal_all(&targets(bash.pid(), &lp.baseline), Signal::KILL);
                tree::signal_all(&[bash.pid()], Signal::KILL);
            }
            None => {}
        }
        // Once what it ran is gone, bash goes on, to unwind and report. If
        // it cannot (stuck in a builtin that never reaches a trap), the
        // ladder runs out and it is killed above: the session ends.
        if lp.frozen && !lp.resumed && targets(bash.pid(), &lp.baseline).is_empty() {
            tree::signal_all(&[bash.pid()], Signal::CONT);
            lp.resumed = true;
        }
        if lp.record.is_none() && !lp.exited && until.is_some_and(|t| Instant::now() >= t) {
            // The caller's deadline: the run goes on at its next step.
            return Ok(None);
        }
    }
    watch.drain(pump)?;
    // With a record in hand the run completed even if bash exited right
    // after; the next run notices the death and starts afresh.
    let exited = lp.exited && lp.record.is_none();
    Ok(Some(Ending {
        record: lp.record.take(),
        exited,
        replaced: lp.replaced,
        stop: lp.stopper.reason,
        baseline: std::mem::take(&mut lp.baseline),
        yielded: false,
    }))
}

/// Waits up to `limit` for the record of run `seq`, from a bash that runs
/// nothing of the user's meanwhile.
fn wait_record(
    bash: &mut Bash,
    seq: u64,
    limit: Duration,
) -> std::result::Result<StatusRecord, String> {
    wait_record_until(bash, seq, (Instant::now() + limit, limit), None)
        .map(|record| record.expect("no deadline of the caller's"))
}

/// [`wait_record`] with its time limit as `(deadline, limit)`, returning
/// `None` if `until` passes first.
fn wait_record_until(
    bash: &mut Bash,
    seq: u64,
    (deadline, limit): (Instant, Duration),
    until: Option<Instant>,
) -> std::result::Result<Option<StatusRecord>, String> {
    let stop_at = until.map_or(deadline, |until| until.min(deadline));
    let mut fds = [
        pollin(bash.status.as_raw_fd()),
        pollin(bash.pidfd.as_raw_fd()),
    ];
    let mut buf = [0u8; 512];
    loop {
        match poll(&mut fds, Some(stop_at)) {
            Ok(0) if Instant::now() >= deadline => {
                return Err(format!("no answer within {limit:?}"));
            }
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
        match read(fds[0].fd, &mut buf) {
            Ok(Read::Data(n)) => bash.parser.push(&buf[..n]),
            Ok(Read::Eof) => return Err("it exited".into()),
            Ok(Read::WouldBlock) if ready(&fds[1]) => return Err("it exited".into()),
            Ok(Read::WouldBlock) => {}
            Err(e) => return Err(e.to_string()),
        }
        while let Some(record) = bash.parser.next_record() {
            if record.seq == seq {
                return Ok(Some(record));
            }
        }
    }
}

/// The children bash had before the run: background jobs of earlier runs,
/// which a stop of this run must spare.
fn baseline_of(bash: &Bash) -> Vec<Pid> {
    tree::children_of_single_thread(bash.pid())
}

/// bash's live children that were not there when the run started: what the
/// run left running (a `setsid` escape or a double fork too: bash is their
/// subreaper).
fn new_children(bash: &Bash, baseline: &[Pid]) -> Vec<Pid> {
    let mut left = tree::children_of_single_thread(bash.pid());
    left.retain(|p| !baseline.contains(p) && tree::is_alive(*p));
    left
}

/// Every live process below bash except the subtrees of `baseline`.
fn targets(bash: Pid, baseline: &[Pid]) -> Vec<Pid> {
    tree::descendants_except(bash, baseline)
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
    tree::signal_all(&[bash.pid()], Signal::STOP);
    let alone = tree::descendants(bash.pid()).is_empty() && !bash.has_exited();
    let _ = bash.child.kill();
    if !alone {
        tree::signal_all(&tree::session_members(bash.pid()), Signal::KILL);
    }
    bash.child.wait().ok()
}
