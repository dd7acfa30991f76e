//! What the bash tool hands back to the model, and how a run's
//! [`BashResult`] becomes it (the first row that applies wins):
//!
//! | run | outcome |
//! |---|---|
//! | cancelled, and the caller's token was cancelled | [`ToolError::Aborted`], text = output or `Command aborted` |
//! | timed out, or cancelled by someone else | [`ToolError::Failed`], text starts `[Command timed out after N seconds]` / `[Command cancelled]` |
//! | moved to the background (`backgrounded`) | [`ToolResult`], text starts `[Command still running after N seconds: …]` |
//! | no exit status | [`ToolError::Failed`], `…\n\nCommand failed: missing exit status` |
//! | exit status N ≠ 0 | [`ToolError::Failed`], `…\n\nCommand exited with code N` |
//! | exit status 0 | [`ToolResult`] |
//!
//! Empty output reads `(no output)`. A command that ended the shell (its
//! result says `session_ended`) gets one more line before the notice,
//! [`SESSION_ENDED_LINE`] ([`SESSION_ENDED_DIR_GONE_LINE`] when its working
//! directory is gone too). The truncation metadata ([`Meta`]) and
//! the notice `[Showing lines A-B of T (50.0KB limit). Full:
//! artifact://<id>]` are part of every outcome: a failed or timed-out
//! command is exactly when the model needs the full output. The output's final line break is not repeated in
//! the text, so the status line follows after one blank line.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::selection::{Limits, select};
use crate::output::notice::{Truncation, format_output_notice};
use crate::output::sink::notice_line;
use crate::run_result::BashResult;

/// Metadata the host keeps next to the text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Meta {
    /// Set when the text is not the whole output the command was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncation: Option<Truncation>,
}

/// The structured part of a tool result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Details {
    /// Metadata the host keeps next to the text.
    pub meta: Meta,
}

impl Details {
    /// `Some` only when there is something to say: an untruncated result
    /// carries no `details`.
    fn from_truncation(truncation: Option<Truncation>) -> Option<Details> {
        truncation.map(|t| Details {
            meta: Meta {
                truncation: Some(t),
            },
        })
    }

    /// The truncation metadata, if any.
    pub fn truncation(&self) -> Option<&Truncation> {
        self.meta.truncation.as_ref()
    }
}

/// A successful tool call: the text the model reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Details>,
}

/// A failed tool call. Its `Display` is the text the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolError {
    /// The interceptor steered the command to another tool; nothing ran.
    /// `message` is `Blocked: <why>\n\nOriginal command: <command>`.
    #[error("{message}")]
    Blocked {
        message: String,
        suggested_tool: String,
    },
    /// The command could not run (bad cwd, no bash), exited non-zero, had no
    /// exit status, timed out or was cancelled by someone other than the caller.
    #[error("{message}")]
    Failed {
        message: String,
        /// Boxed to keep `Result<_, ToolError>` small.
        #[serde(skip_serializing_if = "Option::is_none")]
        details: Option<Box<Details>>,
    },
    /// The caller cancelled the call.
    #[error("{message}")]
    Aborted {
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        details: Option<Box<Details>>,
    },
    /// The tool was closed (`BashTool::close`; for a job tool, its bash
    /// tool's): nothing ran. Not the model's doing but the host's, so the
    /// faces report it as their closed-handle error (the core's
    /// [`Error::Closed`](crate::Error::Closed) category), not as a tool
    /// outcome. `message` is `bash tool is closed`.
    #[error("{message}")]
    Closed { message: String },
}

impl ToolError {
    /// The text the model reads.
    pub fn message(&self) -> &str {
        match self {
            ToolError::Blocked { message, .. }
            | ToolError::Failed { message, .. }
            | ToolError::Aborted { message, .. }
            | ToolError::Closed { message } => message,
        }
    }

    /// The truncation metadata of a failed or aborted run.
    pub fn details(&self) -> Option<&Details> {
        match self {
            ToolError::Blocked { .. } | ToolError::Closed { .. } => None,
            ToolError::Failed { details, .. } | ToolError::Aborted { details, .. } => {
                details.as_deref()
            }
        }
    }

    /// The refusal of a call on a closed tool.
    pub(crate) fn closed() -> ToolError {
        ToolError::Closed {
            message: crate::Error::Closed(CLOSED_TOOL).to_string(),
        }
    }

    /// A failure before or outside the command (no output to show).
    pub(crate) fn failed(message: impl Into<String>) -> ToolError {
        ToolError::Failed {
            message: message.into(),
            details: None,
        }
    }
}

