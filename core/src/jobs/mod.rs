//! Background work of a session, as jobs: commands started beside the
//! session ([`crate::Shell::start`]), a run that outlived its
//! `yield_after` (see [`crate::RunOptions::yield_after`]), and what a
//! command leaves running (`server &`, `(sleep 1; echo late) &`).
//!
//! A started job runs in a bash of its own, given the session's state at
//! that moment (variables, functions, aliases, options, umask; the cwd or
//! the job's own), as `( command ) &` typed in the session would run it:
//! its changes never reach the session. That bash is a child subreaper in
//! its own session, held by the host's guard like the session's bash, so
//! whatever the command starts (`setsid` and double forks included) stays
//! in the job's tree until the job is killed. It reports the command's
//! exit status on a pipe of its own, then waits for the job's output to
//! close; what the command left that does not hold the output dies with
//! the job.
//!
//! Every job's output is read at once by one reader thread for the whole
//! process (so a chatty server never blocks on a full pipe between polls),
//! sanitized, the newest `max_bytes` kept in memory and the whole stream
//! spilled to an artifact (up to a cap), and read with
//! [`crate::Shell::poll`]. A job ends when its command ended and the last
//! process holding its output closed it. Job ids are never reused in a
//! session. A finished job stays listed until its output was read to the
//! end, and at least [`FINISHED_KEPT_FOR`] after it ended.

mod control;
mod job;
mod launch;
mod reader;
mod table;

pub(crate) use control::{Control, Role};
pub(crate) use job::{Job, JobSpec, Processes};
pub(crate) use launch::{Launched, ROOT_SEQ, Spec, launch};
pub(crate) use table::{JobTable, NewJob, Slot};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::{read, shape};

/// A job's number in its session, from 1, never reused.
pub type JobId = u32;

/// How long a finished job whose output was read to the end stays
/// listed; one whose output was not stays until it is.
pub const FINISHED_KEPT_FOR: Duration = Duration::from_secs(600);

/// Called once per job, after it ended and what it left was killed, with
/// the job as [`crate::Shell::jobs`] lists it; runs on a thread of
/// conch's, never on one that holds a lock of the session.
#[derive(Clone)]
pub struct JobExitHook(Arc<dyn Fn(JobInfo) + Send + Sync>);

impl JobExitHook {
    pub fn new(hook: impl Fn(JobInfo) + Send + Sync + 'static) -> Self {
        JobExitHook(Arc::new(hook))
    }

    /// Tells the hook of a job's end (the engine does, and a remote
    /// client for a job of the server's).
    pub fn call(&self, info: JobInfo) {
        (self.0)(info)
    }
}

impl std::fmt::Debug for JobExitHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JobExitHook")
    }
}

/// A command to start as a job ([`crate::Shell::start`]).
// Serialized in the form it is read from: a remote client sends it so.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct JobOptions {
    /// The bash command.
    pub command: String,
    /// Directory to start in, resolved against the session cwd (`None`:
    /// the session cwd).
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Variables exported for the job only.
    #[serde(
        default,
        deserialize_with = "read::env",
        serialize_with = "crate::wire::env_map"
    )]
    #[schemars(schema_with = "shape::env")]
    pub env: Vec<(String, String)>,
    /// Kills the job's whole tree (the kill escalation) this long after it
    /// started, whatever the session runs meanwhile. `None`: no deadline.
    #[serde(
        default,
        deserialize_with = "read::timeout",
        serialize_with = "crate::wire::optional_secs"
    )]
    #[schemars(schema_with = "shape::optional_seconds")]
    pub timeout: Option<Duration>,
    /// Give the job an input pipe for [`crate::Shell::write`] and
    /// [`crate::Shell::close_stdin`] (otherwise its stdin is `/dev/null`).
    #[serde(default)]
    pub stdin: bool,
    /// Run it on a terminal of this size (columns, rows), clamped as a
    /// PTY run's is (20–400 columns, 5–200 rows; zero is refused): its
    /// input and output are the terminal, keys can be sent, programs that
    /// want a terminal get one. On the wire: `{"cols": C, "rows": R}`.
    #[serde(
        default,
        deserialize_with = "read::terminal",
        serialize_with = "crate::wire::terminal"
    )]
    #[schemars(schema_with = "shape::terminal")]
    pub pty: Option<(u16, u16)>,
}

impl JobOptions {
    /// Options for `command` with every other field at its default.
    pub fn new(command: impl Into<String>) -> Self {
        JobOptions {
            command: command.into(),
            ..Default::default()
        }
    }
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Its command runs, or something still holds its output.
    Running,
    /// It ended by itself.
    Exited,
    /// It was killed ([`crate::Shell::kill`], the session closed, or the
    /// session's bash it ran in could not be kept).
    Killed,
    /// Its own timeout killed it.
    TimedOut,
}

