//! The bang surface: commands the *user* runs (`!cmd` in a UI, `bash` over
//! RPC), next to the model's tool calls.
//!
//! The names are the vocabulary of the coding-agent host conch was first
//! built for, kept so its users find them: a *bang* command is one the user
//! types after `!` in the host's UI (run by conch, not by the model), and a
//! [`BashExecution`] is the host's record of one such command, which the
//! host can later show to the model.
//!
//! A [`BashSession`] has its own persistent bash, so the user's `!cd dir`
//! or `!export X=1` persist from one bang command to the next (and never
//! leak into the model's tool shell). A run has a timeout (default 300 s,
//! so a forgotten command cannot run forever) and spills its full output to
//! an artifact, as a tool call does (docs/behaviour.md §12).
//! [`BashSession::abort`] works from any thread while a command runs. Each
//! run leaves a [`BashExecution`] record (the last
//! [`BashSessionConfig::max_records`] are kept), and [`model_text`] is how
//! a record is shown to the model.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::result::Meta;
use crate::artifact::ArtifactStore;
use crate::output::DEFAULT_MAX_BYTES;
use crate::output::notice::{Truncation, format_output_notice};
use crate::shell::{BashResult, RunOptions, Shell, ShellOptions, Snapshot};
use crate::sync::lock;
use crate::{CancelToken, Result};

/// Records kept by default.
pub const DEFAULT_MAX_RECORDS: usize = 100;
/// Default timeout of a bang command.
pub const DEFAULT_BANG_TIMEOUT: Duration = Duration::from_secs(300);

/// How a [`BashSession`] is set up.
#[derive(Debug, Clone)]
pub struct BashSessionConfig {
    /// Where the session starts; `None`: the host's current directory.
    pub cwd: Option<PathBuf>,
    /// Where full outputs are spilled, checked at the first command;
    /// `None`: the process's private directory
    /// ([`ArtifactStore::process_default`]).
    pub artifacts_dir: Option<PathBuf>,
    /// Deadline of each command; `None`: none.
    pub timeout: Option<Duration>,
    /// bash to run; `None`: `bash` from `PATH`.
    pub shell: Option<PathBuf>,
    /// Prepended to every command: `<prefix> <command>`.
    pub prefix: Option<String>,
    pub snapshot: Snapshot,
    /// Variables exported in the session.
    pub session_env: Vec<(String, String)>,
    /// See [`crate::ShellOptions::mask`].
    pub mask: crate::Mask,
    /// Records kept (the oldest are dropped first).
    pub max_records: usize,
    /// The session's sandbox (see [`crate::ShellOptions::sandbox`]);
    /// `None`: none.
    pub sandbox: Option<crate::Sandbox>,
}

impl Default for BashSessionConfig {
    fn default() -> Self {
        BashSessionConfig {
            cwd: None,
            artifacts_dir: None,
            timeout: Some(DEFAULT_BANG_TIMEOUT),
            shell: None,
            prefix: None,
            snapshot: Snapshot::Auto,
            session_env: Vec::new(),
            mask: crate::Mask::default(),
            max_records: DEFAULT_MAX_RECORDS,
            sandbox: None,
        }
    }
}

/// Per-run settings of a bang command.
#[derive(Debug, Clone, Default)]
pub struct BangOptions {
    /// Directory for this run only, relative to the session's.
    pub cwd: Option<PathBuf>,
    /// Deadline for this run; `None`: the session's.
    pub timeout: Option<Duration>,
    /// Cancels this run (also before it starts, e.g. while it waits behind
    /// another), besides [`BashSession::abort`].
    pub cancel: Option<CancelToken>,
}

/// The record of one bang command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BashExecution {
    pub command: String,
    /// As in a [`BashResult`]'s output ([`crate::OutputSummary::output`]).
    pub output: String,
    pub exit_code: Option<i32>,
    pub cancelled: bool,
    pub truncated: bool,
    pub meta: Meta,
    /// When the command started, in milliseconds since the Unix epoch.
    pub timestamp: u64,
}

/// A user's shell session. `Send + Sync`.
pub struct BashSession {
    config: BashSessionConfig,
    shell: Mutex<Option<Arc<Shell>>>,
    running: Mutex<Vec<(u64, CancelToken)>>,
    next_run: AtomicU64,
    records: Mutex<VecDeque<BashExecution>>,
}

impl BashSession {
    /// A session; its bash starts with the first command.
    pub fn new(config: BashSessionConfig) -> Self {
        BashSession {
            config,
            shell: Mutex::new(None),
            running: Mutex::new(Vec::new()),
            next_run: AtomicU64::new(0),
            records: Mutex::new(VecDeque::new()),
        }
    }

    /// Runs `command` in the session, streaming its output to `on_chunk`.
    /// Timeout and abort are results (`cancelled`); errors are a shell that
    /// cannot start, a bad cwd or bad input.
    pub fn execute_bash(&self, command: &str, on_chunk: impl FnMut(&str)) -> Result<BashResult> {
        self.execute_bash_with(command, BangOptions::default(), on_chunk)
    }