/// What a closed bash tool is called in its error, `bash tool is closed`
/// (the core's [`Error::Closed`](crate::Error::Closed) text).
pub(crate) const CLOSED_TOOL: &str = "bash tool";

/// How to read a run's result.
pub(crate) struct Shaping<'a> {
    pub limits: Limits,
    /// The caller's cancel token fired (abort, not failure).
    pub aborted_by_caller: bool,
    /// The notice the engine put before the output of a stopped run
    /// (`Command timed out after N seconds`, `Command cancelled`).
    pub stop_notice: Option<String>,
    /// The file of the run's artifact, to read the output the sink dropped.
    pub artifact_path: Option<&'a Path>,
    /// The run's working directory no longer exists after it.
    pub cwd_gone: bool,
}

/// Maps a run's result to what the model reads (see the module table).
pub(crate) fn shape(result: &BashResult, how: &Shaping<'_>) -> Result<ToolResult, ToolError> {
    let (notice, body) = split_stop_notice(result, how.stop_notice.as_deref());
    let shown = select(result, body, how.limits, how.artifact_path);
    let trunc_notice = shown
        .truncation
        .as_ref()
        .map(format_output_notice)
        .unwrap_or_default();
    let details = Details::from_truncation(shown.truncation);
    let body = shown.text.strip_suffix('\n').unwrap_or(&shown.text);
    // What the model must know before its next command, then the notice.
    let trunc_notice = match session_ended_line(result, how.cwd_gone) {
        Some(line) => format!("\n\n{line}{trunc_notice}"),
        None => trunc_notice,
    };

    if result.cancelled {
        let mut text = match notice {
            Some(n) if body.is_empty() => notice_line(n),
            Some(n) => format!("{}\n{body}", notice_line(n)),
            None => body.to_string(),
        };
        if text.is_empty() {
            text.push_str("Command aborted");
        }
        text.push_str(&trunc_notice);
        return Err(if how.aborted_by_caller && !result.timed_out {
            ToolError::Aborted {
                message: text,
                details: details.map(Box::new),
            }
        } else {
            ToolError::Failed {
                message: text,
                details: details.map(Box::new),
            }
        });
    }

    let out = if body.is_empty() { "(no output)" } else { body };
    if result.backgrounded.is_some() {
        // Not an end: the output so far, after the notice saying where the
        // command goes on.
        return Ok(ToolResult {
            text: format!("{out}{trunc_notice}"),
            details,
        });
    }
    match result.exit_code {
        Some(0) => Ok(ToolResult {
            text: format!("{out}{trunc_notice}"),
            details,
        }),
        Some(code) => Err(ToolError::Failed {
            message: format!("{out}\n\nCommand exited with code {code}{trunc_notice}"),
            details: details.map(Box::new),
        }),
        None => Err(ToolError::Failed {
            message: format!("{out}\n\nCommand failed: missing exit status{trunc_notice}"),
            details: details.map(Box::new),
        }),
    }
}

/// The line that tells the model its command ended the shell: what is kept
/// (the working directory) and what is not.
pub const SESSION_ENDED_LINE: &str = "[Shell restarted: this command ended the shell session. \
The next command starts a new shell in the same working directory, without the variables, \
functions, aliases and shell options set earlier]";

/// [`SESSION_ENDED_LINE`] for a command that left its working directory
/// gone as well (`rm -rf "$PWD"; exit`): the next call in it would fail
/// (`Working directory does not exist`), so the model is not told that the
/// new shell starts there.
pub const SESSION_ENDED_DIR_GONE_LINE: &str = "[Shell restarted: this command ended the shell \
session, and its working directory no longer exists. Give the next command a cwd that exists; \
it starts a new shell without the variables, functions, aliases and shell options set earlier]";

fn session_ended_line(result: &BashResult, cwd_gone: bool) -> Option<&'static str> {
    let line = match cwd_gone {
        false => SESSION_ENDED_LINE,
        true => SESSION_ENDED_DIR_GONE_LINE,
    };
    result.session_ended.then_some(line)
}

