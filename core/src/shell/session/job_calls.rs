//! The job entry points of a [`Shell`] (start, poll, write, signal, kill,
//! wait for any), and how a run's leftovers become jobs: the output pipe
//! of what a command left running, or the whole bash of a command still
//! running at its `yield_after` (with the session's state dumped before
//! the command, for the bash that replaces it). The jobs themselves are
//! [`crate::jobs`].

use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use crate::cwd::{resolve_dir, utf8_path};
use crate::jobs::{
    self, Control, JobId, JobInfo, JobOptions, JobPoll, JobStatus, PollOptions, Processes, Role,
};
use crate::jobs::{JobSpec, NewJob, Slot};
use crate::output::sink::SinkOptions;
use crate::private_dir;
use crate::process::env::check_command;
use crate::process::tree::Pid;
use crate::protocol::{self, Kind, SEQ_MODULUS};
use crate::pty::{Key, clamp_size};
use crate::shell::options::RunOptions;
use crate::shell::queue::Place;
use crate::shell::state::{self, StateAdditions};
use crate::sync::lock;
use crate::{CancelToken, Error, Result};

use super::event_loop::run_script;
use super::{Bash, Shell, State};

impl Shell {
    /// Makes the output pipe of a run that left `left` running, something
    /// still holding it, a job.
    pub(super) fn leftovers_to_job(
        &self,
        out: OwnedFd,
        left: Vec<Pid>,
        run: &RunOptions,
        started: (SystemTime, Instant),
    ) {
        let processes = Processes::Left {
            pids: left,
            grace: self.config.escalation.grace,
        };
        self.jobs.add(NewJob {
            spec: self.job_spec(&run.command, &run.env, started, processes, None),
            output: out,
            status: None,
            initial_status: Vec::new(),
            root_exit: None,
            slot: None,
        });
    }

    /// A job's description, with the session's bounds on its output and
    /// the masker of the session's and `env`'s secrets.
    fn job_spec(
        &self,
        command: &str,
        env: &[(String, String)],
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
            mask: self.masker(env),
            carriage_return: self.config.carriage_return,
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

    /// Has the session's bash write its state (see [`state`]) and reads it.
    pub(super) fn dump_state(&self, bash: &mut Bash) -> Result<Vec<u8>> {
        // A sandboxed bash writes only where its sandbox lets it.
        let dir = match lock(&self.sandbox).as_ref() {
            Some(sandbox) => sandbox.dir().to_path_buf(),
            None => private_dir::private_dir()?.clone(),
        };
        let path = dir.join(private_dir::unique_name("state"));
        let failed =
            |why: String| Error::Spawn(format!("the session's bash did not give its state: {why}"));
        run_script(bash, &state::dump_script(utf8_path(&path)?)).map_err(failed)?;
        let dump =
            std::fs::read(&path).map_err(|e| Error::io("cannot read the session's state", e));
        let _ = std::fs::remove_file(&path);
        dump
    }

    /// The command of a run still going at its `yield_after`: its bash
    /// becomes the job (its output, its status, its whole tree), and a new
    /// bash, given the state `dump` from before the command, becomes the
    /// session's. Returns the job, which takes the room `slot` kept for
    /// it. Nothing is sent to the old bash while its command runs: its
    /// loop, or the fresh bash its `exit` starts, reads the host's answer
    /// to the command's record, sent by the job.
    pub(super) fn background(
        &self,
        state: &mut State,
        opts: &RunOptions,
        started: (SystemTime, Instant),
        dump: &[u8],
        spared: Vec<Pid>,
        slot: Slot,
    ) -> Result<JobId> {
        let mut old = state.bash.take().expect("bash present");
        self.bash_pid.store(0, Ordering::SeqCst);
        // The command's record carries its exit status; the job answers it
        // with this run, which has bash let go of the output (so the job
        // ends when what the command left closes it) and of the status
        // pipe, then wait until the job is over.
        let seq = old.seq;
        old.seq = (old.seq + 1) % SEQ_MODULUS;
        let release = old.message(Kind::Script, protocol::RELEASE);
        let Bash {
            child,
            input,
            out,
            status,
            pidfd,
            parser,
            ..
        } = old;
        let control = Control::new(
            child,
            input,
            Role::Session {
                spared,
                seq,
                release,
            },
            self.config.escalation.grace,
        );
        let timeout = opts.timeout;
        let id = self.jobs.add(NewJob {
            spec: self.job_spec(
                &opts.command,
                &opts.env,
                started,
                Processes::Root { control, seq },
                timeout,
            ),
            output: out,
            status: Some(status),
            initial_status: parser.into_pending(),
            root_exit: Some(pidfd),
            slot: Some(slot),
        });
        let restore = state::restore_text(dump, &StateAdditions::default());
        let bash = self.spawn_bash(&self.start_cwd(), Some(&restore))?;
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
        self.busy.check("a job was started", "shell")?;
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
        // Taken once it is this start's turn (the runs before it may have
        // moved to the background meanwhile), given back if the launch
        // fails.
        let slot = self.jobs.reserve()?;
        let started = (SystemTime::now(), Instant::now());
        let mut state = self.state.take();
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
            &StateAdditions {
                env: &env,
                command: Some(&command),
                ..StateAdditions::default()
            },
        );
        let jobs::Launched {
            control,
            output,
            status,
            initial_status,
        } = jobs::launch(jobs::Spec {
            shell: &self.config.shell,
            name: &self.shell_name(),
            state: text,
            cwd: &cwd,
            stdin: opts.stdin,
            // Clamped as a PTY run's is.
            pty: opts.pty.map(|(cols, rows)| clamp_size(cols, rows)),
            grace: self.config.escalation.grace,
            sandbox: self.config.confinement.clone(),
        })?;
        let processes = Processes::Root {
            control,
            seq: jobs::ROOT_SEQ,
        };
        self.jobs
            .add(NewJob {
                spec: self.job_spec(&opts.command, &opts.env, started, processes, opts.timeout),
                output,
                status: Some(status),
                initial_status,
                root_exit: None,
                slot: Some(slot),
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
    /// takes them (`"ctrl+c"`, `"enter"`, `"up"`), encoded as the PTY
    /// engine encodes it: cursor keys follow the application-cursor mode
    /// the program set on the job's terminal.
    pub fn write_key(&self, job: JobId, key: &str) -> Result<()> {
        let key = Key::parse(key)?;
        self.check_open()?;
        let found = self.jobs.get(job)?;
        if !found.control().is_some_and(Control::is_terminal) {
            return Err(Error::NoInput(format!(
                "job {job} has no terminal: keys need a job started with a PTY"
            )));
        }
        self.write(job, &key.encode(found.application_cursor()))
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

    /// Kills a job's whole tree with the kill escalation (SIGINT, SIGTERM,
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
    /// to; `None` when none did, or when `cancel` ended the wait, and at
    /// once for an empty `jobs` (none of it can end). Fails for an id the
    /// session does not have. Closing the shell meanwhile kills the jobs,
    /// which ends the wait.
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
}
