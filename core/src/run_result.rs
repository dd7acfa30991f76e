//! The result of one command, the same on every face: the output sink's
//! summary of the stream, and how the run ended.

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use crate::output::sink::OutputSummary;
use crate::process::sandbox::Violation;
use crate::process::stop::Stop;

/// What a run produced. The output and its counts are the sink's
/// [`OutputSummary`] (reachable as fields of the result itself, e.g.
/// `result.output`); the rest says how the run ended. The fields and their
/// meaning are the same on every face (docs/api/rust.md).
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct BashResult {
    /// The text kept, `[notice]\n` first when the run was stopped, and its
    /// counts.
    #[serde(flatten)]
    pub summary: OutputSummary,
    /// `None` when the command was killed, cancelled or its status is unknown.
    pub exit_code: Option<i32>,
    /// True on abort, on timeout, and when conch ended the command itself
    /// (the session's process limit, a shell that stopped reporting): the
    /// output then starts with the notice saying why.
    pub cancelled: bool,
    /// The deadline ended the command.
    pub timed_out: bool,
    /// The shell's cwd after the command.
    pub working_dir: Option<String>,
    /// The persistent shell had to be started afresh for this run.
    pub session_reset: bool,
    /// This command ended the shell (`exit`, `exec`, a signal to bash, or
    /// a bash that could not be brought back from an interrupt): what
    /// earlier commands set (variables, functions, aliases, options) is
    /// gone; the next run starts a new bash in the last directory.
    pub session_ended: bool,
    /// The command was still running at the run's `yield_after` and goes
    /// on as this job (see [`crate::RunOptions::yield_after`]); the output
    /// is what it wrote until then, after a notice saying so.
    pub backgrounded: Option<crate::jobs::JobId>,
    /// The connections the sandbox's domain policy refused while the
    /// command ran, as `host:port`; each is also a line `[sandbox]
    /// blocked: …` at the end of the output.
    #[serde(default)]
    pub sandbox_violations: Vec<String>,
}

impl Deref for BashResult {
    type Target = OutputSummary;

    fn deref(&self) -> &OutputSummary {
        &self.summary
    }
}

impl DerefMut for BashResult {
    fn deref_mut(&mut self) -> &mut OutputSummary {
        &mut self.summary
    }
}

/// How a run ended, besides its output. The default: no status, not
/// stopped, no session change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The status the command reported, if any.
    pub exit_code: Option<i32>,
    /// Why it was stopped, if it was.
    pub stop: Option<Stop>,
    pub working_dir: Option<String>,
    pub session_reset: bool,
    pub session_ended: bool,
    /// The job the command went on as, and the `yield_after` it outlived.
    pub backgrounded: Option<(crate::jobs::JobId, Duration)>,
    /// What the sandbox's domain policy refused meanwhile.
    pub violations: Vec<Violation>,
}

/// The notice put before the output of a stopped command; `timeout` is the
/// deadline that stopped it, named in the notice.
pub fn stop_notice(stop: Option<Stop>, timeout: Option<Duration>) -> Option<String> {
    match stop? {
        Stop::Timeout => Some(match timeout {
            Some(t) => format!("Command timed out after {} seconds", seconds(t)),
            None => "Command timed out".to_string(),
        }),
        Stop::Cancel => Some("Command cancelled".to_string()),
        Stop::ProcessLimit(n) => Some(process_limit_notice(n)),
        Stop::Unreported => Some(UNREPORTED_NOTICE.to_string()),
        Stop::NoTerminal(program) => Some(crate::process::no_terminal::notice(program)),
        Stop::Head => None,
    }
}

/// The notice of a command stopped at the session's process limit of `n`
/// (docs/behaviour.md, section 16).
pub fn process_limit_notice(n: u64) -> String {
    format!(
        "Command stopped: the session's process limit ({n}) was reached and new processes \
         were refused for {} seconds; its processes were killed. Start fewer processes at once",
        seconds(PROCESS_LIMIT_GRACE)
    )
}

/// How long a session may stay at its process limit after a refused fork
/// before the run is stopped (docs/behaviour.md, section 16): bash retries
/// a refused fork after 1 s, then 2, 4 and 8, and a command that only
/// touched the limit is below it again by then.
pub const PROCESS_LIMIT_GRACE: Duration = Duration::from_secs(2);

/// The notice of a command after which bash stopped reporting (docs/behaviour.md,
/// section 7).
pub const UNREPORTED_NOTICE: &str = "Command ended, but the shell stopped reporting after it: \
     a DEBUG trap that returns non-zero under `shopt -s extdebug` makes bash skip every command, \
     the shell's own included. Its exit status is unknown";