/// Separates the `[notice]\n` line a stopped run's output starts with from
/// the command's own output. A non-empty output that lacks it (an engine
/// that applied a line limit to the notice too) gets the expected one.
fn split_stop_notice<'r>(
    result: &'r BashResult,
    expected: Option<&'r str>,
) -> (Option<&'r str>, &'r str) {
    let output = result.output.as_str();
    // Nothing at all (not even the notice) reads `Command aborted`.
    if !result.cancelled || output.is_empty() {
        return (None, output);
    }
    if let Some(rest) = output.strip_prefix('[')
        && let Some((line, body)) = rest.split_once(']')
        && is_stop_notice(line)
        && (body.is_empty() || body.starts_with('\n'))
    {
        return (Some(line), body.strip_prefix('\n').unwrap_or(body));
    }
    (expected, output)
}

/// The engine's notices for a stopped command.
fn is_stop_notice(line: &str) -> bool {
    line == "Command cancelled"
        || line.starts_with("Command timed out")
        || line.starts_with("Command stopped: the session's process limit")
        || line == crate::run_result::UNREPORTED_NOTICE
        || crate::process::no_terminal::is_notice(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_result::Outcome;

    fn result(output: &str, exit_code: Option<i32>) -> BashResult {
        let summary = crate::output::OutputSummary {
            output: output.to_string(),
            truncated: false,
            total_lines: crate::output::count_lines(output),
            total_bytes: output.len() as u64,
            output_lines: crate::output::count_lines(output),
            output_bytes: output.len() as u64,
            artifact_id: None,
        };
        let outcome = Outcome {
            exit_code,
            ..Outcome::default()
        };
        BashResult::assemble(summary, outcome)
    }

    fn stopped(output: &str, timed_out: bool) -> BashResult {
        BashResult {
            cancelled: true,
            timed_out,
            ..result(output, None)
        }
    }

    fn shaping(aborted_by_caller: bool) -> Shaping<'static> {
        Shaping {
            limits: Limits::default(),
            aborted_by_caller,
            stop_notice: Some("Command cancelled".into()),
            artifact_path: None,
            cwd_gone: false,
        }
    }

    fn message(outcome: Result<ToolResult, ToolError>) -> (&'static str, String) {
        match outcome {
            Ok(r) => ("ok", r.text),
            Err(ToolError::Blocked { message, .. }) => ("blocked", message),
            Err(ToolError::Failed { message, .. }) => ("failed", message),
            Err(ToolError::Aborted { message, .. }) => ("aborted", message),
            Err(ToolError::Closed { message }) => ("closed", message),
        }
    }

    #[test]
    fn every_row_of_the_result_table() {
        let cases: [(BashResult, bool, (&str, &str)); 9] = [
            // aborted by the caller
            (
                stopped("[Command cancelled]\nx\n", false),
                true,
                ("aborted", "[Command cancelled]\nx"),
            ),
            (stopped("", false), true, ("aborted", "Command aborted")),
            // cancelled by someone else, timed out (even if the caller also cancelled)
            (
                stopped("[Command cancelled]\n", false),
                false,
                ("failed", "[Command cancelled]"),
            ),
            (
                stopped("[Command timed out after 5 seconds]\nx\n", true),
                true,
                ("failed", "[Command timed out after 5 seconds]\nx"),
            ),
            // a notice missing from the output is put back
            (
                stopped("y\n", false),
                false,
                ("failed", "[Command cancelled]\ny"),
            ),
            // no exit status, non-zero, zero, empty
            (
                result("x\n", None),
                false,
                ("failed", "x\n\nCommand failed: missing exit status"),
            ),
            (
                result("x\n", Some(2)),
                false,
                ("failed", "x\n\nCommand exited with code 2"),
            ),
            (result("x\n\n", Some(0)), false, ("ok", "x\n")),
            (result("", Some(0)), false, ("ok", "(no output)")),
        ];
        for (r, aborted, (kind, text)) in cases {
            let got = message(shape(&r, &shaping(aborted)));
            assert_eq!(got, (kind, text.to_string()), "{r:?}");
        }
    }

    #[test]
    fn truncation_rides_on_errors_too() {
        let mut r = result("tail\n", Some(1));
        r.truncated = true;
        r.total_lines = 5000;
        r.total_bytes = 80_000;
        r.artifact_id = Some("3".into());
        let e = shape(&r, &shaping(false)).unwrap_err();
        assert_eq!(
            e.message(),
            "tail\n\nCommand exited with code 1\n\n[Showing lines 5000-5000 of 5000 (50.0KB limit). Full: artifact://3]"
        );
        let t = e.details().unwrap().truncation().unwrap();
        assert_eq!(t.artifact_id.as_deref(), Some("3"));
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["kind"], "failed");
        assert_eq!(json["details"]["meta"]["truncation"]["total_lines"], 5000);
    }
}