    /// [`BashSession::execute_bash`] with per-run settings.
    pub fn execute_bash_with(
        &self,
        command: &str,
        opts: BangOptions,
        on_chunk: impl FnMut(&str),
    ) -> Result<BashResult> {
        let started = SystemTime::now();
        let cancel = opts.cancel.unwrap_or_default();
        let run_id = self.next_run.fetch_add(1, Ordering::Relaxed);
        lock(&self.running).push((run_id, cancel.clone()));
        let _running = Running {
            session: self,
            run_id,
        };
        let shell = self.shell()?;
        let result = shell.run(
            RunOptions {
                command: command.to_string(),
                cwd: opts.cwd,
                timeout: opts.timeout.or(self.config.timeout),
                cancel: Some(cancel),
                ..RunOptions::default()
            },
            on_chunk,
        )?;
        self.record(command, &result, started);
        Ok(result)
    }

    /// Cancels the running command(s), from any thread. A no-op when idle.
    pub fn abort(&self) {
        for (_, token) in lock(&self.running).iter() {
            token.cancel();
        }
    }

    /// Whether a command is running.
    pub fn is_running(&self) -> bool {
        !lock(&self.running).is_empty()
    }

    /// The records of the last runs, oldest first.
    pub fn records(&self) -> Vec<BashExecution> {
        lock(&self.records).iter().cloned().collect()
    }

    /// The record of the last run.
    pub fn last_record(&self) -> Option<BashExecution> {
        lock(&self.records).back().cloned()
    }

    /// Kills what the session still runs; the next command starts a new bash.
    pub fn close(&self) {
        if let Some(shell) = lock(&self.shell).take() {
            shell.close();
        }
    }

    /// The session's bash, started (or restarted after `close`) on demand.
    fn shell(&self) -> Result<Arc<Shell>> {
        let mut slot = lock(&self.shell);
        if let Some(shell) = slot.as_ref() {
            return Ok(shell.clone());
        }
        let shell = Arc::new(Shell::new(ShellOptions {
            shell: self.config.shell.clone(),
            cwd: self.config.cwd.clone(),
            session_env: self.config.session_env.clone(),
            mask: self.config.mask.clone(),
            snapshot: self.config.snapshot.clone(),
            prefix: self.config.prefix.clone(),
            sandbox: self.config.sandbox.clone(),
            artifacts: Some(ArtifactStore::for_option(
                self.config.artifacts_dir.clone(),
            )?),
            ..ShellOptions::default()
        })?);
        *slot = Some(shell.clone());
        Ok(shell)
    }

    fn record(&self, command: &str, result: &BashResult, started: SystemTime) {
        let record = BashExecution {
            command: command.to_string(),
            output: result.output.clone(),
            exit_code: result.exit_code,
            cancelled: result.cancelled,
            truncated: result.truncated,
            meta: Meta {
                truncation: Truncation::from_counts(
                    result.truncated,
                    result.total_lines,
                    result.total_bytes,
                    result.output_lines,
                    result.output_bytes,
                    result.artifact_id.clone(),
                    Some(DEFAULT_MAX_BYTES),
                ),
            },
            timestamp: started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
        };
        let mut records = lock(&self.records);
        records.push_back(record);
        while records.len() > self.config.max_records {
            records.pop_front();
        }
    }
}

/// Unregisters a run's cancel token when the run ends (or fails).
struct Running<'a> {
    session: &'a BashSession,
    run_id: u64,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        lock(&self.session.running).retain(|(id, _)| *id != self.run_id);
    }
}

/// How a bang command is shown to the model: ``Ran `cmd` `` and the output
/// in a fenced block (or `(no output)`), then `(command cancelled)` or
/// `Command exited with code N` after a blank line, then the truncation
/// notice.
pub fn model_text(record: &BashExecution) -> String {
    let mut text = format!("Ran `{}`\n", record.command);
    let body = record.output.strip_suffix('\n').unwrap_or(&record.output);
    if body.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str("```\n");
        text.push_str(body);
        text.push_str("\n```");
    }
    if record.cancelled {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = record.exit_code.filter(|&c| c != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if let Some(t) = &record.meta.truncation {
        text.push_str(&format_output_notice(t));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(output: &str, exit_code: Option<i32>, cancelled: bool) -> BashExecution {
        BashExecution {
            command: "make test".into(),
            output: output.into(),
            exit_code,
            cancelled,
            truncated: false,
            meta: Meta::default(),
            timestamp: 0,
        }
    }

    #[test]
    fn model_text_fences_the_output_and_notes_code_cancel_and_truncation() {
        assert_eq!(
            model_text(&record("ok\n", Some(0), false)),
            "Ran `make test`\n```\nok\n```"
        );
        assert_eq!(
            model_text(&record("", Some(2), false)),
            "Ran `make test`\n(no output)\n\nCommand exited with code 2"
        );
        assert_eq!(
            model_text(&record("[Command cancelled]\nx\n", None, true)),
            "Ran `make test`\n```\n[Command cancelled]\nx\n```\n\n(command cancelled)"
        );
        let mut r = record("tail\n", Some(0), false);
        r.truncated = true;
        r.meta.truncation = Truncation::from_counts(
            true,
            9000,
            90_000,
            10,
            51_000,
            Some("7".into()),
            Some(51_200),
        );
        assert_eq!(
            model_text(&r),
            "Ran `make test`\n```\ntail\n```\n\n[Showing lines 8991-9000 of 9000 (50.0KB limit). Full: artifact://7]"
        );
    }
}
