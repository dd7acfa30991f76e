//! `execute_shell`: one command in a fresh process, for other shells (`sh`,
//! `zsh`) and for callers who want no state carried between commands.
//! Same containment, output pipeline and result as [`super::Shell`].
//!
//! The command's shell runs under a small supervising bash (the *root*, a
//! child subreaper in its own session). The root outlives the command: it
//! reports the status on a pipe and then waits, so whatever the command left
//! running — even `setsid` daemons — is re-parented to it and can be found
//! and killed before the call returns. If the host dies meanwhile, the
//! host's guard (`process::lifeline`) kills the whole tree.

/// The root: run the shell (`$0`) on the command (`$1`) with stdin from
/// /dev/null, report its status, then hold on until conch closes stdin.
const ROOT_SCRIPT: &str =
    "\"$0\" -c \"$1\" </dev/null 62>&-; printf '%s' \"$?\" >&62; exec 62>&-; read -r _";

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::process::Signal;

use crate::artifact::{ArtifactSlot, ArtifactStore};
use crate::command::follow;
use crate::cwd::start_dir;
use crate::output::Mask;
use crate::output::carriage::CarriageReturn;
use crate::output::fullscreen::Sign;
use crate::output::sink::{DEFAULT_MAX_BYTES, OutputSink, SinkOptions};
use crate::process::bash::find_bash;
use crate::process::env::{EnvPolicy, build_env, check_command};
use crate::process::io::{Waker, pipe};
use crate::process::no_terminal::{NoTerminal, Program};
use crate::process::pump::Pump;
use crate::process::sandbox::{Sandbox, SessionSandbox};
use crate::process::spawner::{HostDeath, Launch};
use crate::process::stop::{Stop, Stopper};
use crate::process::supervised::{Supervised, spawn_supervised, status_code};
use crate::process::tree::{self, Escalation, EscalationStep};
use crate::process::watch::Watch;
use crate::run_result::{BashResult, Outcome, conclude};
use crate::wire::{read, shape};
use crate::{CancelToken, Result};
use schemars::JsonSchema;
use serde::Deserialize;

/// One command to run in a fresh process. On the wire (see
/// [`crate::wire`]) as [`crate::RunOptions`] and [`crate::ShellOptions`]
/// name the same options; the cancel token, the artifact and the kill
/// ladder are set by the host only.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ExecuteOptions {
    /// The command.
    pub command: String,
    /// The shell run as `<shell> -c <command>`; `None`: bash from `PATH`.
    pub shell: Option<PathBuf>,
    /// Starting directory; `None`: the host's cwd.
    pub cwd: Option<PathBuf>,
    /// Variables exported for the command (after the policy and defaults).
    #[serde(deserialize_with = "read::env")]
    #[schemars(schema_with = "shape::env")]
    pub env: Vec<(String, String)>,
    /// Which values of `env` are replaced by `[masked: NAME]` in the
    /// output: as [`crate::ShellOptions::mask`].
    pub mask: Mask,
    /// How the output shows carriage returns: as
    /// [`crate::ShellOptions::carriage_return`].
    pub carriage_return: CarriageReturn,
    /// The deadline, from the command's start; `None`: none.
    #[serde(deserialize_with = "read::timeout")]
    #[schemars(schema_with = "shape::optional_seconds")]
    pub timeout: Option<Duration>,
    /// Cancels the run from any thread.
    #[serde(skip)]
    pub cancel: Option<CancelToken>,
    /// Apply [`crate::process::env::NON_INTERACTIVE_ENV`].
    pub non_interactive_env: bool,
    /// Which host variables reach the command.
    pub env_policy: EnvPolicy,
    /// Bytes of output kept in memory.
    #[serde(deserialize_with = "read::max_bytes")]
    #[schemars(schema_with = "shape::positive")]
    pub max_bytes: usize,
    /// The artifact this run's output goes to, if the host reserved one:
    /// see [`RunOptions::artifact`](crate::RunOptions::artifact).
    #[serde(skip)]
    pub artifact: Option<ArtifactSlot>,
    /// Where the full output is spilled; `None`: no artifacts. The default
    /// is the process's private directory.
    #[serde(rename = "artifacts_dir", deserialize_with = "read::artifacts_dir")]
    #[schemars(schema_with = "shape::optional_string")]
    pub artifacts: Option<ArtifactStore>,
    /// Keep only the first N lines of the whole stream.
    #[serde(rename = "head", deserialize_with = "read::head")]
    #[schemars(schema_with = "shape::optional_count")]
    pub head_lines: Option<usize>,
    /// Keep only the last N lines (after `head_lines`).
    #[serde(rename = "tail", deserialize_with = "read::tail")]
    #[schemars(schema_with = "shape::optional_count")]
    pub tail_lines: Option<usize>,
    /// Grace between the signals of the kill escalation.
    #[serde(skip)]
    pub kill_ladder: Escalation,
    /// The sandbox the command runs in (made for this run, removed after
    /// it); `None`: none (`true`: the
    /// strict default policy, `false`: none).
    #[serde(deserialize_with = "read::sandbox")]
    #[schemars(schema_with = "shape::sandbox")]
    pub sandbox: Option<Sandbox>,
}

impl Default for ExecuteOptions {
    fn default() -> Self {
        ExecuteOptions {
            command: String::new(),
            shell: None,
            cwd: None,
            env: Vec::new(),
            mask: Mask::default(),
            carriage_return: CarriageReturn::default(),
            timeout: None,
            cancel: None,
            non_interactive_env: crate::defaults::NON_INTERACTIVE_ENV,
            env_policy: EnvPolicy::default(),
            max_bytes: DEFAULT_MAX_BYTES,
            artifacts: Some(ArtifactStore::process_default()),
            artifact: None,
            head_lines: None,
            tail_lines: None,
            kill_ladder: Escalation::default(),
            sandbox: None,
        }
    }
}

