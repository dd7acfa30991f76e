//! How a PTY run ended, and the same run as a [`BashResult`], for the bash
//! tool, which reads a PTY run as it reads a shell run.

use std::path::Path;
use std::time::Duration;

use crate::output::OutputSummary;
use crate::process::stop::Stop;
use crate::shell::BashResult;
use crate::shell::result::Outcome;

/// How a PTY run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtyResult {
    /// The exit status (`128 + signal` when a signal ended the command);
    /// `None` when the command could not start.
    pub exit_code: Option<i32>,
    /// Ended by [`super::PtySession::kill`] or the cancel token.
    pub cancelled: bool,
    /// Ended by the timeout.
    pub timed_out: bool,
    /// The sanitized output for the model.
    pub summary: OutputSummary,
}

impl PtyResult {
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

    /// The run as the shell engine reports one: the stop notice (naming
    /// `timeout`) before the output, no exit code once stopped, `cwd` as
    /// the working directory (a PTY run leaves no shell behind to ask).
    pub fn into_bash_result(self, timeout: Option<Duration>, cwd: &Path) -> BashResult {
        let outcome = Outcome {
            exit_code: self.exit_code,
            stop: self.stop(),
            working_dir: Some(cwd.to_string_lossy().into_owned()),
            session_reset: false,
        };
        BashResult::new(self.summary, outcome, timeout)
    }
}
