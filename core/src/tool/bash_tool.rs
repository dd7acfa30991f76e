//! `BashTool`: what a host calls when the model calls `bash`.
//!
//! [`BashTool::execute`] runs the tool's pipeline (docs/behaviour.md), in
//! this order:
//! 1. normalize: trailing `| head -n N` / `| tail -n N` become line limits
//!    of the complete stream; explicit `head`/`tail` arguments win;
//! 2. intercept (when enabled): a command the host has a better tool for is
//!    refused with `Blocked: …` and the suggested tool;
//! 3. cwd: resolved against the tool's cwd (`~` is the home directory);
//!    `Working directory does not exist: <p>` /
//!    `Working directory is not a directory: <p>`;
//! 4. timeout: seconds, clamped to [1, 3600], default 300;
//! 5. artifact: reserved when the output spills, best effort; without one
//!    the output is still truncated, only the `artifact://` link is missing;
//! 6. engine: a PTY when the host enables a virtual terminal, has a UI and
//!    `CONCH_NO_PTY`/`PI_NO_PTY` is not `1`; otherwise the persistent shell
//!    of the session registry. The head limit goes to the engine, whose
//!    sink keeps the head itself and which stops the command once the head
//!    is complete (`yes | head -n 5` returns at once); the tail of that is
//!    taken afterwards, from memory or the artifact (see `selection.rs`);
//! 7. result: see [`super::result`].
//!
//! Live output reaches `on_update` as the tail of the output, at most once
//! per `update_interval` (see [`super::updates`]).
//!
//! `PI_NO_PTY` is the variable the coding-agent host conch was first built
//! for already sets to turn its terminal off; conch honours it beside its
//! own `CONCH_NO_PTY`, so a host that sets either gets the same engine.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;

use super::bash_tool_config::BashToolConfig;
use super::config::check_rules;
use super::result::{CLOSED_TOOL, Shaping, ToolError, ToolResult, shape};
use super::selection::Limits;
use super::updates::{ToolUpdate, with_live_updates};
use crate::artifact::{ArtifactSlot, ArtifactStore};
use crate::command::intercept::Interceptor;
use crate::command::normalize::normalize_bash_command;
use crate::jobs::JobOptions;
use crate::output::{OutputSink, Sanitizer};
use crate::process::sandbox::Sandbox;
use crate::process::stop::Stop;
use crate::pty::{PtyOptions, PtyResult, PtySession};
use crate::run_result::stop_notice;
use crate::shell::reentry::BusyKey;
use crate::shell::registry::{self, ExecuteBashOptions};
use crate::shell::{BashResult, Shell};
use crate::sync::lock;
use crate::{CancelToken, Error, Result, defaults};

/// Timeout when the model gives none, in seconds.
pub const DEFAULT_TIMEOUT_SECS: f64 = defaults::TOOL_TIMEOUT_SECS;
/// Shortest timeout, in seconds (0 and fractions below 1 become 1).
pub const MIN_TIMEOUT_SECS: f64 = defaults::TOOL_MIN_TIMEOUT_SECS;
/// Longest timeout, in seconds.
pub const MAX_TIMEOUT_SECS: f64 = defaults::TOOL_MAX_TIMEOUT_SECS;
/// The model's arguments to `bash` (JSON hosts deserialize them as given).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
pub struct BashToolArgs {
    /// The bash command to run.
    pub command: String,
    /// Directory to run in, relative to the tool's cwd.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Seconds (clamped to [1, 3600]; default 300).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Keep the first N lines of the output.
    #[serde(default)]
    pub head: Option<usize>,
    /// Keep the last N lines (of the head, when both are given).
    #[serde(default)]
    pub tail: Option<usize>,
    /// Start the command as a background job of the session and return at
    /// once with its id (the model reads it with the `job` tool); its
    /// timeout applies only when given. JSON: `async`.
    #[serde(default, rename = "async")]
    pub run_async: bool,
}

impl BashToolArgs {
    /// Arguments with only `command` set.
    pub fn new(command: impl Into<String>) -> Self {
        BashToolArgs {
            command: command.into(),
            ..Default::default()
        }
    }
}