/// The notice put before the output of a run moved to the background as
/// job `job` after `after`.
pub fn background_notice(job: crate::jobs::JobId, after: Duration) -> String {
    format!(
        "Command still running after {} seconds: it goes on as background job {job} \
         (poll job {job} for its output, kill job {job} to stop it). The session is as it was \
         before this command: what the command changes (cd, variables, functions) does not apply to it",
        seconds(after)
    )
}

/// Puts the notice of a stopped run (see [`stop_notice`]) before its output.
pub(crate) fn add_stop_notice(
    summary: &mut OutputSummary,
    stop: Option<Stop>,
    timeout: Option<Duration>,
) {
    if let Some(notice) = stop_notice(stop, timeout) {
        summary.add_notice(&notice);
    }
}

/// A duration in seconds as a person writes it: whole seconds without a
/// fraction (`5`), otherwise to the millisecond without trailing zeros
/// (`0.5`, `1.25`), so a sub-second timeout never reads "0 seconds".
pub(crate) fn seconds(t: Duration) -> String {
    let millis = t.as_millis();
    if millis.is_multiple_of(1000) {
        return (millis / 1000).to_string();
    }
    let text = format!("{}.{:03}", millis / 1000, millis % 1000);
    text.trim_end_matches('0').to_string()
}

impl BashResult {
    /// The one place a result is made from a run's output and how it
    /// ended: a timed-out or cancelled run has no exit code, is
    /// `cancelled`, and its output starts with the stop notice; a run
    /// stopped because its head limit was satisfied exits 0, as
    /// `cmd | head -n N` does once head is done.
    pub fn new(mut summary: OutputSummary, outcome: Outcome, timeout: Option<Duration>) -> Self {
        add_stop_notice(&mut summary, outcome.stop, timeout);
        if let Some((job, after)) = outcome.backgrounded {
            summary.add_notice(&background_notice(job, after));
        }
        BashResult::assemble(summary, outcome)
    }

    /// [`BashResult::new`] for a summary that has its stop notice already
    /// (a PTY run's, made with [`add_stop_notice`]).
    pub(crate) fn assemble(mut summary: OutputSummary, outcome: Outcome) -> Self {
        let stopped = outcome.stop.is_some_and(Stop::ends_command);
        for violation in &outcome.violations {
            summary.add_trailer(&violation.line);
        }
        BashResult {
            summary,
            exit_code: match outcome.stop {
                Some(Stop::Head) => Some(0),
                Some(_) => None,
                None => outcome.exit_code,
            },
            cancelled: stopped,
            timed_out: outcome.stop == Some(Stop::Timeout),
            working_dir: outcome.working_dir,
            session_reset: outcome.session_reset,
            session_ended: outcome.session_ended,
            backgrounded: outcome.backgrounded.map(|(job, _)| job),
            sandbox_violations: outcome.violations.into_iter().map(|v| v.target).collect(),
        }
    }

    /// A run cancelled before it started: no output, the cancel notice.
    pub(crate) fn cancelled_before_start(
        summary: OutputSummary,
        working_dir: Option<String>,
    ) -> Self {
        let outcome = Outcome {
            stop: Some(Stop::Cancel),
            working_dir,
            ..Outcome::default()
        };
        BashResult::new(summary, outcome, None)
    }
}

/// Closes the output stream of a run and builds its result, applying the
/// head/tail limits (`lines`: the first N, the last N) to the complete
/// stream (see [`OutputSink::dump_lines`](crate::output::OutputSink::dump_lines))
/// before the stop notice is put in front.
pub(crate) fn conclude(
    mut pump: crate::process::pump::Pump<'_>,
    outcome: Outcome,
    timeout: Option<Duration>,
    (head, tail): (Option<usize>, Option<usize>),
) -> BashResult {
    pump.finish();
    let summary = pump.sink.dump_lines(head, tail);
    BashResult::new(summary, outcome, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_notice_gives_the_seconds_as_set() {
        let notice = |ms| stop_notice(Some(Stop::Timeout), Some(Duration::from_millis(ms)));
        assert_eq!(notice(5000).unwrap(), "Command timed out after 5 seconds");
        assert_eq!(notice(500).unwrap(), "Command timed out after 0.5 seconds");
        assert_eq!(
            notice(1250).unwrap(),
            "Command timed out after 1.25 seconds"
        );
        assert_eq!(notice(1).unwrap(), "Command timed out after 0.001 seconds");
        assert_eq!(
            stop_notice(Some(Stop::Timeout), None).unwrap(),
            "Command timed out"
        );
    }
}
