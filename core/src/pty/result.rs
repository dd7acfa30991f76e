//! How a PTY run ended, with the same meaning as a shell run's
//! [`BashResult`] (a stopped run has no exit code and its output starts with
//! the stop notice), and the same run as a [`BashResult`], for the bash
//! tool, which reads a PTY run as it reads a shell run.

use std::path::Path;
use std::time::Duration;

use crate::output::{OutputSink, OutputSummary};
use crate::process::sandbox::Violation;
use crate::process::stop::Stop;
use crate::run_result::BashResult;
use crate::run_result::{Outcome, add_stop_notice};

/// How a PTY run ended.
// Read back too: a remote client gets it serialized.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct PtyResult {
    /// The exit status (`128 + signal` when a signal ended the command);
    /// `None` when the run was stopped (timeout, kill, cancel) or the
    /// command could not start.
    pub exit_code: Option<i32>,
    /// Ended by [`super::PtySession::kill`], the cancel token or the
    /// timeout (as [`BashResult::cancelled`]).
    pub cancelled: bool,
    /// Ended by the timeout.
    pub timed_out: bool,
    /// The sanitized output for the model: `[Command timed out after N
    /// seconds]` or `[Command cancelled]` first when the run was stopped.
    #[serde(flatten)]
    pub summary: OutputSummary,
    /// What the sandbox's domain policy refused during the run: each is a
    /// `[sandbox] blocked` line at the end of the output already; the bash
    /// tool's result lists them too ([`PtyResult::into_bash_result`]).
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) violations: Vec<Violation>,
}

impl PtyResult {
    /// The result of a run that ended with `exit_code` (as waited for) or
    /// was stopped for `stop`; `timeout` is the deadline a timeout notice
    /// names.
    pub(crate) fn new(
        mut summary: OutputSummary,
        exit_code: Option<i32>,
        stop: Option<Stop>,
        timeout: Option<Duration>,
    ) -> Self {
        add_stop_notice(&mut summary, stop, timeout);
        let stopped = matches!(stop, Some(Stop::Timeout | Stop::Cancel));
        PtyResult {
            exit_code: if stopped { None } else { exit_code },
            cancelled: stopped,
            timed_out: stop == Some(Stop::Timeout),
            summary,
            violations: Vec::new(),
        }
    }

    /// Ends the output with the line of each refused connection.
    pub(crate) fn with_violations(mut self, violations: Vec<Violation>) -> Self {
        for violation in &violations {
            self.summary.add_trailer(&violation.line);
        }
        self.violations = violations;
        self
    }

    /// The result of a run that never started: `PTY error: <message>` as
    /// its output, no exit code.
    pub(crate) fn start_failure(mut sink: OutputSink, message: &str) -> Self {
        sink.push_text(&format!("PTY error: {message}\n"));
        PtyResult::new(sink.dump(None), None, None, None)
    }

    /// Why the run was stopped, if it was.
    fn stop(&self) -> Option<Stop> {
        if self.timed_out {
            Some(Stop::Timeout)
        } else if self.cancelled {
            Some(Stop::Cancel)
        } else {
            None
        }
    }

    /// The run as the shell engine reports one, with `cwd` as the working
    /// directory (a PTY run leaves no shell behind to ask).
    pub fn into_bash_result(self, cwd: &Path) -> BashResult {
        let outcome = Outcome {
            exit_code: self.exit_code,
            stop: self.stop(),
            working_dir: Some(cwd.to_string_lossy().into_owned()),
            session_reset: false,
            session_ended: false,
            backgrounded: None,
            // Their lines are in the output already.
            violations: Vec::new(),
        };
        let mut result = BashResult::assemble(self.summary, outcome);
        result.sandbox_violations = self.violations.into_iter().map(|v| v.target).collect();
        result
    }
}