/// What the host provides to one call.
pub struct ToolContext<'a> {
    /// Receives the output's tail while the command runs, on the calling thread.
    pub on_update: Option<&'a mut dyn FnMut(ToolUpdate)>,
    /// Cancelling it aborts the call (the outcome is [`ToolError::Aborted`]).
    pub cancel: Option<CancelToken>,
    /// The host shows a UI (a PTY run needs one).
    pub has_ui: bool,
}

impl Default for ToolContext<'_> {
    fn default() -> Self {
        ToolContext {
            on_update: None,
            cancel: None,
            has_ui: defaults::HAS_UI,
        }
    }
}

/// Everything one call produced.
#[derive(Debug)]
pub struct ToolRun {
    /// What the model reads.
    pub outcome: std::result::Result<ToolResult, ToolError>,
    /// The engine's result, when the command ran.
    pub bash: Option<BashResult>,
}

impl ToolRun {
    /// A call whose command did not run.
    fn refused(error: ToolError) -> ToolRun {
        ToolRun {
            outcome: Err(error),
            bash: None,
        }
    }

    /// The status a command-line front end exits with: the command's own
    /// status; 124 on timeout (as coreutils `timeout`); 130 when aborted
    /// (128 + SIGINT); 1 when it could not run (blocked, bad cwd, no bash)
    /// or ended without a status.
    pub fn exit_status(&self) -> i32 {
        match &self.bash {
            Some(r) if r.timed_out => 124,
            Some(r) if r.cancelled => 130,
            Some(r) => r.exit_code.unwrap_or(1),
            None => 1,
        }
    }
}

enum Intercept {
    Off,
    Defaults,
    Custom(Interceptor),
}

/// What a bash tool shares with the job tools made from it: whether it
/// was closed (they are refused with it), and the network the host set
/// last ([`BashTool::set_network`]), which every session call gets: a
/// session the registry made again (after an idle close) so never comes
/// back with lists the host has changed since.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolState(Arc<StateInner>);

#[derive(Debug, Default)]
struct StateInner {
    closed: AtomicBool,
    network: Mutex<Option<crate::Network>>,
}

impl ToolState {
    pub(crate) fn is_closed(&self) -> bool {
        self.0.closed.load(Ordering::SeqCst)
    }

    /// Sets the flag; whether it was set already.
    fn close(&self) -> bool {
        self.0.closed.swap(true, Ordering::SeqCst)
    }
}

/// Calls `f` with the cached session of `options` unless the tool is
/// closed, which is checked once more with the session in hand: a `close`
/// after the caller's first check either finds this session in the registry
/// and closes it under the call, or has set the flag before it closed
/// anything, and is seen here. A session made for this call after that
/// `close` (a tool's own, by its session key) is closed again at once, so
/// nothing of the tool outlives its `close`. `Error::Closed` when refused.
/// The network the host set last is given to the session first.
pub(crate) fn with_open_session<T>(
    state: &ToolState,
    options: &ExecuteBashOptions,
    sandbox: Option<&Sandbox>,
    f: impl FnOnce(&Shell) -> T,
) -> Result<T> {
    let network = lock(&state.0.network).clone();
    let found = registry::with_session_in(options, sandbox, |shell| {
        if state.is_closed() {
            return Ok(None);
        }
        if let Some(network) = &network {
            shell.set_network(network)?;
        }
        Ok(Some(f(shell)))
    })??;
    found.ok_or_else(|| {
        if let Some(key) = &options.session_key {
            registry::close(key);
        }
        Error::Closed(CLOSED_TOOL)
    })
}

/// The model's `bash` tool. `Send + Sync`: calls from several threads run
/// one after another on the shared persistent shell.
///
/// [`BashTool::close`] is final: every later call (and every call of a
/// [`super::JobTool`] made from it) is refused with
/// [`ToolError::Closed`].
pub struct BashTool {
    config: BashToolConfig,
    intercept: Intercept,
    artifacts: Option<ArtifactStore>,
    pty: Arc<PtySession>,
    /// Marks the thread a call waits on, so a call made from its own
    /// `on_update` fails at once instead of waiting for itself.
    busy: BusyKey,
    /// Set by `close`; checked at the start of every call.
    state: ToolState,
}

