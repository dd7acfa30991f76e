//! Session jobs: what a command left writing in the background, listed by
//! `Shell.jobs()` and read by `Shell.poll()`. The types are the core's
//! (`conch_core::jobs`) in camelCase, durations and times in milliseconds;
//! every option value is checked by the core's parser for it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use conch_core::input::until_option;
use conch_core::input::{TimeUnit, count_option, interval_option, max_bytes_option};
use conch_core::jobs as core;
use napi_derive::napi;

use crate::errors::{JsResult, core_error};
use crate::options;
use crate::pty::cells;
use crate::result::count;
use crate::signal::Signal;

/// What `Shell.poll` waits for and reads.
#[napi(object, object_to_js = false)]
pub struct PollOptions {
    /// The longest the poll waits for the job to end or `until` to match,
    /// in milliseconds (>= 0; default 0: read what is there and return).
    pub wait_ms: Option<f64>,
    /// A regular expression (Rust `regex` syntax): the poll returns as soon
    /// as the output it read matches.
    pub until: Option<String>,
    /// The most output one poll returns: the newest, when more arrived
    /// (default: the shell's `maxBytes`).
    pub max_bytes: Option<f64>,
    /// Read from this offset of the job's output instead of where the
    /// previous poll stopped.
    pub cursor: Option<f64>,
    /// Aborting it ends the wait early (the poll resolves with what
    /// arrived); the job goes on.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Signal>,
}

/// What one poll of a job read.
#[napi(object, object_from_js = false)]
pub struct JobPoll {
    /// The job's number in its session.
    pub job: u32,
    #[napi(ts_type = "'running' | 'exited' | 'killed' | 'timed_out'")]
    pub status: String,
    /// Set once a job conch started exited by itself; absent while it
    /// runs, when killed or timed out, and for work a command left behind.
    pub exit_code: Option<i32>,
    /// Sanitized output from `cursor` to the end of what arrived (at most
    /// `maxBytes`: the newest).
    pub output: String,
    /// The offset `output` starts at: the requested one, or later when what
    /// lay between is no longer kept (`omittedBytes`).
    pub cursor: i64,
    /// Where the next poll reads from.
    pub next_cursor: i64,
    /// Bytes of sanitized output the job has written so far.
    pub total_bytes: i64,
    /// Bytes between the requested offset and `cursor`, skipped because
    /// they are no longer kept or did not fit (the artifact holds them).
    pub omitted_bytes: i64,
    /// The artifact holding the whole output, once it outgrew memory.
    pub artifact_id: Option<String>,
    /// The artifact stopped at the shell's `jobArtifactCap`: it holds the
    /// first bytes of the output only.
    pub artifact_truncated: bool,
    /// Milliseconds since the job started, until it ended.
    pub elapsed_ms: i64,
}

/// One job as `Shell.jobs()` lists it.
#[napi(object, object_from_js = false)]
pub struct JobInfo {
    /// The job's number in its session (from 1, never reused).
    pub job: u32,
    /// The command that started it.
    pub command: String,
    #[napi(ts_type = "'running' | 'exited' | 'killed' | 'timed_out'")]
    pub status: String,
    /// The exit status of a job conch started (`Shell.start`, a run moved
    /// to the background) that exited; absent while it runs, when it was
    /// killed or timed out, and for work a command left behind.
    pub exit_code: Option<i32>,
    /// When the command that started it started, in milliseconds since the
    /// Unix epoch (like `Date.now()`).
    pub started_ms: i64,
    /// Milliseconds since the job started, until it ended.
    pub elapsed_ms: i64,
    /// Bytes of sanitized output the job has written so far.
    pub total_bytes: i64,
    /// The artifact holding the whole output, once it outgrew memory.
    pub artifact_id: Option<String>,
    pub artifact_truncated: bool,
}

