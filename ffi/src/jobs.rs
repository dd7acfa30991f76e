//! The jobs of a `conch_shell`: what a command leaves writing in the
//! background (`server &`, `(sleep 1; echo late) &`) keeps its output apart
//! from later runs, as a job of the session, listed by `conch_shell_jobs`
//! and read by `conch_shell_poll`; so do commands started beside the
//! session (`conch_shell_start`), fed (`conch_shell_write`, `_close_stdin`,
//! `_write_key`), signalled, killed and waited for (`conch_shell_wait_any`),
//! and runs moved to the background at their `yield_after_ms`.

use std::ffi::{CString, c_char, c_int};

use conch_core::input::until_option;
use conch_core::jobs::epoch_ms;
use conch_core::{JobInfo, JobOptions, JobPoll, JobStatus, PollOptions};

use crate::boundary::{self, c_owned, free_c_string, into_raw_or_null, opt_c_owned, out_arg};
use crate::cancel::conch_cancel_token;
use crate::handle::{self, Castable, OwnershipBox};
use crate::options::{self, FromJson};
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
    /// True once the job's command ended by itself (`128 + N` for a signal
    /// N): a job started with `conch_shell_start` or moved to the
    /// background by `yield_after_ms`. False while it runs, when it was
    /// killed or timed out, and for work a command left behind (bash alone
    /// could tell its status, and it does not wait for it).
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
    /// The job runs on a terminal (`pty_cols`/`pty_rows`) and a process in
    /// its foreground is blocked reading it, its output quiet: it waits for
    /// input (write the answer, or kill it). False otherwise, and for a job
    /// without a terminal.
    pub waiting_for_input: bool,
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
    /// As in `conch_job_poll`.
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
        waiting_for_input,
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
        waiting_for_input,
    }))
}

/// A listed job with its strings still owned by Rust: nothing leaks if a
/// later job's strings fail.
pub(crate) struct OwnedInfo {
    info: JobInfo,
    command: CString,
    status: CString,
    artifact_id: Option<CString>,
}

impl OwnedInfo {
    pub(crate) fn new(info: JobInfo) -> FfiResult<OwnedInfo> {
        Ok(OwnedInfo {
            command: c_owned(info.command.clone())?,
            status: status_text(info.status)?,
            artifact_id: opt_c_owned(info.artifact_id.clone())?,
            info,
        })
    }