impl BashTool {
    /// Checks the configuration: the interceptor's rules must all compile,
    /// whether it is on or not (a bad rule is an error here, not a rule
    /// silently skipped). A
    /// relative `cwd` is taken relative to the host's current directory.
    pub fn new(mut config: BashToolConfig) -> Result<BashTool> {
        if config.cwd.is_relative() {
            let host = std::env::current_dir()
                .map_err(|e| Error::io("cannot read the current directory", e))?;
            config.cwd = host.join(&config.cwd);
        }
        if let Some(sandbox) = &config.sandbox {
            // Fail closed at once, not at the first call.
            sandbox.check()?;
        }
        // Rules are checked even while the interceptor is off: a host that
        // turns it on later must not learn then that a rule never compiled.
        let rules = config.rules.as_deref().map(check_rules).transpose()?;
        let intercept = match (rules, config.interceptor) {
            (_, false) => Intercept::Off,
            (None, true) => Intercept::Defaults,
            (Some(rules), true) => Intercept::Custom(rules),
        };
        let artifacts = Some(ArtifactStore::for_option(config.artifacts_dir.clone())?);
        Ok(BashTool {
            config,
            intercept,
            artifacts,
            pty: Arc::new(PtySession::new()),
            busy: BusyKey::of(Arc::new(())),
            state: ToolState::default(),
        })
    }

    /// The configuration, with `cwd` made absolute.
    pub fn config(&self) -> &BashToolConfig {
        &self.config
    }

    /// The interceptor this tool checks commands with, if it is on.
    pub(crate) fn interceptor(&self) -> Option<&Interceptor> {
        match &self.intercept {
            Intercept::Off => None,
            Intercept::Defaults => Some(Interceptor::defaults()),
            Intercept::Custom(i) => Some(i),
        }
    }

    /// The store the outputs are spilled to, for reading `artifact://<id>`.
    pub fn artifacts(&self) -> Option<&ArtifactStore> {
        self.artifacts.as_ref()
    }

    /// The terminal of PTY runs, for a UI to show (`screen_text`), type
    /// into (`write_key`), resize or kill while a command runs. A kill
    /// there is a cancellation the caller did not ask for: the outcome is
    /// a failure starting `[Command cancelled]`.
    pub fn pty(&self) -> &Arc<PtySession> {
        &self.pty
    }

    /// Runs one call; see the module docs.
    pub fn execute(
        &self,
        args: BashToolArgs,
        ctx: ToolContext<'_>,
    ) -> std::result::Result<ToolResult, ToolError> {
        self.run(args, ctx).outcome
    }

    /// The mark of the threads waiting for a call of this tool (see
    /// [`Shell::busy_key`](crate::Shell::busy_key)).
    pub fn busy_key(&self) -> &BusyKey {
        &self.busy
    }

    /// [`BashTool::execute`], also returning the engine's result.
    pub fn run(&self, args: BashToolArgs, ctx: ToolContext<'_>) -> ToolRun {
        if self.state.is_closed() {
            return ToolRun::refused(ToolError::closed());
        }
        if let Err(e) = self.busy.check("a call was made", "tool") {
            return ToolRun::refused(ToolError::failed(e.to_string()));
        }
        let _busy = self.busy.enter();
        let normalized = normalize_bash_command(&args.command);
        let (head, tail) = normalized.limits_with(args.head, args.tail);
        let interceptor = self.interceptor();
        // Checked on the command as written: normalizing only drops trailing
        // piped stages, which no rule matches, so the decision is the one
        // for the normalized command, and the message quotes the original.
        if let Some(hit) = interceptor.and_then(|i| i.check(&args.command, &self.config.tool_names))
        {
            return ToolRun::refused(ToolError::Blocked {
                message: hit.message,
                suggested_tool: hit.suggested_tool,
            });
        }
        let cwd = match self.resolve_cwd(args.cwd.as_deref()) {
            Ok(cwd) => cwd,
            Err(e) => return ToolRun::refused(ToolError::failed(e.to_string())),
        };
        if args.run_async {
            return ToolRun {
                outcome: self.start_job(&args, cwd),
                bash: None,
            };
        }
        let timeout = clamp_timeout(args.timeout);
        let artifact = self
            .artifacts
            .as_ref()
            .map(|store| store.slot(ARTIFACT_KIND));
        let cancel = ctx.cancel.clone().unwrap_or_default();
        let limits = Limits { head, tail };
        let call = Call {
            command: normalized.command,
            cwd,
            timeout,
            cancel: cancel.clone(),
            limits,
            artifact,
        };
        let dir = call.cwd.clone();
        let use_pty = self.config.virtual_terminal && ctx.has_ui && pty_allowed_by_env();
        let ran = with_live_updates(self.config.update_interval, ctx.on_update, |on_chunk| {
            if use_pty {
                self.run_pty(call, on_chunk)
            } else {
                self.run_shell(call, on_chunk)
            }
        });
        let result = match ran {
            Ok(result) => result,
            Err(e) => return ToolRun::refused(self.engine_error(e)),
        };
        // The notice a stopped run's output starts with.
        let stop = if result.timed_out {
            Stop::Timeout
        } else {
            Stop::Cancel
        };
        let artifact_path = self
            .artifacts
            .as_ref()
            .zip(result.artifact_id.as_deref())
            .map(|(store, id)| store.path_of(id, ARTIFACT_KIND));
        let outcome = shape(
            &result,
            &Shaping {
                limits,
                aborted_by_caller: cancel.is_cancelled(),
                stop_notice: stop_notice(Some(stop), Some(timeout)),
                artifact_path: artifact_path.as_deref(),
                // Looked at only where the session ended (its line says
                // where the next shell starts).
                cwd_gone: result.session_ended && !dir.is_dir(),
            },
        );
        ToolRun {
            outcome,
            bash: Some(result),
        }
    }

