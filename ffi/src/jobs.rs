//! The jobs of a `conch_shell`: what a command leaves writing in the
//! background (`server &`, `(sleep 1; echo late) &`) keeps its output apart
//! from later runs, as a job of the session, listed by `conch_shell_jobs`
//! and read by `conch_shell_poll`.

use std::ffi::{CString, c_char, c_int};

use conch_core::jobs::{epoch_ms, until_option};
use conch_core::{JobInfo, JobPoll, JobStatus, PollOptions};

use crate::boundary::{self, c_owned, free_c_string, into_raw_or_null, opt_c_owned, out_arg};
use crate::cancel::conch_cancel_token;
use crate::handle::{self, Castable, OwnershipBox};
use crate::options;
use crate::shell::conch_shell;
use crate::status::{FfiError, FfiResult};

/// How `conch_shell_poll` waits and reads. Zero-initialize it (`= {0}`),
/// then set what you need: zero / NULL fields are the defaults (read what
/// arrived since the previous poll and return at once).
#[repr(C)]
pub struct conch_poll_options {
    /// The longest the call waits, in milliseconds, for the job to end or
    /// `until` to match; 0: no wait. At most 2147483647 (a larger value is
    /// `CONCH_ERR_INVALID_ARG`, never clamped).
    pub wait_ms: u64,
    /// A regular expression (the Rust `regex` crate's syntax): the call
    /// returns as soon as the output this poll read matches (the match may
    /// span pieces that arrived apart); NULL: none. A bad one is
    /// `CONCH_ERR_INVALID_ARG` naming `opts->until`.
    pub until: *const c_char,
    /// The most output one poll returns (the newest, when more arrived);
    /// 0: the shell's `max_bytes`.
    pub max_bytes: usize,
    /// The offset of the job's output to read from, when `has_cursor`
    /// (past the end reads from the end).
    pub cursor: u64,
    /// false: read from where the previous poll stopped (`cursor` is
    /// ignored).
    pub has_cursor: bool,
    /// Ends the wait early when cancelled, from any thread (never the job:
    /// the poll returns what it read); NULL: none.
    pub cancel: *const conch_cancel_token,
}

/// What one poll of a job read. Owned by the caller: free it with
/// `conch_job_poll_free`, which also frees the strings in it.
#[repr(C)]
pub struct conch_job_poll {
    /// The job's id in its shell.
    pub job: u32,
    /// Where the job is: `"running"`, `"exited"`, `"killed"` (the session
    /// killed it) or `"timed_out"`. Never NULL.
    pub status: *const c_char,
    /// The job's exit status; meaningful only when `has_exit_code`.
    pub exit_code: i32,
    /// False for work a command left behind: bash alone could tell its
    /// status, and it does not wait for it.
    pub has_exit_code: bool,
    /// Sanitized output from `cursor` on (at most `max_bytes`: the newest).
    /// Never NULL.
    pub output: *const c_char,
    /// The offset `output` starts at: the requested one, or later when what
    /// lay between is no longer kept (`omitted_bytes`).
    pub cursor: u64,
    /// Where the next poll without a cursor reads from.
    pub next_cursor: u64,
    /// Bytes of sanitized output the job has written so far.
    pub total_bytes: u64,
    /// Bytes between the requested offset and `cursor`, skipped because
    /// they are no longer kept or did not fit (the artifact holds them).
    pub omitted_bytes: u64,
    /// The artifact holding the whole output (`artifact://<id>`), once it
    /// outgrew memory; NULL when none.
    pub artifact_id: *const c_char,
    /// The artifact stopped at the shell's `job_artifact_cap`: it holds the
    /// first bytes of the output, not all of it.
    pub artifact_truncated: bool,
    /// Milliseconds since the job started, until it ended.
    pub elapsed_ms: u64,
}

impl Castable for conch_job_poll {
    type Ownership = OwnershipBox;
    type RustType = conch_job_poll;
}

