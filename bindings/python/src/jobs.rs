//! `conch.JobPoll` and `conch.JobInfo`: a session's jobs (what a command
//! left writing in the background) as `Shell.poll` and `Shell.jobs` return
//! them, with the same fields as every other face (docs/api/python.md), in
//! snake_case; durations and times in seconds (`float`), as Python counts
//! them.

use conch_core::jobs::epoch_ms;
use conch_core::{JobInfo, JobPoll};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyString};

use crate::errors::guard;
use crate::repr::{py_bool, py_code, py_text};

/// What one ``Shell.poll`` of a job read.
///
/// ``status``: ``"running"``, ``"exited"``, ``"killed"`` or
/// ``"timed_out"``. ``exit_code`` is the command's exit status once it
/// ended by itself (128 + N for a signal N); ``None`` while it runs, when it
/// was killed or timed out, and for work a command left behind (bash alone
/// could tell, and it does not wait for it). ``output``
/// is the sanitized output from ``cursor`` to the end of what arrived (at
/// most ``max_bytes``: the newest); ``cursor`` is the offset it starts at
/// (later than the requested one when what lay between is no longer kept:
/// ``omitted_bytes``), ``next_cursor`` where the next poll reads from.
/// ``total_bytes`` counts the job's whole output so far; ``artifact_id``
/// names the artifact holding it once it outgrew memory;
/// ``artifact_truncated`` tells that the artifact reached the session's
/// ``job_artifact_cap`` and holds only the first bytes of the output.
/// ``elapsed``: seconds since the job started (until it ended).
#[pyclass(frozen, eq, get_all, module = "conch", name = "JobPoll")]
#[derive(Clone, PartialEq)]
pub struct PyJobPoll {
    pub job: u32,
    pub status: &'static str,
    pub exit_code: Option<i32>,
    pub output: String,
    pub cursor: u64,
    pub next_cursor: u64,
    pub total_bytes: u64,
    pub omitted_bytes: u64,
    pub artifact_id: Option<String>,
    pub artifact_truncated: bool,
    pub elapsed: f64,
}

impl From<JobPoll> for PyJobPoll {
    fn from(p: JobPoll) -> Self {
        PyJobPoll {
            job: p.job,
            status: p.status.as_str(),
            exit_code: p.exit_code,
            output: p.output,
            cursor: p.cursor,
            next_cursor: p.next_cursor,
            total_bytes: p.total_bytes,
            omitted_bytes: p.omitted_bytes,
            artifact_id: p.artifact_id,
            artifact_truncated: p.artifact_truncated,
            elapsed: p.elapsed.as_secs_f64(),
        }
    }
}

#[pymethods]
impl PyJobPoll {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        guard(|| {
            Ok(format!(
                "JobPoll(job={}, status={}, exit_code={}, cursor={}, next_cursor={}, \
                 total_bytes={}, omitted_bytes={}, artifact_id={}, artifact_truncated={}, \
                 elapsed={}, output={})",
                self.job,
                PyString::new(py, self.status).repr()?,
                py_code(self.exit_code),
                self.cursor,
                self.next_cursor,
                self.total_bytes,
                self.omitted_bytes,
                py_text(py, self.artifact_id.as_deref())?,
                py_bool(self.artifact_truncated),
                PyFloat::new(py, self.elapsed).repr()?,
                PyString::new(py, &self.output).repr()?,
            ))
        })
    }
}

/// One job of a session, as ``Shell.jobs()`` lists it.
///
/// ``command`` is the command that started it; ``status``, ``exit_code``,
/// ``total_bytes``, ``artifact_id`` and ``artifact_truncated`` as in
/// ``JobPoll``. ``started``: when
/// that command started, in seconds since the epoch (as ``time.time()``);
/// ``elapsed``: seconds since then, until the job ended.
#[pyclass(frozen, eq, get_all, module = "conch", name = "JobInfo")]
#[derive(Clone, PartialEq)]
pub struct PyJobInfo {
    pub job: u32,
    pub command: String,
    pub status: &'static str,
    pub exit_code: Option<i32>,
    pub started: f64,
    pub elapsed: f64,
    pub total_bytes: u64,
    pub artifact_id: Option<String>,
    pub artifact_truncated: bool,
}

impl From<JobInfo> for PyJobInfo {
    fn from(j: JobInfo) -> Self {
        PyJobInfo {
            job: j.job,
            command: j.command,
            status: j.status.as_str(),
            exit_code: j.exit_code,
            started: epoch_ms(j.started) as f64 / 1000.0,
            elapsed: j.elapsed.as_secs_f64(),
            total_bytes: j.total_bytes,
            artifact_id: j.artifact_id,
            artifact_truncated: j.artifact_truncated,
        }
    }
}

#[pymethods]
impl PyJobInfo {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        guard(|| {
            Ok(format!(
                "JobInfo(job={}, status={}, exit_code={}, started={}, elapsed={}, \
                 total_bytes={}, artifact_id={}, artifact_truncated={}, command={})",
                self.job,
                PyString::new(py, self.status).repr()?,
                py_code(self.exit_code),
                PyFloat::new(py, self.started).repr()?,
                PyFloat::new(py, self.elapsed).repr()?,
                self.total_bytes,
                py_text(py, self.artifact_id.as_deref())?,
                py_bool(self.artifact_truncated),
                PyString::new(py, &self.command).repr()?,
            ))
        })
    }
}
