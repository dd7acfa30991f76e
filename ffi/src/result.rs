//! `conch_bash_result`: what a run produced, as a C struct.

use conch_core::shell::BashResult;
use std::ffi::{CString, c_char};
use std::ptr;

use crate::boundary::{self, c_owned, free_c_string, into_raw_or_null, opt_c_owned};
use crate::handle::{self, Castable, OwnershipBox};
use crate::status::FfiResult;

/// The result of one command (the same fields in every face; see
/// docs/api/c.md).
///
/// Owned by the caller: free it with `conch_bash_result_free`, which also
/// frees the strings in it (never pass them to `conch_string_free`).
#[repr(C)]
pub struct conch_bash_result {
    /// The text the sink kept (the tail, or head + tail), prefixed by
    /// `[<notice>]\n` on timeout or cancellation. Never NULL.
    pub output: *const c_char,
    /// The exit status; meaningful only when `has_exit_code`.
    pub exit_code: i32,
    /// False when the command was killed, cancelled, or its status is unknown.
    pub has_exit_code: bool,
    /// True on abort, on timeout, and when conch ended the command itself
    /// (the session's process limit, a shell that stopped reporting): the
    /// output then starts with the notice saying why.
    pub cancelled: bool,
    /// True when the deadline ended the command.
    pub timed_out: bool,
    /// `output` is not the whole stream.
    pub truncated: bool,
    /// The persistent shell had to be started afresh for this run.
    pub session_reset: bool,
    /// This command ended the shell (`exit`, `exec`, a signal to bash, or a
    /// bash that could not be brought back from an interrupt): variables,
    /// functions and aliases set earlier are gone.
    pub session_ended: bool,
    /// Lines of the whole stream.
    pub total_lines: u64,
    /// Bytes of the whole stream.
    pub total_bytes: u64,
    /// Lines in `output` (the notice excluded).
    pub output_lines: u64,
    /// Bytes in `output` (the notice excluded).
    pub output_bytes: u64,
    /// Set when the full stream was spilled to an artifact (`artifact://<id>`);
    /// NULL when none.
    pub artifact_id: *const c_char,
    /// The shell's cwd after the command; NULL when unknown.
    pub working_dir: *const c_char,
    /// The command was still running at the run's `yield_after_ms` and goes
    /// on as this job; meaningful only when `has_backgrounded`.
    pub backgrounded: u32,
    pub has_backgrounded: bool,
    /// The connections the sandbox's domain policy refused while the
    /// command ran, as `"host:port"`, `sandbox_violations_count` of them,
    /// the array also ended by a NULL pointer; NULL when none. Each is also
    /// a line `[sandbox] blocked: …` at the end of `output`.
    pub sandbox_violations: *const *const c_char,
    pub sandbox_violations_count: usize,
}

impl Castable for conch_bash_result {
    type Ownership = OwnershipBox;
    type RustType = conch_bash_result;
}

/// Converts a core result into a heap `conch_bash_result` for C.
pub(crate) fn into_c(result: BashResult) -> FfiResult<*mut conch_bash_result> {
    let BashResult {
        summary: s,
        exit_code,
        cancelled,
        timed_out,
        working_dir,
        session_reset,
        session_ended,
        backgrounded,
        sandbox_violations,
    } = result;
    let output = c_owned(s.output)?;
    let artifact_id = opt_c_owned(s.artifact_id)?;
    let working_dir = opt_c_owned(working_dir)?;
    let violations = sandbox_violations
        .into_iter()
        .map(c_owned)
        .collect::<FfiResult<Vec<_>>>()?;
    let (violations, violations_count) = string_array(violations);
    Ok(handle::into_raw(conch_bash_result {
        output: output.into_raw(),
        exit_code: exit_code.unwrap_or(0),
        has_exit_code: exit_code.is_some(),
        cancelled,
        timed_out,
        truncated: s.truncated,
        session_reset,
        session_ended,
        total_lines: s.total_lines,
        total_bytes: s.total_bytes,
        output_lines: s.output_lines,
        output_bytes: s.output_bytes,
        artifact_id: into_raw_or_null(artifact_id),
        working_dir: into_raw_or_null(working_dir),
        backgrounded: backgrounded.unwrap_or(0),
        has_backgrounded: backgrounded.is_some(),
        sandbox_violations: violations,
        sandbox_violations_count: violations_count,
    }))
}

/// `strings` as a C array ended by a NULL pointer, and their count; NULL
/// and 0 when there are none. Freed by [`free_string_array`].
fn string_array(strings: Vec<CString>) -> (*const *const c_char, usize) {
    let count = strings.len();
    if count == 0 {
        return (ptr::null(), 0);
    }
    let items: Vec<*const c_char> = strings
        .into_iter()
        .map(|s| s.into_raw().cast_const())
        .chain([ptr::null()])
        .collect();
    (handle::into_raw_array(items).0.cast_const(), count)
}

/// Frees what [`string_array`] made.
///
/// # Safety
/// `array` and `count` are what [`string_array`] returned, not freed before.
unsafe fn free_string_array(array: *const *const c_char, count: usize) {
    if array.is_null() {
        return;
    }
    // SAFETY: the array holds `count` strings and the NULL terminator, a
    // boxed slice from `into_raw_array` (caller's guarantee).
    let items = unsafe { handle::take_array(array.cast_mut(), count + 1) };
    for item in items.into_iter().flatten() {
        // SAFETY: each item came from `CString::into_raw` (the terminator is
        // NULL, a no-op).
        unsafe { free_c_string(item) };
    }
}

/// Frees a result and its strings. NULL is a no-op.
///
/// # Safety
/// `result` is NULL or a result returned by conch, not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_bash_result_free(result: *mut conch_bash_result) {
    boundary::quiet("conch_bash_result_free", || {
        // SAFETY: `result` is NULL or came from `into_c`, not freed before
        // (caller's guarantee), and each of its strings from
        // `CString::into_raw`.
        unsafe {
            let Some(r) = handle::take(result) else {
                return;
            };
            free_c_string(r.output);
            free_c_string(r.artifact_id);
            free_c_string(r.working_dir);
            free_string_array(r.sandbox_violations, r.sandbox_violations_count);
        }
    });
}
