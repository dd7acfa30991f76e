//! Background work of a session, as jobs: what a command leaves running
//! (`server &`, `(sleep 1; echo late) &`) keeps writing after the command
//! returned, and that output belongs to the command that started it.
//!
//! Each run of a [`crate::Shell`] has an output pipe of its own (see
//! `shell::protocol`). When a run ends while something it started still
//! holds that pipe, the pipe becomes a job of the session: its output goes
//! on being read (by one reader thread for the whole process, so a chatty
//! server never blocks on a full pipe), sanitized, kept bounded and
//! spilled to an artifact like any output, and read with
//! [`crate::Shell::poll`]; [`crate::Shell::jobs`] lists the jobs. A job ends
//! when the last process holding its pipe closes it or exits.
//!
//! Job ids are never reused in a session. The session keeps every running
//! job and the last [`FINISHED_KEPT`] finished ones.

mod job;
mod reader;
mod table;

pub(crate) use job::Job;
pub(crate) use table::JobTable;

use std::time::{Duration, SystemTime};

use regex::Regex;
use serde::Serialize;

/// A job's number in its session, from 1, never reused.
pub type JobId = u32;

/// How many finished jobs a session keeps for [`crate::Shell::jobs`] and
/// [`crate::Shell::poll`]; older ones are forgotten.
pub const FINISHED_KEPT: usize = 16;

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Something still holds its output.
    Running,
    /// It ended by itself.
    Exited,
    /// The session killed it (it closed, or its bash could not be kept).
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
#[derive(Debug, Clone, Default)]
pub struct PollOptions {
    /// The longest the poll waits for the job to end or `until` to match
    /// (zero: read what is there and return).
    pub wait: Duration,
    /// Return as soon as the output read by this poll matches (the match
    /// may span what arrived in several pieces).
    pub until: Option<Regex>,
    /// The most output one poll returns: the newest, when more arrived
    /// (default: the session's `max_bytes`).
    pub max_bytes: Option<usize>,
    /// Read from this offset of the job's output instead of where the
    /// previous poll stopped.
    pub cursor: Option<u64>,
}

/// What one poll of a job read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobPoll {
    pub job: JobId,
    pub status: JobStatus,
    /// Known only for a job conch started itself; `None` for work a
    /// command left behind (bash alone could tell, and it does not wait).
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
    /// Since the job started, until it ended (JSON: `elapsedMs`).
    #[serde(rename = "elapsedMs", serialize_with = "millis")]
    pub elapsed: Duration,
}

/// One job as [`crate::Shell::jobs`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobInfo {
    pub job: JobId,
    /// The command that started it.
    pub command: String,
    pub status: JobStatus,
    pub exit_code: Option<i32>,
    /// When the command that started it started (JSON: `startedMs`, since
    /// the Unix epoch).
    #[serde(rename = "startedMs", serialize_with = "epoch_millis")]
    pub started: SystemTime,
    /// JSON: `elapsedMs`.
    #[serde(rename = "elapsedMs", serialize_with = "millis")]
    pub elapsed: Duration,
    pub total_bytes: u64,
    pub artifact_id: Option<String>,
}

/// Milliseconds since the Unix epoch (0 for a time before it).
pub fn epoch_ms(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

fn epoch_millis<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(epoch_ms(*t))
}

/// `until` as a face receives it: a regular expression (the `regex`
/// crate's syntax); a bad one is refused, naming the option.
pub fn until_option(name: &str, pattern: &str) -> crate::Result<Regex> {
    Regex::new(pattern).map_err(|e| {
        let why = e.to_string();
        let why = why.lines().last().unwrap_or_default().trim();
        crate::BadValue::new(
            "a valid regular expression",
            format_args!("{pattern:?} ({why})"),
        )
        .named(name)
    })
}