    /// Closes the tool, for good: every later call of it, and of the job
    /// tools made from it, is refused with [`ToolError::Closed`] (`bash
    /// tool is closed`). With its own session key, its persistent shell is
    /// closed too (what it runs, its jobs included, is killed, and a call
    /// in progress on another thread is stopped), and so is a command
    /// running on its terminal. A shared session (no session key) is other
    /// tools' as well: it lives on, a call in progress on it completes, and
    /// [`registry::close_all`] closes it. Idempotent.
    pub fn close(&self) {
        if self.state.close() {
            return;
        }
        if let Some(key) = &self.config.session_key {
            registry::close(key);
            // Fails only when nothing runs there.
            let _ = self.pty.kill();
        }
    }

    /// Changes the domains the tool's session may reach
    /// ([`Shell::set_network`]; its jobs share it), for a tool whose
    /// sandbox's network is a domain policy: the host approved a domain
    /// the model asked for, or took one back. The session is started if no
    /// call started it yet; one the registry closes (idle past
    /// [`registry::IDLE_TIMEOUT`]) and makes again gets these lists too.
    /// Errors as [`Shell::set_network`]'s (the lists stay as they were),
    /// and [`Error::Closed`] once the tool is closed.
    pub fn set_network(&self, network: &crate::Network) -> Result<()> {
        if self.state.is_closed() {
            return Err(Error::Closed(CLOSED_TOOL));
        }
        let options = self.session_options();
        with_open_session(&self.state, &options, self.sandbox().as_ref(), |shell| {
            shell.set_network(network)
        })??;
        *lock(&self.state.0.network) = Some(network.clone());
        Ok(())
    }

    /// The configured sandbox with the network the host set last.
    pub(crate) fn sandbox_in_force(&self) -> Option<Sandbox> {
        let network = lock(&self.state.0.network).clone();
        self.config.sandbox.clone().map(|mut sandbox| {
            if let Some(network) = network {
                sandbox.network = network;
            }
            sandbox
        })
    }