/// One job as `conch_shell_jobs` lists it. The array it is in is owned by
/// the caller: free it with `conch_job_info_free`, which also frees the
/// strings in it.
#[repr(C)]
pub struct conch_job_info {
    /// The job's id in its shell, from 1, never reused.
    pub job: u32,
    /// The command that started it. Never NULL.
    pub command: *const c_char,
    /// `"running"`, `"exited"`, `"killed"` or `"timed_out"`. Never NULL.
    pub status: *const c_char,
    /// The job's exit status; meaningful only when `has_exit_code`.
    pub exit_code: i32,
    /// False for work a command left behind (see `conch_job_poll`).
    pub has_exit_code: bool,
    /// When the command that started it started, in milliseconds since the
    /// Unix epoch.
    pub started_ms: u64,
    /// Milliseconds since the job started, until it ended.
    pub elapsed_ms: u64,
    /// Bytes of sanitized output the job has written so far.
    pub total_bytes: u64,
    /// The artifact holding the whole output; NULL when none.
    pub artifact_id: *const c_char,
    /// The artifact stopped at the shell's `job_artifact_cap`: it holds the
    /// first bytes of the output, not all of it.
    pub artifact_truncated: bool,
}

/// A job status as a string owned by the struct it goes into.
fn status_text(status: JobStatus) -> FfiResult<CString> {
    c_owned(status.as_str().to_string())
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// # Safety
/// `opts` fields are NULL or valid, as documented on `conch_poll_options`.
unsafe fn poll_options(
    opts: &conch_poll_options,
) -> FfiResult<(PollOptions, Option<conch_core::CancelToken>)> {
    // SAFETY (whole block): every pointer field is NULL or valid (caller).
    unsafe {
        let until = boundary::opt_str_arg(opts.until, "opts->until")?
            .map(|pattern| until_option("opts->until", pattern))
            .transpose()
            .map_err(|e| FfiError::arg(e.to_string()))?;
        Ok((
            PollOptions {
                wait: options::interval(opts.wait_ms, "opts->wait_ms")?.unwrap_or_default(),
                until,
                max_bytes: options::opt_max_bytes(opts.max_bytes, "opts->max_bytes")?,
                cursor: opts.has_cursor.then_some(opts.cursor),
            },
            options::cancel(opts.cancel),
        ))
    }
}

fn poll_into_c(poll: JobPoll) -> FfiResult<*mut conch_job_poll> {
    let JobPoll {
        job,
        status,
        exit_code,
        output,
        cursor,
        next_cursor,
        total_bytes,
        omitted_bytes,
        artifact_id,
        artifact_truncated,
        elapsed,
    } = poll;
    let status = status_text(status)?;
    let output = c_owned(output)?;
    let artifact_id = opt_c_owned(artifact_id)?;
    Ok(handle::into_raw(conch_job_poll {
        job,
        status: status.into_raw(),
        exit_code: exit_code.unwrap_or(0),
        has_exit_code: exit_code.is_some(),
        output: output.into_raw(),
        cursor,
        next_cursor,
        total_bytes,
        omitted_bytes,
        artifact_id: into_raw_or_null(artifact_id),
        artifact_truncated,
        elapsed_ms: millis(elapsed),
    }))
}

/// A listed job with its strings still owned by Rust: nothing leaks if a
/// later job's strings fail.
struct OwnedInfo {
    info: JobInfo,
    command: CString,
    status: CString,
    artifact_id: Option<CString>,
}

impl OwnedInfo {
    fn new(info: JobInfo) -> FfiResult<OwnedInfo> {
        Ok(OwnedInfo {
            command: c_owned(info.command.clone())?,
            status: status_text(info.status)?,
            artifact_id: opt_c_owned(info.artifact_id.clone())?,
            info,
        })
    }

    fn into_c(self) -> conch_job_info {
        let OwnedInfo {
            info,
            command,
            status,
            artifact_id,
        } = self;
        conch_job_info {
            job: info.job,
            command: command.into_raw(),
            status: status.into_raw(),
            exit_code: info.exit_code.unwrap_or(0),
            has_exit_code: info.exit_code.is_some(),
            started_ms: epoch_ms(info.started),
            elapsed_ms: millis(info.elapsed),
            total_bytes: info.total_bytes,
            artifact_id: into_raw_or_null(artifact_id),
            artifact_truncated: info.artifact_truncated,
        }
    }
}

/// Reads the output of job `job` (an id from `conch_shell_jobs`): what
/// arrived since the previous poll (or from `opts->cursor`), after waiting
/// up to `opts->wait_ms` for the job to end or `opts->until` to match.
///
/// `opts` may be NULL (all defaults: no wait). Blocks the calling thread
/// while it waits; it never waits for a run and a run never waits for it,
/// so it may be called from any thread, also while a run blocks; a
/// cancelled `opts->cancel` ends the wait early (the job goes on). Freeing
/// the shell from another thread ends its jobs, so a waiting poll returns
/// (status `"killed"`).
///
/// On `CONCH_OK`, `*out` is the poll (free it with `conch_job_poll_free`).
/// Errors (`CONCH_ERR_INVALID_ARG`): NULL or invalid arguments, a bad
/// `until`, a `wait_ms` past the bound, a job the shell does not have (`no
/// job <N> in this session`: never started, or finished long ago and
/// forgotten); `CONCH_ERR_CLOSED` for a closed shell.
///
/// # Safety
/// `shell` is a live handle; `opts` is NULL or points to valid options;
/// `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_poll(
    shell: *mut conch_shell,
    job: u32,
    opts: *const conch_poll_options,
    out: *mut *mut conch_job_poll,
) -> c_int {
    boundary::status("conch_shell_poll", || {
        // SAFETY (whole block): the caller's guarantees.
        let (shell, (opts, cancel), out) = unsafe {
            let shell = handle::to_arc(shell, "shell")?;
            let opts = match opts.as_ref() {
                Some(o) => poll_options(o)?,
                None => (PollOptions::default(), None),
            };
            (shell, opts, out_arg(out, "out")?)
        };
        let poll = shell.poll(job, &opts, cancel.as_ref())?;
        *out = poll_into_c(poll)?;
        Ok(())
    })
}