    /// The job as C reads it, its strings borrowed from `self` (the exit
    /// callback's argument).
    pub(crate) fn view(&self) -> conch_job_info {
        let info = &self.info;
        conch_job_info {
            job: info.job,
            command: self.command.as_ptr(),
            status: self.status.as_ptr(),
            exit_code: info.exit_code.unwrap_or(0),
            has_exit_code: info.exit_code.is_some(),
            started_ms: epoch_ms(info.started),
            elapsed_ms: millis(info.elapsed),
            total_bytes: info.total_bytes,
            artifact_id: self
                .artifact_id
                .as_ref()
                .map_or(std::ptr::null(), |id| id.as_ptr()),
            artifact_truncated: info.artifact_truncated,
        }
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
/// Errors: NULL or invalid arguments, a bad `until`, a `wait_ms` past the
/// bound (`CONCH_ERR_INVALID_ARG`); a job the shell does not have (`no job
/// <N> in this session`: never started, or finished long ago and
/// forgotten: `CONCH_ERR_NOT_FOUND`); `CONCH_ERR_CLOSED` for a closed
/// shell.
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
            .jobs()?
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

/// A command to start as a job beside the session (`conch_shell_start`).
/// Zero-initialize it (`= {0}`), then set `command`: zero / NULL fields are
/// the defaults.
#[repr(C)]
pub struct conch_job_options {
    /// The command line (bash syntax). Required.
    pub command: *const c_char,
    /// Directory to start in, resolved against the session cwd; NULL: the
    /// session cwd. One that does not exist is `CONCH_ERR_INVALID_ARG`.
    pub cwd: *const c_char,
    /// Variables exported for the job only, `"KEY=VALUE"` strings ended by
    /// a NULL pointer; NULL: none.
    pub env: *const *const c_char,
    /// Kills the job's whole tree this many milliseconds after it started
    /// (its status then reads `"timed_out"`); 0: no deadline. At most
    /// 2147483647.
    pub timeout_ms: u64,
    /// true: the job reads an input pipe (`conch_shell_write`,
    /// `conch_shell_close_stdin`); false: its stdin is `/dev/null`. (Not
    /// named `stdin`: a C library may define `stdin` as a macro.)
    pub stdin_pipe: bool,
    /// Run the job on a terminal of this many columns and rows: its input
    /// and output are the terminal, keys can be sent
    /// (`conch_shell_write_key`). Both 0: no terminal; only one 0 is
    /// `CONCH_ERR_INVALID_ARG`.
    pub pty_cols: u16,
    /// See `pty_cols`.
    pub pty_rows: u16,
    /// More options as a JSON object, the core's `JobOptions` serialized
    /// (snake_case keys, durations in seconds, as `docs/api/schema.json`
    /// lists them; not `command`). An option set here and by its typed field
    /// too is `CONCH_ERR_INVALID_ARG`. NULL: none.
    pub options_json: *const c_char,
}

/// # Safety
/// `opts` fields are NULL or valid, as documented on `conch_job_options`.
unsafe fn job_options(opts: &conch_job_options) -> FfiResult<JobOptions> {
    // SAFETY (whole block): every pointer field is NULL or valid (caller).
    unsafe {
        let FromJson { value: json, given } =
            options::with_command::<JobOptions>(opts.command, opts.options_json)?;
        Ok(JobOptions {
            cwd: given.path("cwd", opts.cwd, json.cwd)?,
            env: given.env(opts.env, json.env)?,
            timeout: given.millis("timeout", opts.timeout_ms, json.timeout)?,
            stdin: given.pick(
                "stdin",
                "opts->stdin_pipe",
                opts.stdin_pipe.then_some(true),
                json.stdin,
            )?,
            pty: given.pick(
                "pty",
                "opts->pty_cols",
                (opts.pty_cols != 0 || opts.pty_rows != 0)
                    .then_some(Some((opts.pty_cols, opts.pty_rows))),
                json.pty,
            )?,
            ..json
        })
    }
}

/// Starts `opts->command` as a job beside the session and writes its id to
/// `*job_out`. The job runs in a bash of its own, given the session's state
/// as it is now (variables, functions, aliases, options, the cwd): this
/// waits for the runs called before it, then returns at once; nothing the
/// job changes reaches the session. Read it with `conch_shell_poll`, feed
/// it with `conch_shell_write`, end it with `conch_shell_kill_job`.
///
/// Errors: NULL or invalid arguments, a NUL in the command, a bad variable,
/// a missing cwd, a `timeout_ms` past the bound, a terminal of 0 columns or
/// rows, a call from a chunk callback of a run of this shell
/// (`CONCH_ERR_INVALID_ARG`); `CONCH_ERR_TOO_MANY_JOBS` when the shell runs
/// `max_jobs` jobs already (nothing is started); `CONCH_ERR_CLOSED`;
/// `CONCH_ERR_SPAWN` when its bash cannot start.
///
/// # Safety
/// `shell` is a live handle; `opts` points to valid options; `job_out` is
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_start(
    shell: *mut conch_shell,
    opts: *const conch_job_options,
    job_out: *mut u32,
) -> c_int {
    boundary::status("conch_shell_start", || {
        // SAFETY (whole block): the caller's guarantees.
        let (shell, opts, job_out) = unsafe {
            let shell = handle::to_arc(shell, "shell")?;
            let opts = job_options(boundary::ref_arg(opts, "opts")?)?;
            (shell, opts, out_arg(job_out, "job_out")?)
        };
        *job_out = shell.start(opts)?;
        Ok(())
    })
}

/// Writes `len` bytes to job `job`'s input: its stdin pipe (a job started
/// with `stdin_pipe`) or its terminal (`pty_cols`/`pty_rows`), as typed
/// (`"ann\n"`). `data` may be NULL only when `len` is 0. Blocks while the
/// job does not read, up to a bound (10 s).
///
/// Errors: NULL arguments (`CONCH_ERR_INVALID_ARG`), a job the shell does
/// not have (`CONCH_ERR_NOT_FOUND`), a job that takes no input: it ended,
/// its input was closed, it has none, it did not read its input within
/// the bound (`CONCH_ERR_NO_INPUT`); `CONCH_ERR_CLOSED`.
///
/// # Safety
/// `shell` is a live handle; `data` is readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_write(
    shell: *mut conch_shell,
    job: u32,
    data: *const u8,
    len: usize,
) -> c_int {
    boundary::status("conch_shell_write", || {
        // SAFETY: the caller's guarantees.
        let (shell, data) = unsafe {
            (
                handle::to_arc(shell, "shell")?,
                boundary::bytes_arg(data, len, "data")?,
            )
        };
        shell.write(job, data)
    })
}

/// Ends job `job`'s input: its stdin pipe closes (the job reads the end of
/// its input); on a terminal, the end-of-file key (ctrl+d). Errors as for
/// `conch_shell_write`.
///
/// # Safety
/// `shell` is a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_close_stdin(shell: *mut conch_shell, job: u32) -> c_int {
    boundary::status("conch_shell_close_stdin", || {
        // SAFETY: the caller's guarantee.
        let shell = unsafe { handle::to_arc(shell, "shell") }?;
        shell.close_stdin(job)
    })
}