impl JobStatus {
    /// The status as every face spells it: `running`, `exited`, `killed`,
    /// `timed_out`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Exited => "exited",
            JobStatus::Killed => "killed",
            JobStatus::TimedOut => "timed_out",
        }
    }
}

/// What [`crate::Shell::poll`] waits for and reads.
// Serialized in the form it is read from: a remote client sends it so.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(default)]
pub struct PollOptions {
    /// The longest the poll waits for the job to end or `until` to match
    /// (zero: read what is there and return).
    #[serde(deserialize_with = "read::wait", serialize_with = "crate::wire::secs")]
    #[schemars(schema_with = "shape::seconds")]
    pub wait: Duration,
    /// Return as soon as the output read by this poll matches (the match
    /// may span what arrived in several pieces).
    #[serde(
        deserialize_with = "read::until",
        serialize_with = "crate::wire::pattern"
    )]
    #[schemars(schema_with = "shape::optional_string")]
    pub until: Option<Regex>,
    /// The most output one poll returns: the newest, when more arrived
    /// (default: the session's `max_bytes`).
    #[serde(deserialize_with = "read::poll_max_bytes")]
    #[schemars(schema_with = "shape::positive")]
    pub max_bytes: Option<usize>,
    /// Read from this offset of the job's output instead of where the
    /// previous poll stopped.
    #[serde(deserialize_with = "read::cursor")]
    #[schemars(schema_with = "shape::optional_count")]
    pub cursor: Option<u64>,
}

/// What one poll of a job read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobPoll {
    /// The job's number in its session.
    pub job: JobId,
    /// Where the job is in its life.
    pub status: JobStatus,
    /// The command's exit status once it ended by itself (128 + N for a
    /// signal N); `None` while it runs, when it was killed or timed out,
    /// and for work a command left behind (`cmd &`: bash alone could
    /// tell, and it does not wait).
    pub exit_code: Option<i32>,
    /// Sanitized output from `cursor` to the end of what arrived (at most
    /// `max_bytes`: the newest).
    pub output: String,
    /// The offset `output` starts at: the requested one, or later when
    /// what lay between is no longer kept (`omitted_bytes`).
    pub cursor: u64,
    /// Where the next poll reads from.
    pub next_cursor: u64,
    /// Bytes of sanitized output the job has written so far.
    pub total_bytes: u64,
    /// Bytes between the requested offset and `cursor`, skipped because
    /// they are no longer kept or did not fit (the artifact holds them).
    pub omitted_bytes: u64,
    /// The artifact holding the whole output, once it outgrew memory.
    pub artifact_id: Option<String>,
    /// The artifact reached the job's cap: it holds the first bytes of the
    /// output, not all of it (memory goes on keeping the newest).
    pub artifact_truncated: bool,
    /// Since the job started, until it ended.
    #[serde(
        serialize_with = "crate::wire::secs",
        deserialize_with = "crate::wire::read_secs"
    )]
    #[schemars(schema_with = "shape::seconds")]
    pub elapsed: Duration,
    /// The job runs on a terminal and a process in its foreground is
    /// blocked reading it, its output quiet: it waits for input (write
    /// the answer, or kill it). False otherwise, and for a job without a
    /// terminal.
    #[serde(default)]
    pub waiting_for_input: bool,
}

/// One job as [`crate::Shell::jobs`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobInfo {
    /// The job's number in its session.
    pub job: JobId,
    /// The command that started it.
    pub command: String,
    /// Where the job is in its life.
    pub status: JobStatus,
    /// As [`JobPoll::exit_code`].
    pub exit_code: Option<i32>,
    /// When the command that started it started (since the Unix epoch).
    #[serde(
        serialize_with = "crate::wire::epoch_secs",
        deserialize_with = "crate::wire::read_epoch_secs"
    )]
    #[schemars(schema_with = "shape::seconds")]
    pub started: SystemTime,
    /// Since the job started, until it ended.
    #[serde(
        serialize_with = "crate::wire::secs",
        deserialize_with = "crate::wire::read_secs"
    )]
    #[schemars(schema_with = "shape::seconds")]
    pub elapsed: Duration,
    /// Bytes of sanitized output the job has written so far.
    pub total_bytes: u64,
    /// The artifact holding the whole output, once it outgrew memory.
    pub artifact_id: Option<String>,
    /// The artifact reached the job's cap.
    pub artifact_truncated: bool,
}

/// Milliseconds since the Unix epoch (0 for a time before it).
pub fn epoch_ms(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
