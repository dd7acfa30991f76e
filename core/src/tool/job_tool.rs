//! `JobTool`: what a host calls when the model calls `job`, to read, feed
//! and stop the background jobs of the session its [`BashTool`] runs in
//! (started with `bash`'s `async`, or moved there by
//! `auto_background_after`).
//!
//! The texts, the same on every face (docs/behaviour.md, "The job tool"):
//! - `poll`, `write`, `kill`: a status line, `Job N (<command>): running
//!   for Ts` / `exited with code C after Ts` / `killed after Ts` /
//!   `timed out after Ts` / `ended after Ts` (no status known), then, when
//!   the poll skipped output, `[<size> skipped: the whole output is in
//!   artifact://<id>]` (or `[<size> skipped]` without an artifact), when
//!   the artifact hit its cap `[artifact://<id> stopped at <size>: later
//!   output is only kept in memory]`, then the new output (`(no new
//!   output)` when there is none). A job still running ends with the line
//!   `[Still running: poll job N again for more output, or kill it]`.
//! - `list`: one line per job, `N  <status>  <elapsed>  <size>  <command>`,
//!   or `No jobs.`.
//!
//! Bad arguments (an unknown op, a missing job or input, an unknown job,
//! input for a job that takes none) are failures whose text says what to
//! do instead.

use std::time::Duration;

use serde::Deserialize;

use super::bash_tool::{BashTool, ToolState, with_open_session};
use super::definition::ToolNames;
use super::result::{ToolError, ToolResult};
use crate::input::until_option;
use crate::jobs::{JobId, JobInfo, JobPoll, JobStatus, PollOptions};
use crate::output::notice::format_size;
use crate::shell::Shell;
use crate::shell::registry::ExecuteBashOptions;
use crate::{CancelToken, Error};

/// How long `poll` and `write` wait when the model gives no `wait`: long
/// enough for a command to answer, short enough to come back with news.
pub const DEFAULT_WAIT_SECS: f64 = 5.0;
/// The longest `wait` the tool takes, in seconds.
pub const MAX_WAIT_SECS: f64 = 600.0;

/// The ops of the `job` tool, in the order its texts name them.
pub const JOB_OPS: [&str; 4] = ["poll", "write", "kill", "list"];

/// What the model reads when its `op` is none of [`JOB_OPS`].
pub(crate) fn unknown_op(op: &str) -> String {
    format!("Unknown op {op:?}: use poll, write, kill or list")
}

/// The model's arguments to `job`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
pub struct JobToolArgs {
    /// `poll`, `write`, `kill` or `list`.
    pub op: String,
    /// The job (every op but `list`).
    #[serde(default)]
    pub job: Option<JobId>,
    /// Text to write to the job's input (`write`).
    #[serde(default)]
    pub input: Option<String>,
    /// Seconds to wait for the job to end or `until` to match (`poll`,
    /// `write`): clamped to [0, 600], default 5.
    #[serde(default)]
    pub wait: Option<f64>,
    /// Return as soon as the new output matches this regular expression.
    #[serde(default)]
    pub until: Option<String>,
}

/// The model's `job` tool, on the session of one [`BashTool`]. Once that
/// tool is closed (before or after this one was made), every call is
/// refused with [`ToolError::Closed`].
pub struct JobTool {
    session: ExecuteBashOptions,
    /// The bash tool's: set by its `close`, and its network.
    state: ToolState,
    sandbox: Option<crate::Sandbox>,
    names: ToolNames,
    auto_background_after: Option<Duration>,
}

impl JobTool {
    /// The job tool of `bash`'s session.
    pub fn new(bash: &BashTool) -> JobTool {
        let config = bash.config();
        JobTool {
            session: bash.session_options(),
            state: bash.state().clone(),
            sandbox: bash.sandbox(),
            names: ToolNames {
                bash: config.name.clone(),
                job: config.job_tool_name.clone(),
            },
            auto_background_after: config.auto_background_after,
        }
    }

    /// The names of this tool and of the bash tool it serves.
    pub(crate) fn names(&self) -> &ToolNames {
        &self.names
    }

    /// When the bash tool moves a command still running to the background.
    pub(crate) fn auto_background_after(&self) -> Option<Duration> {
        self.auto_background_after
    }

    /// Runs one call; `cancel` ends a wait early (never the job).
    pub fn execute(
        &self,
        args: JobToolArgs,
        cancel: Option<CancelToken>,
    ) -> Result<ToolResult, ToolError> {
        if self.state.is_closed() {
            return Err(ToolError::closed());
        }
        let found = with_open_session(&self.state, &self.session, self.sandbox.as_ref(), |shell| {
            self.call(shell, &args, cancel.as_ref())
        });
        let text = match found {
            Ok(outcome) => outcome?,
            Err(Error::Closed(_)) if self.state.is_closed() => return Err(ToolError::closed()),
            Err(e) => return Err(ToolError::failed(e.to_string())),
        };
        Ok(ToolResult {
            text,
            details: None,
        })
    }

