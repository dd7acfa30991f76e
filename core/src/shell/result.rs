//! The result of one command, identical across the four faces.

use std::time::Duration;

use crate::command::normalize::apply_head_tail;
use crate::output::count_lines;
use crate::output::sink::OutputSummary;
use crate::process::stop::Stop;

/// What a run produced. See API.md for the meaning of every field.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BashResult {
    pub output: String,
    pub exit_code: Option<i32>,
    /// True on abort and on timeout.
    pub cancelled: bool,
    pub timed_out: bool,
    pub truncated: bool,
    pub total_lines: u64,
    pub total_bytes: u64,
    pub output_lines: u64,
    pub output_bytes: u64,
    pub artifact_id: Option<String>,
    pub working_dir: Option<String>,
    pub session_reset: bool,
}

/// The notice put before the output of a stopped command.
pub fn stop_notice(stop: Option<Stop>, timeout: Option<Duration>) -> Option<String> {
    match stop? {
        Stop::Timeout => Some(match timeout {
            Some(t) => format!(
                "Command timed out after {} seconds",
                (t.as_millis() as f64 / 1000.0).round() as u64
            ),
            None => "Command timed out".to_string(),
        }),
        Stop::Cancel => Some("Command cancelled".to_string()),
        Stop::Head => None,
    }
}

impl BashResult {
    /// Assembles a result from the sink's summary and how the run ended.
    pub fn new(
        summary: OutputSummary,
        exit_code: Option<i32>,
        stop: Option<Stop>,
        working_dir: Option<String>,
        session_reset: bool,
    ) -> Self {
        let stopped = matches!(stop, Some(Stop::Timeout | Stop::Cancel));
        BashResult {
            output: summary.output,
            exit_code: if stopped { None } else { exit_code },
            cancelled: stopped,
            timed_out: stop == Some(Stop::Timeout),
            truncated: summary.truncated,
            total_lines: summary.total_lines,
            total_bytes: summary.total_bytes,
            output_lines: summary.output_lines,
            output_bytes: summary.output_bytes,
            artifact_id: summary.artifact_id,
            working_dir,
            session_reset,
        }
    }
}

/// How a run ended, besides its output.
pub(crate) struct Outcome {
    pub exit_code: Option<i32>,
    pub stop: Option<Stop>,
    pub working_dir: Option<String>,
    pub session_reset: bool,
}

/// Closes the output stream of a run and builds its result, applying the
/// head/tail limits to the complete stream (the sink kept the head itself),
/// before the stop notice is put in front, and counting what is left.
pub(crate) fn conclude(
    mut pump: crate::process::pump::Pump<'_>,
    outcome: Outcome,
    timeout: Option<Duration>,
    head_lines: Option<usize>,
    tail_lines: Option<usize>,
) -> BashResult {
    let exit_code = match outcome.stop {
        // `cmd | head -n N` exits with head's status once head is done.
        Some(Stop::Head) => Some(0),
        _ => outcome.exit_code,
    };
    pump.finish();
    let mut summary = pump.sink.dump(None);
    if head_lines.is_some() || tail_lines.is_some() {
        let limited = apply_head_tail(&summary.output, head_lines, tail_lines);
        if limited.len() != summary.output.len() {
            summary.truncated = true;
            summary.output_lines = count_lines(&limited);
            summary.output_bytes = limited.len() as u64;
            summary.output = limited;
        }
    }
    if let Some(notice) = stop_notice(outcome.stop, timeout) {
        summary.output = format!("[{notice}]\n{}", summary.output);
    }
    BashResult::new(
        summary,
        exit_code,
        outcome.stop,
        outcome.working_dir,
        outcome.session_reset,
    )
}