/// Runs `opts.command` in a fresh `<shell> -c` process and returns when it
/// exits (not when its pipes close: background jobs cannot hold the call;
/// what it leaves in its session is killed).
pub fn execute_shell(opts: ExecuteOptions, mut on_chunk: impl FnMut(&str)) -> Result<BashResult> {
    check_command(&opts.command, &opts.env)?;
    let cwd = start_dir(opts.cwd.as_deref())?;
    // Any shell runs `-c` (`/bin/sh` is fine): one given is used as given.
    let shell = match &opts.shell {
        Some(p) => p.clone(),
        None => find_bash(None)?,
    };
    let mut env = build_env(&opts.env_policy, opts.non_interactive_env, &opts.env);
    let sandbox = opts
        .sandbox
        .as_ref()
        .map(|policy| SessionSandbox::for_shell(policy, &cwd, &shell, &[]))
        .transpose()?;
    if let Some(sandbox) = &sandbox {
        sandbox.set_env(&mut env);
    }
    let artifact = opts
        .artifact
        .clone()
        .or_else(|| opts.artifacts.as_ref().map(|s| s.slot("bash")));
    let sink = OutputSink::new(SinkOptions {
        max_bytes: opts.max_bytes,
        head_lines: opts.head_lines,
        artifact,
        mask: opts.mask.masker(&opts.env),
        carriage_return: opts.carriage_return,
        ..SinkOptions::default()
    });
    let working_dir = Some(cwd.to_string_lossy().into_owned());
    let cancel = opts.cancel.clone().unwrap_or_default();
    if cancel.is_cancelled() {
        return Ok(BashResult::cancelled_before_start(
            sink.dump(None),
            working_dir,
        ));
    }

    // Our end of the root's stdin: the root waits on it after reporting, so
    // it stays alive (holding the orphans) until we have killed them.
    let (hold_r, hold) = pipe()?;
    let root = find_bash(None)?;
    let launch = Launch {
        program: root,
        args: vec![
            "--noprofile".into(),
            "--norc".into(),
            "-c".into(),
            ROOT_SCRIPT.into(),
            shell.into_os_string(),
            opts.command.clone().into(),
        ],
        env,
        cwd: Some(cwd),
        on_host_death: HostDeath::Freeze,
        sandbox: sandbox.as_ref().map(SessionSandbox::confinement),
        ..Launch::default()
    };
    let Supervised {
        mut child,
        out,
        status,
        pidfd,
    } = spawn_supervised(launch, hold_r, None, None)?;
    let pid = child.pid();
    let waker = Arc::new(Waker::new()?);
    let _wake = cancel.on_cancel({
        let w = waker.clone();
        move || w.wake()
    });
    let mut stopper = Stopper::new(opts.timeout, cancel, opts.kill_ladder);
    let mut pump = Pump::new(sink, &mut on_chunk);
    let mut watch = Watch::new(
        out.as_raw_fd(),
        status.as_raw_fd(),
        pidfd.as_raw_fd(),
        &waker,
    );
    let mut reported = Vec::new();
    // A full-screen program without a terminal is stopped as a timeout
    // stops the command (docs/behaviour.md, section 9).
    let mut looks = NoTerminal::default();
    let loop_result: Result<()> = (|| {
        loop {
            let looks_due = stopper
                .reason
                .is_none()
                .then(|| looks.due(&pump.signs))
                .flatten();
            let wake_at = [stopper.wake_at(), looks_due].into_iter().flatten().min();
            let seen = watch.turn(&mut pump, wake_at)?;
            reported.extend_from_slice(seen.status);
            if seen.exited || !watch.status_open() {
                break;
            }
            if stopper.reason.is_none()
                && let Some(program) =
                    looks.look(Instant::now(), &pump.signs, || tree::descendants(pid))
            {
                stopper.stop(Stop::NoTerminal(program));
            }
            match stopper.check(Instant::now(), pump.sink.head_satisfied()) {
                Some(EscalationStep::Signal(sig)) => tree::signal_all(&tree::descendants(pid), sig),
                Some(EscalationStep::Exhausted) => tree::signal_all(&[pid], Signal::KILL),
                None => {}
            }
        }
        watch.drain(&mut pump)?;
        if let Some(Sign::GaveUp(name)) = pump.signs.found() {
            // It said so as it quit: the run reads as stopped for it.
            stopper.ended(Stop::NoTerminal(Program::new(name)));
        }
        Ok(())
    })();
    // Nothing of a one-shot command outlives it: its orphans are the root's
    // children now (the root is their subreaper), setsid or not.
    tree::signal_all(&tree::descendants(pid), Signal::KILL);
    drop(hold);
    if loop_result.is_err() {
        tree::signal_all(&[pid], Signal::KILL);
    }
    let root_status = child.wait().ok();
    let violations = sandbox
        .as_ref()
        .map(SessionSandbox::take_violations)
        .unwrap_or_default();
    drop(sandbox);
    loop_result?;

    let reported = std::str::from_utf8(&reported)
        .ok()
        .and_then(|t| t.trim().parse().ok());
    let exit_code = reported.or_else(|| root_status.and_then(status_code));
    let outcome = Outcome {
        exit_code,
        stop: stopper.reason,
        working_dir,
        violations,
        ..Outcome::default()
    };
    let lines = (opts.head_lines, opts.tail_lines);
    let mut result = conclude(pump, outcome, opts.timeout, lines);
    follow::add_notice(&mut result, &opts.command);
    Ok(result)
}