    fn call(
        &self,
        shell: &Shell,
        args: &JobToolArgs,
        cancel: Option<&CancelToken>,
    ) -> Result<String, ToolError> {
        let failed = |e: Error| ToolError::failed(e.to_string());
        if args.op == "list" {
            return Ok(list_text(&shell.jobs()));
        }
        let job = match (args.op.as_str(), args.job) {
            ("poll" | "write" | "kill", Some(job)) => job,
            ("poll" | "write" | "kill", None) => {
                return Err(ToolError::failed(format!(
                    "The {} op needs a job: the number `bash` gave when it started it (list shows them)",
                    args.op
                )));
            }
            (op, _) => return Err(ToolError::failed(unknown_op(op))),
        };
        let command = shell
            .jobs()
            .into_iter()
            .find(|j| j.job == job)
            .map(|j| j.command);
        let poll = match args.op.as_str() {
            "kill" => shell.kill(job).map_err(failed)?,
            op => {
                if op == "write" {
                    let Some(input) = &args.input else {
                        return Err(ToolError::failed(
                            "The write op needs input: the text to send (end it with \\n for a line)",
                        ));
                    };
                    shell.write(job, input.as_bytes()).map_err(failed)?;
                }
                let until = match &args.until {
                    Some(pattern) => Some(until_option("until", pattern).map_err(failed)?),
                    None => None,
                };
                let opts = PollOptions {
                    wait: clamp_wait(args.wait),
                    until,
                    ..PollOptions::default()
                };
                shell.poll(job, &opts, cancel).map_err(failed)?
            }
        };
        Ok(poll_text(&poll, command.as_deref().unwrap_or("")))
    }
}

/// The wait used for `seconds` (the model's argument), see
/// [`JobToolArgs::wait`].
pub fn clamp_wait(seconds: Option<f64>) -> Duration {
    let seconds = seconds.filter(|s| !s.is_nan()).unwrap_or(DEFAULT_WAIT_SECS);
    Duration::from_secs_f64(seconds.clamp(0.0, MAX_WAIT_SECS))
}

/// What the model reads of one poll of job `poll.job`, started by `command`.
pub fn poll_text(poll: &JobPoll, command: &str) -> String {
    let id = poll.job;
    let secs = poll.elapsed.as_secs();
    let status = match (poll.status, poll.exit_code) {
        (JobStatus::Running, _) => format!("running for {secs}s"),
        (JobStatus::Exited, Some(code)) => format!("exited with code {code} after {secs}s"),
        (JobStatus::Exited, None) => format!("ended after {secs}s"),
        (JobStatus::Killed, _) => format!("killed after {secs}s"),
        (JobStatus::TimedOut, _) => format!("timed out after {secs}s"),
    };
    let mut text = format!("Job {id} ({command}): {status}\n");
    if poll.omitted_bytes > 0 {
        let size = format_size(poll.omitted_bytes);
        match &poll.artifact_id {
            Some(artifact) => text.push_str(&format!(
                "[{size} skipped: the whole output is in artifact://{artifact}]\n"
            )),
            None => text.push_str(&format!("[{size} skipped]\n")),
        }
    }
    if poll.artifact_truncated
        && let Some(artifact) = &poll.artifact_id
    {
        text.push_str(&format!(
            "[artifact://{artifact} stopped at its size limit: later output is only kept in memory]\n"
        ));
    }
    if poll.output.is_empty() {
        text.push_str("(no new output)");
    } else {
        text.push_str(poll.output.strip_suffix('\n').unwrap_or(&poll.output));
    }
    if poll.status == JobStatus::Running {
        text.push_str(&format!(
            "\n[Still running: poll job {id} again for more output, or kill it]"
        ));
    }
    text
}

/// What the model reads of the session's jobs.
pub fn list_text(jobs: &[JobInfo]) -> String {
    if jobs.is_empty() {
        return "No jobs.".to_string();
    }
    let lines: Vec<String> = jobs
        .iter()
        .map(|j| {
            let status = match (j.status, j.exit_code) {
                (JobStatus::Exited, Some(code)) => format!("exited {code}"),
                (status, _) => status.as_str().to_string(),
            };
            format!(
                "{}  {status}  {}s  {}  {}",
                j.job,
                j.elapsed.as_secs(),
                format_size(j.total_bytes),
                j.command
            )
        })
        .collect();
    lines.join("\n")
}