/// Sends a key to job `job`, on its terminal, by name as `conch_pty_write_key`
/// takes them (`"enter"`, `"ctrl+c"`, `"backspace"`, `"up"`…). Errors: NULL
/// arguments or an unknown key name (`CONCH_ERR_INVALID_ARG`), a job the
/// shell does not have (`CONCH_ERR_NOT_FOUND`), a job without a terminal or
/// that ended (`CONCH_ERR_NO_INPUT`); `CONCH_ERR_CLOSED`.
///
/// # Safety
/// `shell` is a live handle; `key` is a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_write_key(
    shell: *mut conch_shell,
    job: u32,
    key: *const c_char,
) -> c_int {
    boundary::status("conch_shell_write_key", || {
        // SAFETY: the caller's guarantees.
        let (shell, key) = unsafe {
            (
                handle::to_arc(shell, "shell")?,
                boundary::str_arg(key, "key")?,
            )
        };
        shell.write_key(job, key)
    })
}

/// Sends a signal to every process of job `job` while it runs (nothing
/// once it ended): by name with or without `SIG`, in any case (`"TERM"`,
/// `"sigint"`), or by number (`"9"`). Errors: NULL arguments or an unknown
/// signal (`CONCH_ERR_INVALID_ARG`, naming the accepted ones), a job the
/// shell does not have (`CONCH_ERR_NOT_FOUND`); `CONCH_ERR_CLOSED`.
///
/// # Safety
/// `shell` is a live handle; `signal` is a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_signal(
    shell: *mut conch_shell,
    job: u32,
    signal: *const c_char,
) -> c_int {
    boundary::status("conch_shell_signal", || {
        // SAFETY: the caller's guarantees.
        let (shell, signal) = unsafe {
            (
                handle::to_arc(shell, "shell")?,
                boundary::str_arg(signal, "signal")?,
            )
        };
        shell.signal(job, signal)
    })
}

/// Kills job `job`'s whole tree with the kill ladder (SIGINT, SIGTERM,
/// SIGKILL, a grace between) and waits for it, up to about 1.5 s. On
/// `CONCH_OK`, `*out` (when `out` is not NULL) is the job's final poll:
/// what it wrote since the previous poll, status `"killed"` (or how it had
/// ended); free it with `conch_job_poll_free`. Killing a job that ended is
/// no error. Errors: a job the shell does not have (`CONCH_ERR_NOT_FOUND`);
/// `CONCH_ERR_CLOSED`.
///
/// # Safety
/// `shell` is a live handle; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_kill_job(
    shell: *mut conch_shell,
    job: u32,
    out: *mut *mut conch_job_poll,
) -> c_int {
    boundary::status("conch_shell_kill_job", || {
        // SAFETY: the caller's guarantees.
        let (shell, out) = unsafe { (handle::to_arc(shell, "shell")?, out.as_mut()) };
        let poll = shell.kill(job)?;
        if let Some(out) = out {
            *out = poll_into_c(poll)?;
        }
        Ok(())
    })
}

/// Waits up to `timeout_ms` for one of the `count` jobs of `jobs` to end.
/// On `CONCH_OK`, `*found_out` says whether one did and `*job_out` is the
/// first of them that ended (in the order of `jobs`; 0 when none did): a
/// job that had ended already returns at once. `timeout_ms` 0 does not
/// wait; at most 2147483647. `cancel` (may be NULL) ends the wait early,
/// from any thread (none found). `jobs` may be NULL only when `count` is 0.
/// Blocks the calling thread; never waits for a run.
///
/// Errors: NULL or invalid arguments, a `timeout_ms` past the bound
/// (`CONCH_ERR_INVALID_ARG`); an id the shell does not have
/// (`CONCH_ERR_NOT_FOUND`); `CONCH_ERR_CLOSED`.
///
/// # Safety
/// `shell` is a live handle; `jobs` is readable for `count` ids; `cancel`
/// is NULL or a live token; `job_out` and `found_out` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_wait_any(
    shell: *mut conch_shell,
    jobs: *const u32,
    count: usize,
    timeout_ms: u64,
    cancel: *const conch_cancel_token,
    job_out: *mut u32,
    found_out: *mut bool,
) -> c_int {
    boundary::status("conch_shell_wait_any", || {
        // SAFETY (whole block): the caller's guarantees.
        let (shell, jobs, cancel, job_out, found_out) = unsafe {
            let jobs = match (jobs.is_null(), count) {
                (true, 0) => &[][..],
                (true, _) => return Err(FfiError::arg("jobs is NULL but count is not 0")),
                (false, _) => std::slice::from_raw_parts(jobs, count),
            };
            (
                handle::to_arc(shell, "shell")?,
                jobs,
                options::cancel(cancel),
                out_arg(job_out, "job_out")?,
                out_arg(found_out, "found_out")?,
            )
        };
        let timeout = options::interval(timeout_ms, "timeout_ms")?.unwrap_or_default();
        let found = shell.wait_any(jobs, timeout, cancel.as_ref())?;
        *job_out = found.unwrap_or(0);
        *found_out = found.is_some();
        Ok(())
    })
}