    /// Whether [`BashTool::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.state.is_closed()
    }

    /// The flag the job tools of this tool share.
    pub(crate) fn state(&self) -> &ToolState {
        &self.state
    }

    /// What the model (or the host) reads when the engine failed: a session
    /// closed under the call by this tool's `close` is the tool's refusal.
    fn engine_error(&self, e: Error) -> ToolError {
        match e {
            Error::Closed(_) if self.state.is_closed() => ToolError::closed(),
            e => ToolError::failed(e.to_string()),
        }
    }

    fn resolve_cwd(&self, cwd: Option<&str>) -> Result<PathBuf> {
        let dir = match cwd {
            Some(dir) => expand_home(dir),
            None => self.config.cwd.clone(),
        };
        crate::cwd::resolve_dir(&self.config.cwd, &dir)
    }

    /// The configured sandbox with the project directory writable.
    pub(crate) fn sandbox(&self) -> Option<Sandbox> {
        self.config.sandbox.clone().map(|mut sandbox| {
            if !sandbox.writable.contains(&self.config.cwd) {
                sandbox.writable.push(self.config.cwd.clone());
            }
            sandbox
        })
    }

    /// The options that pick this tool's persistent session in the
    /// registry (the same for the [`super::JobTool`] of this tool). They
    /// carry the tool's store: the session spills its jobs' output there,
    /// so the `artifact://<id>` a job poll names is read, as a run's is,
    /// through [`BashTool::artifacts`], and the ids of the two never meet
    /// in different stores.
    pub(crate) fn session_options(&self) -> ExecuteBashOptions {
        ExecuteBashOptions {
            session_key: self.config.session_key.clone(),
            shell: self.config.shell.clone(),
            prefix: self.config.prefix.clone(),
            snapshot: self.config.snapshot.clone(),
            engine: self.config.engine,
            session_env: self.config.session_env.clone(),
            mask: self.config.mask.clone(),
            artifacts: self.artifacts.clone(),
            ..ExecuteBashOptions::default()
        }
    }

    fn run_shell(&self, call: Call, on_chunk: &mut dyn FnMut(&str)) -> Result<BashResult> {
        let options = ExecuteBashOptions {
            cwd: Some(call.cwd),
            timeout: Some(call.timeout),
            cancel: Some(call.cancel),
            artifact: call.artifact,
            // The tail is taken by the tool (see `selection`).
            head_lines: call.limits.head,
            yield_after: self.config.auto_background_after,
            ..self.session_options()
        };
        let run = registry::run_options(&call.command, &options);
        with_open_session(&self.state, &options, self.sandbox().as_ref(), |shell| {
            shell.run(run, on_chunk)
        })?
    }

    /// `async`: the command, as written, starts as a job of the session.
    fn start_job(
        &self,
        args: &BashToolArgs,
        cwd: PathBuf,
    ) -> std::result::Result<ToolResult, ToolError> {
        let opts = JobOptions {
            cwd: Some(cwd),
            timeout: args.timeout.is_some().then(|| clamp_timeout(args.timeout)),
            // The model may answer it with the job tool's `write`.
            stdin: true,
            ..JobOptions::new(args.command.clone())
        };
        let sandbox = self.sandbox();
        let started = with_open_session(
            &self.state,
            &self.session_options(),
            sandbox.as_ref(),
            |shell| shell.start(opts),
        );
        match started.and_then(|r| r) {
            Ok(job) => Ok(ToolResult {
                text: started_text(job, &args.command),
                details: None,
            }),
            Err(e) => Err(self.engine_error(e)),
        }
    }

    /// Runs the call on the tool's PTY. Live updates get the sanitized
    /// text (the raw terminal stream is for the screen, see [`BashTool::pty`]).
    fn run_pty(&self, call: Call, on_chunk: &mut dyn FnMut(&str)) -> Result<BashResult> {
        let command = match &self.config.prefix {
            Some(prefix) => format!("{prefix} {}", call.command),
            None => call.command,
        };
        let mut opts = PtyOptions::new(command);
        opts.cwd = Some(call.cwd.clone());
        opts.env = self.config.session_env.clone();
        opts.mask = self.config.mask.clone();
        opts.timeout = Some(call.timeout);
        opts.cols = self.config.pty_cols;
        opts.rows = self.config.pty_rows;
        opts.shell = self.config.shell.clone();
        opts.cancel = Some(call.cancel);
        opts.sandbox = self.sandbox();
        opts.sink.head_lines = call.limits.head;
        opts.sink.artifact = call.artifact;
        let mut sanitizer = Sanitizer::new();
        let mut clean = String::new();
        let sink = opts.sink.clone();
        let started = self.pty.start(opts, |raw| {
            clean.clear();
            sanitizer.push(raw.as_bytes(), &mut clean);
            if !clean.is_empty() {
                on_chunk(&clean);
            }
        });
        // The model reads a command that could not start on the terminal
        // as a `PTY error:` line with no exit status, whatever the cause.
        let result = started
            .unwrap_or_else(|e| PtyResult::start_failure(OutputSink::new(sink), &e.to_string()));
        Ok(result.into_bash_result(&call.cwd))
    }
}

