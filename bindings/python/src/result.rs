//! `conch.BashResult`: what a run produced, with the same fields as every
//! other face (docs/api/python.md), in snake_case, filled from the core's
//! result.

use pyo3::prelude::*;

use crate::repr::{py_bool, py_code, py_text};

/// What one command produced.
///
/// ``output`` is the text the sink kept (the tail, or head + tail), with a
/// ``[notice]`` line first when the command timed out or was cancelled.
/// ``exit_code`` is ``None`` when the command was killed, cancelled or its
/// status is unknown. ``cancelled`` is true on abort *and* on timeout;
/// ``timed_out`` only on timeout. ``truncated`` tells that ``output`` is
/// not the whole stream; ``total_lines``/``total_bytes`` count the whole
/// stream, ``output_lines``/``output_bytes`` what ``output`` holds (notice
/// excluded). ``artifact_id`` is set when the full stream was spilled to an
/// artifact (read it back with ``ArtifactStore.resolve("artifact://<id>")``).
/// ``working_dir`` is the shell's cwd after the command; ``session_reset``
/// tells that the persistent shell had to be started afresh for this run;
/// ``session_ended`` that this command ended the shell (``exit``, ``exec``,
/// a bash that could not be brought back from an interrupt): what earlier
/// commands set is gone. ``backgrounded`` is the job the command goes on
/// as when it still ran at the run's ``yield_after`` (``output`` is what it
/// wrote until then, after a notice saying so), else ``None``.
#[pyclass(frozen, eq, get_all, module = "conch", name = "BashResult")]
#[derive(Clone, PartialEq, Eq)]
pub struct PyBashResult {
    pub output: String,
    pub exit_code: Option<i32>,
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
    pub session_ended: bool,
    pub backgrounded: Option<u32>,
}

impl From<conch_core::shell::BashResult> for PyBashResult {
    fn from(r: conch_core::shell::BashResult) -> Self {
        let s = r.summary;
        PyBashResult {
            output: s.output,
            exit_code: r.exit_code,
            cancelled: r.cancelled,
            timed_out: r.timed_out,
            truncated: s.truncated,
            total_lines: s.total_lines,
            total_bytes: s.total_bytes,
            output_lines: s.output_lines,
            output_bytes: s.output_bytes,
            artifact_id: s.artifact_id,
            working_dir: r.working_dir,
            session_reset: r.session_reset,
            session_ended: r.session_ended,
            backgrounded: r.backgrounded,
        }
    }
}

#[pymethods]
impl PyBashResult {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        crate::errors::guard(|| self.repr(py))
    }
}

impl PyBashResult {
    fn repr(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "BashResult(exit_code={}, cancelled={}, timed_out={}, truncated={}, \
             total_lines={}, total_bytes={}, output_lines={}, output_bytes={}, \
             artifact_id={}, working_dir={}, session_reset={}, session_ended={}, backgrounded={}, \
             output={})",
            py_code(self.exit_code),
            py_bool(self.cancelled),
            py_bool(self.timed_out),
            py_bool(self.truncated),
            self.total_lines,
            self.total_bytes,
            self.output_lines,
            self.output_bytes,
            py_text(py, self.artifact_id.as_deref())?,
            py_text(py, self.working_dir.as_deref())?,
            py_bool(self.session_reset),
            py_bool(self.session_ended),
            self.backgrounded.map_or("None".into(), |j| j.to_string()),
            py_text(py, Some(&self.output))?,
        ))
    }
}