/// Frees a poll and its strings. NULL is a no-op.
///
/// # Safety
/// `poll` is NULL or a poll returned by conch, not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_job_poll_free(poll: *mut conch_job_poll) {
    boundary::quiet("conch_job_poll_free", || {
        // SAFETY: `poll` is NULL or came from `poll_into_c`, not freed
        // before (caller's guarantee), and each of its strings from
        // `CString::into_raw`.
        unsafe {
            let Some(p) = handle::take(poll) else {
                return;
            };
            free_c_string(p.status);
            free_c_string(p.output);
            free_c_string(p.artifact_id);
        }
    })
}

/// Lists the shell's jobs, oldest first: every running one and the last
/// finished ones (older finished jobs are forgotten). On `CONCH_OK`, `*out`
/// is an array of `*count` jobs (NULL when there are none); free it with
/// `conch_job_info_free(*out, *count)`. Callable from any thread, also while
/// a run or a poll blocks.
///
/// # Safety
/// `shell` is a live handle; `out` and `count` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_jobs(
    shell: *mut conch_shell,
    out: *mut *mut conch_job_info,
    count: *mut usize,
) -> c_int {
    boundary::status("conch_shell_jobs", || {
        // SAFETY (whole block): the caller's guarantees.
        let (shell, out, count) = unsafe {
            (
                handle::to_arc(shell, "shell")?,
                out_arg(out, "out")?,
                out_arg(count, "count")?,
            )
        };
        let owned = shell
            .jobs()
            .into_iter()
            .map(OwnedInfo::new)
            .collect::<FfiResult<Vec<_>>>()?;
        let (jobs, len) =
            handle::into_raw_array(owned.into_iter().map(OwnedInfo::into_c).collect());
        *out = jobs;
        *count = len;
        Ok(())
    })
}

/// Frees the array `conch_shell_jobs` returned and the strings in it;
/// `count` is the count it returned with it. NULL is a no-op.
///
/// # Safety
/// `jobs` is NULL or an array returned by `conch_shell_jobs` with `count`
/// jobs, not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_job_info_free(jobs: *mut conch_job_info, count: usize) {
    boundary::quiet("conch_job_info_free", || {
        // SAFETY: `jobs` is NULL or came from `into_raw_array` with `count`
        // elements, not freed before (caller's guarantee), and each string
        // from `CString::into_raw`.
        unsafe {
            let Some(jobs) = handle::take_array(jobs, count) else {
                return;
            };
            for j in jobs.iter() {
                free_c_string(j.command);
                free_c_string(j.status);
                free_c_string(j.artifact_id);
            }
        }
    })
}