/// What the model reads when its command started as job `job`.
pub fn started_text(job: crate::jobs::JobId, command: &str) -> String {
    format!(
        "Started job {job}: {command}\nIt runs in the background: read its output with the job tool \
         (op \"poll\", job {job}), send it input (op \"write\"), stop it (op \"kill\")."
    )
}

/// One call's settled inputs.
struct Call {
    command: String,
    cwd: PathBuf,
    timeout: Duration,
    cancel: CancelToken,
    limits: Limits,
    artifact: Option<ArtifactSlot>,
}

/// The kind of the artifacts the tool's runs spill to (`<id>.bash.log`).
const ARTIFACT_KIND: &str = "bash";

/// `CONCH_NO_PTY=1` (or `PI_NO_PTY=1`, which hosts already set for the
/// same purpose) turns PTY runs off.
fn pty_allowed_by_env() -> bool {
    ["CONCH_NO_PTY", "PI_NO_PTY"]
        .iter()
        .all(|name| std::env::var_os(name).is_none_or(|v| v != "1"))
}

/// The timeout used for `seconds` (the model's argument): clamped to
/// [`MIN_TIMEOUT_SECS`, `MAX_TIMEOUT_SECS`], [`DEFAULT_TIMEOUT_SECS`] when
/// absent or not a number.
pub fn clamp_timeout(seconds: Option<f64>) -> Duration {
    let seconds = seconds
        .filter(|s| !s.is_nan())
        .unwrap_or(DEFAULT_TIMEOUT_SECS);
    Duration::from_secs_f64(seconds.clamp(MIN_TIMEOUT_SECS, MAX_TIMEOUT_SECS))
}

/// `~` and `~/…` name the home directory, as in the model's shell: `HOME`,
/// or without it the user's entry in the password database.
fn expand_home(dir: &str) -> PathBuf {
    let home = std::env::home_dir;
    match dir.strip_prefix('~') {
        Some("") => home().unwrap_or_else(|| dir.into()),
        Some(rest) if rest.starts_with('/') => match home() {
            Some(home) => home.join(&rest[1..]),
            None => dir.into(),
        },
        _ => dir.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{OutputSink, SinkOptions};
    use crate::run_result::Outcome;

    #[test]
    fn timeouts_are_clamped_to_one_second_to_one_hour() {
        let secs = |s: Option<f64>| clamp_timeout(s).as_secs_f64();
        assert_eq!(secs(None), 300.0);
        assert_eq!(secs(Some(0.0)), 1.0);
        assert_eq!(secs(Some(0.25)), 1.0);
        assert_eq!(secs(Some(-5.0)), 1.0);
        assert_eq!(secs(Some(42.5)), 42.5);
        assert_eq!(secs(Some(99999.0)), 3600.0);
        assert_eq!(secs(Some(f64::INFINITY)), 3600.0);
        assert_eq!(secs(Some(f64::NAN)), 300.0);
    }

    #[test]
    fn home_is_expanded_only_at_the_start() {
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        assert_eq!(expand_home("~"), home);
        assert_eq!(expand_home("~/src"), home.join("src"));
        assert_eq!(expand_home("~user/x"), PathBuf::from("~user/x"));
        assert_eq!(expand_home("a/~"), PathBuf::from("a/~"));
    }

    #[test]
    fn exit_status_follows_the_cli_convention() {
        let ended = |exit_code: Option<i32>, stop: Option<Stop>| {
            let outcome = Outcome {
                exit_code,
                stop,
                ..Outcome::default()
            };
            let summary = OutputSink::new(SinkOptions::default()).dump(None);
            BashResult::new(summary, outcome, None)
        };
        let run = |bash: Option<BashResult>| ToolRun {
            outcome: Err(ToolError::failed("x")),
            bash,
        };
        assert_eq!(run(Some(ended(Some(3), None))).exit_status(), 3);
        assert_eq!(
            run(Some(ended(Some(3), Some(Stop::Timeout)))).exit_status(),
            124
        );
        assert_eq!(
            run(Some(ended(Some(3), Some(Stop::Cancel)))).exit_status(),
            130
        );
        assert_eq!(run(None).exit_status(), 1);
    }
}
