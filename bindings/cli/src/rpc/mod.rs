//! `conch rpc`: the user's bash over JSON lines on stdin/stdout.
//!
//! Requests, one JSON object per line:
//! - `{"id": …, "type": "bash", "command": "…", "cwd"?: "…", "timeout"?: secs}`
//!   streams `{"type": "bash_chunk", "id": …, "chunk": "…"}` events, then
//!   `{"type": "response", "id": …, "command": "bash", "success": true,
//!   "data": {BashResult, camelCase}}`;
//! - `{"id": …, "type": "abort_bash"}` cancels the oldest bash request not yet
//!   answered (the running one, or the next to run) and is answered at once
//!   with `{"type": "response", "id": …, "command": "abort_bash", "success": true}`,
//!   before the reply of the run it cancels;
//! - `{"id": …, "type": "job_list"}` is answered at once with the session's
//!   jobs (what commands left writing in the background), `data` an array
//!   of `JobInfo` (camelCase);
//! - `{"id": …, "type": "job_poll", "job": N, "wait"?: secs, "until"?: "re",
//!   "maxBytes"?: n, "cursor"?: n}` reads a job's output on a thread of its
//!   own (a waiting poll holds up no other request) and is answered when
//!   the poll returns, `data` the `JobPoll` (camelCase);
//! - `{"id": …, "type": "job_start", "command": "…", "cwd"?, "env"?: {…},
//!   "timeout"?: secs, "stdin"?: bool, "pty"?: {"cols", "rows"}}` starts a
//!   job beside the session, in its turn after the `bash` requests before
//!   it (it takes the session's state as they leave it), `data` `{"job": N}`;
//! - `job_write` {`job`, `data`: text}, `job_close_stdin` {`job`},
//!   `job_key` {`job`, `key`}, `job_signal` {`job`, `signal`}, each `data`
//!   `{"job": N}`, and `job_kill` {`job`}, `data` the final `JobPoll`, run
//!   on threads of their own as polls do;
//! - a `bash` request may carry `yieldAfter` (seconds): a command still
//!   running then goes on as a job, its `data.backgrounded` the job's id;
//! - `{"id": …, "type": "engine"}`, in its turn after the `bash` requests
//!   before it, `data` `{"engine": "builtin" | "eval"}`: the loop the
//!   session's bash runs (`--engine` chooses it; the bash is started for
//!   the answer if no request started it yet);
//! - `{"id": …, "type": "set_network", "network": "deny" | {"allow": […],
//!   "deny": […], "resolve": {name: ip}}}`, in its turn after the `bash`
//!   requests before it, `data` `{}`: the domains a session started with a
//!   domain policy (`--allow-domain` …) may reach from its next command on
//!   (`"deny"`: none); patterns are checked by the core, and a session
//!   without a domain policy, or `"allow"`, is refused;
//! - `{"id": …, "type": "reset"}`, in its turn after the `bash` requests
//!   before it, `data` `{}`: the session started afresh (`Shell::reset`:
//!   what it runs killed, its jobs forgotten, a fresh bash in its start
//!   directory); the requests after it run on that bash;
//! - when a job ends the server writes the event `{"type": "job_exit",
//!   …JobInfo (camelCase)}`; at the end of the server, after the ends of
//!   the jobs it killed, and never after its last line.
//!
//! stdin is read on its own thread and commands run on another, so an abort
//! is handled while a command runs, not after it. The replies of `bash`,
//! `job_start` and the error replies of bad lines keep the order of the
//! requests; those of `abort_bash`, `job_list` and the other job requests,
//! good or bad, are sent as soon as they are ready. A line that is not a valid request gets
//! `{"type": "response", "success": false, "error": "…"}` (with the `id`
//! and `command` when they could be read) and the server goes on. The
//! end of stdin is the client's goodbye: the running and queued commands
//! are cancelled and answered and a queued `job_start` never starts;
//! with `--drain` the queued commands finish first, unless nobody reads
//! stdout any more either (the host is gone). A stop signal (SIGTERM,
//! SIGHUP, SIGINT) is a goodbye too, and the server exits within
//! [`STOP_GRACE`] even when its client no longer reads.
//!
//! Commands run in one [`Session`], a persistent [`Shell`] set up as a
//! [`BashSession`] sets up its own (the bang commands' defaults): `cd` and
//! exports persist between requests; each has a timeout (default 300 s,
//! clamped to 1..3600) and spills its full output to an artifact. A
//! `timeout` is checked by the core (`timeout must be a positive number of
//! seconds, got -1`), then clamped; so are the options of `job_poll`, by
//! the core's parser of each.
//!
//! [`BashSession`]: conch_core::tool::BashSession

