//! `BashResult` in camelCase, the same fields as every face
//! (docs/api/node.md), filled from the core's result.

use napi::bindgen_prelude::{Either, Null};
use napi_derive::napi;

/// What a command produced.
#[napi(object, object_from_js = false)]
pub struct BashResult {
    /// Text the sink kept (the tail, or head+tail), prefixed with
    /// `[notice]\n` on timeout or cancellation.
    pub output: String,
    /// The exit status; absent when killed, cancelled or unknown.
    pub exit_code: Option<i32>,
    /// True on abort and on timeout.
    pub cancelled: bool,
    /// True when the deadline ended the command.
    pub timed_out: bool,
    /// `output` is not the whole stream.
    pub truncated: bool,
    /// Lines of the whole stream.
    pub total_lines: i64,
    /// Bytes of the whole (sanitized) stream.
    pub total_bytes: i64,
    /// Lines in `output` (notice excluded).
    pub output_lines: i64,
    /// Bytes in `output` (notice excluded).
    pub output_bytes: i64,
    /// Set when the full stream was spilled to `artifact://<artifactId>`.
    pub artifact_id: Option<String>,
    /// The shell's working directory after the command.
    pub working_dir: Option<String>,
    /// The persistent shell had to be started afresh for this run.
    pub session_reset: bool,
    /// This command ended the shell (`exit`, `exec`, a bash that could not
    /// be brought back from an interrupt): what earlier commands set is gone.
    pub session_ended: bool,
    /// The run was still going at `yieldAfterMs` and goes on as this job
    /// (`Shell.poll` it); `output` is what it printed until then.
    #[napi(ts_type = "number | null")]
    pub backgrounded: Either<u32, Null>,
}

/// A core count as a JS number.
pub fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl From<conch_core::shell::BashResult> for BashResult {
    fn from(r: conch_core::shell::BashResult) -> Self {
        let s = r.summary;
        BashResult {
            output: s.output,
            exit_code: r.exit_code,
            cancelled: r.cancelled,
            timed_out: r.timed_out,
            truncated: s.truncated,
            total_lines: count(s.total_lines),
            total_bytes: count(s.total_bytes),
            output_lines: count(s.output_lines),
            output_bytes: count(s.output_bytes),
            artifact_id: s.artifact_id,
            working_dir: r.working_dir,
            session_reset: r.session_reset,
            session_ended: r.session_ended,
            backgrounded: r.backgrounded.map_or(Either::B(Null), Either::A),
        }
    }
}