fn millis(d: Duration) -> i64 {
    count(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl From<core::JobPoll> for JobPoll {
    fn from(p: core::JobPoll) -> Self {
        JobPoll {
            job: p.job,
            status: p.status.as_str().to_owned(),
            exit_code: p.exit_code,
            output: p.output,
            cursor: count(p.cursor),
            next_cursor: count(p.next_cursor),
            total_bytes: count(p.total_bytes),
            omitted_bytes: count(p.omitted_bytes),
            artifact_id: p.artifact_id,
            artifact_truncated: p.artifact_truncated,
            elapsed_ms: millis(p.elapsed),
        }
    }
}

impl From<core::JobInfo> for JobInfo {
    fn from(j: core::JobInfo) -> Self {
        JobInfo {
            job: j.job,
            command: j.command,
            status: j.status.as_str().to_owned(),
            exit_code: j.exit_code,
            started_ms: count(core::epoch_ms(j.started)),
            elapsed_ms: millis(j.elapsed),
            total_bytes: count(j.total_bytes),
            artifact_id: j.artifact_id,
            artifact_truncated: j.artifact_truncated,
        }
    }
}

/// The job number a JS caller gave: a whole number >= 0; `Err(n)` for a
/// number past the ids a session can have (it names no job).
pub fn job_id(value: f64) -> JsResult<Result<core::JobId, u64>> {
    let n = count_option("job", value).map_err(core_error)? as u64;
    Ok(core::JobId::try_from(n).map_err(|_| n))
}

/// The error for a job number no session can have.
pub fn unknown_job(n: u64) -> conch_core::Error {
    conch_core::Error::NotFound(format!("no job {n} in this session"))
}

/// The size of a job's terminal.
#[napi(object, object_to_js = false)]
pub struct PtySize {
    pub cols: f64,
    pub rows: f64,
}

/// A command for `Shell.start`: it runs as a job beside the session.
#[napi(object, object_to_js = false)]
pub struct StartOptions {
    pub command: String,
    /// Directory to start in, resolved against the session's cwd.
    pub cwd: Option<String>,
    /// Variables exported for the job only.
    pub env: Option<HashMap<String, String>>,
    /// Kills the job's whole process tree this many milliseconds after it
    /// started (status `'timed_out'`); default: no deadline.
    pub timeout_ms: Option<f64>,
    /// Give the job an input pipe for `write` / `closeStdin`; default false
    /// (its stdin is `/dev/null`).
    pub stdin: Option<bool>,
    /// Run the job on a terminal of this size (`write` / `writeKey` type on
    /// it); default: no terminal.
    pub pty: Option<PtySize>,
}

/// `StartOptions` as the core's, every value checked by the core's parsers.
pub fn start_options(o: StartOptions) -> JsResult<core::JobOptions> {
    let pty = match o.pty {
        Some(size) => Some((
            cells("pty.cols", Some(size.cols), 0)?,
            cells("pty.rows", Some(size.rows), 0)?,
        )),
        None => None,
    };
    Ok(core::JobOptions {
        command: o.command,
        cwd: o.cwd.map(PathBuf::from),
        env: options::env(o.env),
        timeout: options::timeout(o.timeout_ms)?,
        stdin: o.stdin.unwrap_or(false),
        pty,
    })
}

/// `PollOptions` checked by the core's parsers, and the signal apart.
pub fn poll_options(options: Option<PollOptions>) -> JsResult<(core::PollOptions, Option<Signal>)> {
    let Some(o) = options else {
        return Ok((core::PollOptions::default(), None));
    };
    let opts = core::PollOptions {
        wait: o
            .wait_ms
            .map(|ms| interval_option("waitMs", ms, TimeUnit::Milliseconds))
            .transpose()
            .map_err(core_error)?
            .unwrap_or_default(),
        until: o
            .until
            .map(|pattern| until_option("until", &pattern))
            .transpose()
            .map_err(core_error)?,
        max_bytes: o
            .max_bytes
            .map(|n| max_bytes_option("maxBytes", n))
            .transpose()
            .map_err(core_error)?,
        cursor: o
            .cursor
            .map(|n| count_option("cursor", n).map(|n| n as u64))
            .transpose()
            .map_err(core_error)?,
    };
    Ok((opts, o.signal))
}