use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use conch_core::Sandbox;
use conch_core::artifact::ArtifactStore;
use conch_core::shell::{BashResult, RunOptions, Shell, ShellOptions};
use conch_core::sync::lock;
use conch_core::tool::BashSessionConfig;
use conch_core::wire::camel_case;
use conch_core::{
    CancelToken, EngineChoice, Error, JobExitHook, JobId, JobInfo, JobOptions, Network, PollOptions,
};
use serde_json::{Value, json};

use crate::args::HELP;
use crate::engine_flag::EngineFlag;
use crate::paths::default_artifacts_dir;
use crate::requests::{Next, Requests};
use crate::sandbox_flags::SandboxFlags;

mod request;

use request::{Request, error_reply, read_request};

/// Serve bash over JSON lines on stdin/stdout
#[derive(clap::Args)]
#[command(
    override_usage = "conch rpc [--cwd DIR] [--artifacts DIR] [--engine auto|builtin|eval] [sandbox options]",
    help_template = HELP,
    after_help = "\
Requests, one per line:
  {\"id\":1,\"type\":\"bash\",\"command\":\"make\",\"cwd\":\"sub\",\"timeout\":60}
  {\"id\":2,\"type\":\"abort_bash\"}
  {\"id\":3,\"type\":\"job_list\"}
  {\"id\":4,\"type\":\"job_poll\",\"job\":1,\"wait\":10,\"until\":\"ready\",\"maxBytes\":4096,\"cursor\":0}
  {\"id\":5,\"type\":\"job_start\",\"command\":\"npm run dev\",\"pty\":{\"cols\":80,\"rows\":24}}
  {\"id\":6,\"type\":\"job_write\",\"job\":2,\"data\":\"y\\n\"}  (also job_close_stdin, job_key, job_signal, job_kill)
  {\"id\":7,\"type\":\"engine\"}  (data {\"engine\":\"builtin\"} or \"eval\": the loop bash runs)
  {\"id\":8,\"type\":\"set_network\",\"network\":{\"allow\":[\"pypi.org\",\"*.pythonhosted.org\"]}}  (with --allow-domain …)
Events {\"type\":\"bash_chunk\",\"id\":1,\"chunk\":\"…\"}, {\"type\":\"job_exit\",\"job\":2,…}; replies
{\"type\":\"response\",\"id\":1,\"command\":\"bash\",\"success\":true,\"data\":{…}}."
)]
pub struct Args {
    /// directory the session's bash starts in
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    cwd: Option<PathBuf>,
    /// where full outputs are spilled (default: see `conch artifact`)
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    artifacts: Option<PathBuf>,
    /// at the end of stdin, finish the commands already read (default:
    /// cancel them: the client is gone)
    #[arg(long)]
    drain: bool,
    #[command(flatten)]
    engine: EngineFlag,
    #[command(flatten)]
    sandbox: SandboxFlags,
}

/// A request waiting for the command thread.
enum Job {
    Bash {
        id: Value,
        run: RunOptions,
        cancel: CancelToken,
    },
    /// `job_start`: in its turn, after the commands before it.
    Start { id: Value, opts: JobOptions },
    /// `engine`: in its turn too (the first run's start-up answers it).
    Engine { id: Value },
    /// `set_network`: in its turn, between the runs before and after it.
    SetNetwork { id: Value, network: Network },
    /// `reset`: in its turn too.
    Reset { id: Value },
    /// A reply that must keep its place in the order.
    Reply(Value),
}

/// The session's bash: one [`Shell`], started by the first request that
/// needs it, with the settings and the default timeout of a
/// [`conch_core::tool::BashSession`] (which keeps its shell to itself; the
/// requests for jobs need it).
struct Session {
    config: BashSessionConfig,
    engine: EngineChoice,
    /// Where the `job_exit` events go.
    out: Out,
    exits: Arc<Exits>,
    shell: Mutex<Slot>,
}

/// The `job_exit` events: each written under a lock that the end of the
/// server takes to stop them, once the ends of the jobs it killed were
/// told, so that no event is cut short by the exit.
#[derive(Default)]
struct Exits {
    state: Mutex<ExitState>,
    told: Condvar,
}

#[derive(Default)]
struct ExitState {
    closed: bool,
    told: HashSet<JobId>,
}

impl Exits {
    /// Writes the `job_exit` event of `info` (the core's exit hook).
    fn tell(&self, out: Out, info: JobInfo) {
        let mut state = lock(&self.state);
        if state.closed {
            return;
        }
        let job = info.job;
        let mut event = camel_case(json!(info));
        event["type"] = "job_exit".into();
        out.send(&event);
        state.told.insert(job);
        self.told.notify_all();
    }

    /// After `shell` was closed: waits (a bounded time: what a kill
    /// escalation and a job's collection take, many times over) until the end
    /// of each of its jobs was told, then stops the events.
    fn finish(&self, shell: &Shell) {
        let jobs: Vec<JobId> = shell.jobs().iter().map(|j| j.job).collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut state = lock(&self.state);
        while !jobs.iter().all(|j| state.told.contains(j)) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = self
                .told
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        state.closed = true;
    }
}

enum Slot {
    NotStarted,
    Open(Arc<Shell>),
    /// The server is ending: nothing starts a bash any more.
    Closed,
}

impl Session {
    fn new(
        cwd: Option<PathBuf>,
        artifacts_dir: PathBuf,
        sandbox: Option<Sandbox>,
        engine: EngineChoice,
        out: Out,
    ) -> Session {
        Session {
            out,
            engine,
            exits: Arc::default(),
            config: BashSessionConfig {
                cwd,
                artifacts_dir: Some(artifacts_dir),
                sandbox,
                ..BashSessionConfig::default()
            },
            shell: Mutex::new(Slot::NotStarted),
        }
    }

    /// The shell, started now if it was not (a failure is the request's
    /// error, and the next request tries again).
    fn shell(&self) -> conch_core::Result<Arc<Shell>> {
        let mut slot = lock(&self.shell);
        match &*slot {
            Slot::Open(shell) => return Ok(shell.clone()),
            Slot::Closed => return Err(Error::Closed("session")),
            Slot::NotStarted => {}
        }
        let c = &self.config;
        let shell = Arc::new(Shell::new(ShellOptions {
            shell: c.shell.clone(),
            cwd: c.cwd.clone(),
            session_env: c.session_env.clone(),
            snapshot: c.snapshot.clone(),
            prefix: c.prefix.clone(),
            sandbox: c.sandbox.clone(),
            engine: self.engine,
            artifacts: Some(ArtifactStore::for_option(c.artifacts_dir.clone())?),
            on_job_exit: Some(JobExitHook::new({
                let (out, exits) = (self.out, self.exits.clone());
                move |info| exits.tell(out, info)
            })),
            ..ShellOptions::default()
        })?);
        *slot = Slot::Open(shell.clone());
        Ok(shell)
    }

    /// The shell if it was started (a session that never ran anything has
    /// no jobs).
    fn started(&self) -> Option<Arc<Shell>> {
        match &*lock(&self.shell) {
            Slot::Open(shell) => Some(shell.clone()),
            _ => None,
        }
    }

    fn run(
        &self,
        mut run: RunOptions,
        cancel: CancelToken,
        on_chunk: impl FnMut(&str),
    ) -> conch_core::Result<BashResult> {
        run.timeout = run.timeout.or(self.config.timeout);
        run.cancel = Some(cancel);
        self.shell()?.run(run, on_chunk)
    }

    /// Kills what the session still runs (its jobs included), and tells
    /// the end of each job before it returns.
    fn close(&self) {
        let slot = std::mem::replace(&mut *lock(&self.shell), Slot::Closed);
        if let Slot::Open(shell) = slot {
            shell.close();
            self.exits.finish(&shell);
        }
    }
}

/// A request on a job that may block (a poll's wait, a write to a job
/// that does not read, a kill's escalation).
enum JobCall {
    Poll(PollOptions),
    Write(String),
    CloseStdin,
    Key(String),
    Signal(String),
    Kill,
}

impl JobCall {
    fn name(&self) -> &'static str {
        match self {
            JobCall::Poll(_) => "job_poll",
            JobCall::Write(_) => "job_write",
            JobCall::CloseStdin => "job_close_stdin",
            JobCall::Key(_) => "job_key",
            JobCall::Signal(_) => "job_signal",
            JobCall::Kill => "job_kill",
        }
    }

    /// Runs the call; its reply's `data`.
    fn run(self, shell: &Shell, job: JobId, cancel: &CancelToken) -> conch_core::Result<Value> {
        let done = json!({ "job": job });
        Ok(match self {
            JobCall::Poll(opts) => camel_case(json!(shell.poll(job, &opts, Some(cancel))?)),
            JobCall::Write(data) => shell.write(job, data.as_bytes()).map(|()| done)?,
            JobCall::CloseStdin => shell.close_stdin(job).map(|()| done)?,
            JobCall::Key(key) => shell.write_key(job, &key).map(|()| done)?,
            JobCall::Signal(signal) => shell.signal(job, &signal).map(|()| done)?,
            JobCall::Kill => camel_case(json!(shell.kill(job)?)),
        })
    }
}

/// The job requests being answered, each on its own thread.
#[derive(Default)]
struct Polls {
    running: Vec<(CancelToken, JoinHandle<()>)>,
}

impl Polls {
    /// Answers a job request on a thread of its own: its wait holds up no
    /// other request.
    fn start(&mut self, session: &Arc<Session>, out: Out, id: Value, job: JobId, call: JobCall) {
        self.running.retain(|(_, thread)| !thread.is_finished());
        let cancel = CancelToken::new();
        let name = call.name();
        let started = std::thread::Builder::new()
            .name("conch-rpc-job".into())
            .spawn({
                let (session, cancel, id) = (session.clone(), cancel.clone(), id.clone());
                move || {
                    let data = session
                        .shell()
                        .and_then(|shell| call.run(&shell, job, &cancel));
                    out.send(&match data {
                        Ok(data) => success(name, &id, data),
                        Err(e) => error_reply(&id, Some(name), &e.to_string()),
                    });
                }
            });
        match started {
            Ok(thread) => self.running.push((cancel, thread)),
            Err(e) => out.send(&error_reply(
                &id,
                Some(name),
                &format!("cannot start a thread for the request: {e}"),
            )),
        }
    }

    /// Ends the waits of the polls still waiting (each answers with what it
    /// read).
    fn cancel(&self) {
        for (cancel, _) in &self.running {
            cancel.cancel();
        }
    }

    fn join(self) {
        for (_, thread) in self.running {
            let _ = thread.join();
        }
    }
}

fn success(command: &str, id: &Value, data: Value) -> Value {
    json!({"type": "response", "id": id, "command": command, "success": true, "data": data})
}

/// The `job_list` reply: the jobs of the session (none before its bash
/// started).
fn job_list(session: &Session, id: &Value) -> Value {
    let jobs = session.started().map(|s| s.jobs()).unwrap_or_default();
    success("job_list", id, camel_case(json!(jobs)))
}

/// Whether replies to requests of this type are sent as soon as they are
/// ready rather than in the order of the requests.
fn answered_at_once(command: Option<&str>) -> bool {
    matches!(
        command,
        Some(
            "abort_bash"
                | "job_list"
                | "job_poll"
                | "job_write"
                | "job_close_stdin"
                | "job_key"
                | "job_signal"
                | "job_kill"
        )
    )
}

/// Where replies and events go: whole lines, written under stdout's lock
/// so the two threads never interleave within a line.
#[derive(Clone, Copy)]
struct Out;

impl Out {
    fn send(&self, value: &Value) {
        let mut line = value.to_string();
        line.push('\n');
        let mut stdout = std::io::stdout().lock();
        // A client that went away cannot be told anything.
        let _ = stdout
            .write_all(line.as_bytes())
            .and_then(|()| stdout.flush());
    }
}

pub fn main(p: Args) -> Result<i32, String> {
    let out = Out;
    let sandbox = p.sandbox.policy()?;
    if let Some(policy) = &sandbox {
        // A sandbox this kernel cannot give is refused before any request.
        policy.check().map_err(|e| e.to_string())?;
    }
    let session = Arc::new(Session::new(
        p.cwd,
        p.artifacts.unwrap_or_else(default_artifacts_dir),
        sandbox,
        p.engine.choice(),
        out,
    ));
    let mut polls = Polls::default();
    // Cancel tokens of the bash requests not answered yet, oldest first.
    let pending: Arc<Mutex<VecDeque<CancelToken>>> = Arc::default();
    // Fired at the client's goodbye (the end of stdin, without `--drain`):
    // a `job_start` still queued then is refused, never started.
    let goodbye = CancelToken::new();
    let (jobs, queue) = channel::<Job>();
    let worker = {
        let (session, pending, goodbye) = (session.clone(), pending.clone(), goodbye.clone());
        std::thread::Builder::new()
            .name("conch-rpc-run".into())
            .spawn(move || run_jobs(queue, &session, &out, &pending, &goodbye))
            .map_err(|e| format!("cannot start the command thread: {e}"))?
    };

    let mut requests =
        Requests::new().map_err(|e| format!("cannot watch the stop signals: {e}"))?;
    let mut line = Vec::new();
    let mut status = 0;
    let mut stopped = false;
    loop {
        match requests.next(&mut line) {
            Ok(Next::Line) => {}
            Ok(Next::End) => break,
            Ok(Next::Stopped) => {
                stopped = true;
                break;
            }
            Err(e) => {
                crate::eprint_line(&format!("conch rpc: cannot read stdin: {e}"));
                status = 1;
                break;
            }
        }
        if line.trim_ascii().is_empty() {
            continue;
        }
        let job = match read_request(&line) {
            Ok(Request::Bash { id, run }) => {
                let cancel = CancelToken::new();
                lock(&pending).push_back(cancel.clone());
                Job::Bash { id, run, cancel }
            }
            Ok(Request::Start { id, opts }) => Job::Start { id, opts },
            Ok(Request::Engine { id }) => Job::Engine { id },
            Ok(Request::SetNetwork { id, network }) => Job::SetNetwork { id, network },
            Ok(Request::Reset { id }) => Job::Reset { id },
            Ok(Request::Abort { id }) => {
                // Answered before the cancel, so the reply comes before the
                // cancelled run's, whichever thread writes first.
                out.send(&json!({"type": "response", "id": id, "command": "abort_bash", "success": true}));
                if let Some(oldest) = lock(&pending).front() {
                    oldest.cancel();
                }
                continue;
            }
            Ok(Request::JobList { id }) => {
                out.send(&job_list(&session, &id));
                continue;
            }
            Ok(Request::JobCall { id, job, call }) => {
                polls.start(&session, out, id, job, call);
                continue;
            }
            Err(reply) if answered_at_once(reply["command"].as_str()) => {
                out.send(&reply);
                continue;
            }
            Err(reply) => Job::Reply(reply),
        };
        if jobs.send(job).is_err() {
            break;
        }
    }
    // The end of stdin is the client's goodbye: what it asked for is
    // cancelled, unless it asked for a drain and still reads the replies.
    // A stop signal cancels it all the same, and the server ends within
    // a bound even when nobody reads its replies.
    if stopped {
        exit_after(STOP_GRACE);
    }
    if stopped || !p.drain || stdout_reader_gone() {
        goodbye.cancel();
        for cancel in lock(&pending).iter() {
            cancel.cancel();
        }
        polls.cancel();
    }
    drop(jobs);
    let _ = worker.join();
    // Closing kills the jobs, so the polls waiting for them return; a poll
    // of a job that outlived its kill stops waiting too.
    session.close();
    polls.cancel();
    polls.join();
    Ok(status)
}

/// How long a stopped server waits to answer what was in flight.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Ends the process after `grace`, with status 0, if it has not ended by
/// then (a client that stops reading blocks the replies forever). What
/// the session still runs dies with the host, through the host's guard.
fn exit_after(grace: Duration) {
    let _ = std::thread::Builder::new()
        .name("conch-rpc-stop".into())
        .spawn(move || {
            std::thread::sleep(grace);
            std::process::exit(0);
        });
}

/// Whether the read end of stdout is closed (a pipe whose reader exited
/// polls as an error for its writer).
fn stdout_reader_gone() -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdout = std::io::stdout();
    let mut fds = [PollFd::new(&stdout, PollFlags::OUT)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    poll(&mut fds, Some(&now)).is_ok()
        && fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP)
}

/// The reply to a `job_start` still queued when the client said goodbye.
const NOT_STARTED: &str = "not started: the input ended first";

fn run_jobs(
    queue: Receiver<Job>,
    session: &Session,
    out: &Out,
    pending: &Mutex<VecDeque<CancelToken>>,
    goodbye: &CancelToken,
) {
    for job in queue {
        match job {
            Job::Reply(reply) => out.send(&reply),
            Job::Start { id, .. } if goodbye.is_cancelled() => {
                out.send(&error_reply(&id, Some("job_start"), NOT_STARTED));
            }
            Job::Start { id, opts } => {
                out.send(&match session.shell().and_then(|shell| shell.start(opts)) {
                    Ok(job) => success("job_start", &id, json!({ "job": job })),
                    Err(e) => error_reply(&id, Some("job_start"), &e.to_string()),
                });
            }
            Job::Engine { id } => {
                out.send(&match session.shell().and_then(|shell| shell.engine()) {
                    Ok(engine) => success("engine", &id, json!({ "engine": engine.as_str() })),
                    Err(e) => error_reply(&id, Some("engine"), &e.to_string()),
                });
            }
            Job::SetNetwork { id, network } => {
                let set = session.shell().and_then(|s| s.set_network(&network));
                out.send(&match set {
                    Ok(()) => success("set_network", &id, json!({})),
                    Err(e) => error_reply(&id, Some("set_network"), &e.to_string()),
                });
            }
            Job::Reset { id } => {
                out.send(&match session.shell().and_then(|shell| shell.reset()) {
                    Ok(()) => success("reset", &id, json!({})),
                    Err(e) => error_reply(&id, Some("reset"), &e.to_string()),
                });
            }
            Job::Bash { id, run, cancel } => {
                let result = session.run(run, cancel, |chunk| {
                    out.send(&json!({"type": "bash_chunk", "id": id, "chunk": chunk}));
                });
                lock(pending).pop_front();
                out.send(&match result {
                    Ok(data) => json!({"type": "response", "id": id, "command": "bash", "success": true, "data": camel_case(json!(data))}),
                    Err(e) => json!({"type": "response", "id": id, "command": "bash", "success": false, "error": e.to_string()}),
                });
            }
        }
    }
}
