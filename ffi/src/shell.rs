//! `conch_shell`: a persistent bash session.
//!
//! The handle is an `Arc` turned into a raw pointer: `conch_shell_run`
//! takes its own reference for the duration of the run, so
//! `conch_shell_abort` and even `conch_shell_free` may be called from
//! another thread while a run blocks (and `conch_shell_poll`, in `jobs.rs`,
//! while it waits).

use std::ffi::{c_char, c_int, c_void};
use std::ops::Deref;
use std::sync::Arc;

use conch_core::Engine;
use conch_core::shell::{RunOptions, Shell, ShellOptions};

use crate::artifact::conch_artifact_store;
use crate::backend::Backend;
use crate::boundary::{self, out_arg, ref_arg};
use crate::callback::{ChunkForwarder, conch_chunk_cb};
use crate::cancel::conch_cancel_token;
use crate::handle::{self, Castable, OwnershipArc};
use crate::job_exit::{ExitGate, conch_job_exit_cb};
use crate::options::{self, FromJson, conch_env_policy};
use crate::result::{conch_bash_result, into_c};
use crate::sandbox::conch_sandbox;
use crate::status::{FfiError, FfiResult};

/// A persistent bash session (opaque): state (cwd, variables, functions,
/// aliases) carries over from one run to the next.
///
/// Thread-safe: `conch_shell_run` may be called from several threads (runs
/// queue in order), `conch_shell_abort`, `conch_shell_background_jobs`,
/// and the job functions (`conch_shell_start`, `conch_shell_jobs`,
/// `conch_shell_poll`, `conch_shell_write`…) from any thread at any moment.
/// `conch_shell_free` may be called from another thread while a run blocks
/// (it stops the run, waits for it to return, then kills the session) or a
/// poll waits (the job is killed, so the poll returns), but never
/// concurrently with the start of another call on the handle, nor after it.
pub struct conch_shell {
    _private: [u8; 0],
}

impl Castable for conch_shell {
    type Ownership = OwnershipArc;
    type RustType = ShellHandle;
}

/// What a `conch_shell` points to: the session (here or on a server), and
/// the gate of its `on_job_exit` callback (closed by `conch_shell_free`).
pub(crate) struct ShellHandle {
    backend: Backend,
    exits: Option<Arc<ExitGate>>,
}

impl ShellHandle {
    pub(crate) fn new(backend: Backend, exits: Option<Arc<ExitGate>>) -> Self {
        ShellHandle { backend, exits }
    }
}

impl Deref for ShellHandle {
    type Target = Backend;

    fn deref(&self) -> &Backend {
        &self.backend
    }
}

/// How a shell is created. Zero-initialize it (`= {0}`), then set what you
/// need: zero / NULL fields are the defaults.
#[repr(C)]
pub struct conch_shell_options {
    /// The bash to run; NULL: `bash` from `PATH`.
    pub shell: *const c_char,
    /// Starting directory; NULL: the host's cwd.
    pub cwd: *const c_char,
    /// Variables exported in the session, `"KEY=VALUE"` strings ended by a
    /// NULL pointer; NULL: none.
    pub env: *const *const c_char,
    /// true: return the values of `env` as they are. By default the value
    /// of every variable of `env` (and of a run's or a job's `env`) whose
    /// name contains (in any case) `TOKEN`, `SECRET`, `PASSWORD`, `API_KEY`
    /// or `ACCESS_KEY`, 8 bytes or longer, is replaced by `[masked: NAME]`
    /// in everything the shell returns (chunks, results, artifacts, polls).
    pub skip_mask: bool,
    /// More names whose values are masked so, ended by a NULL pointer;
    /// NULL: none. Not with `skip_mask`.
    pub mask_names: *const *const c_char,
    /// Directory where full outputs past `max_bytes` are spilled as
    /// `artifact://<id>` files; NULL: no artifacts (see also `artifact_store`).
    pub artifacts_dir: *const c_char,
    /// Bytes of output kept per run; 0: 51200.
    pub max_bytes: usize,
    /// The rc snapshot sourced at start: NULL or `"auto"` (the user's
    /// `~/.bashrc` aliases, functions and options), `"none"`, or a file path.
    pub snapshot: *const c_char,
    /// Text put before every command (`<prefix> <command>`); NULL: none.
    pub prefix: *const c_char,
    /// Which host variables the session inherits (see `conch_env_policy`;
    /// zeroed: all of them).
    pub env_policy: conch_env_policy,
    /// true: do not apply the non-interactive defaults (`PAGER=cat`,
    /// `GIT_EDITOR=true`, `CI=1`, …).
    pub skip_non_interactive_env: bool,
    /// A store shared with other shells and with `conch_artifact_store_*`
    /// calls, so artifact ids never collide (borrowed: the shell keeps its
    /// own reference). NULL: use `artifacts_dir`. Set at most one of the two.
    pub artifact_store: *const conch_artifact_store,
    /// Jobs the shell runs at once, at most (`conch_shell_start` then fails
    /// with `CONCH_ERR_TOO_MANY_JOBS`, and a run past `yield_after_ms` stays
    /// in the foreground); 0: 16.
    pub max_jobs: usize,
    /// Bytes one job's artifact takes, at most (past it the file stops
    /// growing and the job's polls say `artifact_truncated`); 0: 1 GiB.
    pub job_artifact_cap: u64,
    /// Called once for each job that ends, on a thread of conch's (see
    /// `conch_job_exit_cb`); NULL: none.
    pub on_job_exit: conch_job_exit_cb,
    /// Passed to `on_job_exit` untouched; conch never reads it. It may be
    /// freed once `conch_shell_free` returned.
    pub user_data: *mut c_void,
    /// The sandbox around everything the session runs (borrowed: read
    /// while `conch_shell_new` runs); NULL: none.
    pub sandbox: *const conch_sandbox,
    /// More options as a JSON object, the core's `ShellOptions` in its
    /// serialized form (snake_case keys, as `docs/api/schema.json` lists
    /// them): every option, including those added after this header, with
    /// no new field. An option set here and by its typed field too is
    /// `CONCH_ERR_INVALID_ARG`. NULL: none.
    pub options_json: *const c_char,
}

/// One command to run. Zero-initialize it, then set `command`.
#[repr(C)]
pub struct conch_run_options {
    /// The command line (bash syntax). Required.
    pub command: *const c_char,
    /// Directory for this run only, resolved against the session cwd; NULL:
    /// the session cwd.
    pub cwd: *const c_char,
    /// Variables for this run only, `"KEY=VALUE"` strings ended by a NULL
    /// pointer; NULL: none.
    pub env: *const *const c_char,
    /// Deadline in milliseconds; 0: none; at most 2147483647 (about 24 days:
    /// a larger value is `CONCH_ERR_INVALID_ARG`). On timeout the process tree is
    /// killed and the result says `timed_out` (not an error).
    pub timeout_ms: u64,
    /// Keep only the first N lines of the whole output; 0: no limit.
    pub head_lines: usize,
    /// Then keep only the last N lines; 0: no limit.
    pub tail_lines: usize,
    /// Cancels this run when cancelled, from any thread; NULL: none.
    pub cancel: *const conch_cancel_token,
    /// When the command still runs this many milliseconds after it
    /// started, the run returns with its output so far and the command
    /// goes on as a job (`backgrounded` in the result); the session goes on
    /// with the state it had before the command. 0: never.
    pub yield_after_ms: u64,
    /// More options as a JSON object, the core's `RunOptions` serialized
    /// (snake_case keys, durations in seconds, as `docs/api/schema.json`
    /// lists them; not `command`). An option set here and by its typed field
    /// too is `CONCH_ERR_INVALID_ARG`. NULL: none.
    pub options_json: *const c_char,
}

/// # Safety
/// `opts` fields are NULL or valid, as documented on `conch_shell_options`.
unsafe fn shell_options(opts: &conch_shell_options) -> FfiResult<ShellOptions> {
    // SAFETY (whole block): every pointer field is NULL or valid (caller).
    unsafe {
        let FromJson { value: json, given } =
            options::from_json::<ShellOptions>(opts.options_json, "opts->options_json", None)?;
        Ok(ShellOptions {
            shell: given.path("shell", opts.shell, json.shell)?,
            cwd: given.path("cwd", opts.cwd, json.cwd)?,
            session_env: given.env(opts.env, json.session_env)?,
            mask: given.mask(opts.skip_mask, opts.mask_names, json.mask)?,
            snapshot: given.pick(
                "snapshot",
                "opts->snapshot",
                (!opts.snapshot.is_null())
                    .then(|| options::snapshot(opts.snapshot, "opts->snapshot"))
                    .transpose()?,
                json.snapshot,
            )?,
            prefix: given.pick(
                "prefix",
                "opts->prefix",
                boundary::opt_str_arg(opts.prefix, "opts->prefix")?.map(|p| Some(p.to_string())),
                json.prefix,
            )?,
            non_interactive_env: given
                .non_interactive(opts.skip_non_interactive_env, json.non_interactive_env)?,
            env_policy: given.env_policy(&opts.env_policy, json.env_policy)?,
            max_bytes: given.max_bytes(opts.max_bytes, json.max_bytes)?,
            artifacts: given.artifacts(opts.artifacts_dir, opts.artifact_store, json.artifacts)?,
            max_jobs: given.pick(
                "max_jobs",
                "opts->max_jobs",
                (opts.max_jobs != 0).then_some(opts.max_jobs),
                json.max_jobs,
            )?,
            job_artifact_cap: given.pick(
                "job_artifact_cap",
                "opts->job_artifact_cap",
                (opts.job_artifact_cap != 0).then_some(opts.job_artifact_cap),
                json.job_artifact_cap,
            )?,
            sandbox: given.sandbox(opts.sandbox, json.sandbox)?,
            ..json
        })
    }
}

/// # Safety
/// `opts` fields are NULL or valid, as documented on `conch_run_options`.
unsafe fn run_options(opts: &conch_run_options) -> FfiResult<RunOptions> {
    // SAFETY (whole block): every pointer field is NULL or valid (caller).
    unsafe {
        let FromJson { value: json, given } =
            options::with_command::<RunOptions>(opts.command, opts.options_json)?;
        Ok(RunOptions {
            cwd: given.path("cwd", opts.cwd, json.cwd)?,
            env: given.env(opts.env, json.env)?,
            timeout: given.millis("timeout", opts.timeout_ms, json.timeout)?,
            cancel: options::cancel(opts.cancel),
            head_lines: given.lines("head", opts.head_lines, json.head_lines)?,
            tail_lines: given.lines("tail", opts.tail_lines, json.tail_lines)?,
            yield_after: given.millis("yield_after", opts.yield_after_ms, json.yield_after)?,
            ..json
        })
    }
}

/// Starts a persistent bash session.
///
/// `opts` may be NULL (all defaults). Fails early on a bad shell path, cwd or
/// env entry. Returns the handle (free it with `conch_shell_free`), or NULL
/// on error (see `conch_last_error`).
///
/// # Safety
/// `opts` is NULL or points to a valid `conch_shell_options`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_new(opts: *const conch_shell_options) -> *mut conch_shell {
    boundary::pointer("conch_shell_new", || {
        // SAFETY: the caller's guarantee.
        let (mut opts, exits) = match unsafe { opts.as_ref() } {
            // SAFETY: the caller's guarantee on the fields.
            Some(o) => (
                unsafe { shell_options(o) }?,
                ExitGate::new(o.on_job_exit, o.user_data),
            ),
            None => (ShellOptions::default(), None),
        };
        let exits = exits.map(|(gate, hook)| {
            opts.on_job_exit = Some(hook);
            gate
        });
        Ok(handle::into_raw(ShellHandle::new(
            Backend::Local(Shell::new(opts)?),
            exits,
        )))
    })
}

/// Runs one command in the session and blocks until it ends.
///
/// Output streams to `cb` (may be NULL) on this thread, in order, before
/// this function returns; `user` is passed to it untouched. From inside the
/// callback, `conch_shell_abort`, `conch_cancel_token_cancel`, the
/// handle-less functions and runs on other shells may be called; a nested
/// `conch_shell_run` on the same shell would wait for itself, so it fails at
/// once with `CONCH_ERR_INVALID_ARG`.
///
/// On `CONCH_OK`, `*out` is the result (free it with
/// `conch_bash_result_free`). A timeout, an abort or a non-zero exit status
/// are results, not errors. Errors: NULL/invalid arguments, a bad cwd or env
/// entry, a `timeout_ms` past the core's bound, a call from the shell's own
/// callback (`CONCH_ERR_INVALID_ARG`), a closed shell (`CONCH_ERR_CLOSED`), a
/// bash that cannot be restarted (`CONCH_ERR_SPAWN`).
///
/// # Safety
/// `shell` is a live handle; `opts` points to valid options; `cb`, if not
/// NULL, is safe to call with `user`; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_run(
    shell: *mut conch_shell,
    opts: *const conch_run_options,
    cb: conch_chunk_cb,
    user: *mut c_void,
    out: *mut *mut conch_bash_result,
) -> c_int {
    boundary::status("conch_shell_run", || {
        // SAFETY (whole block): the caller's guarantees.
        let (shell, opts, out) = unsafe {
            let shell = handle::to_arc(shell, "shell")?;
            let opts = run_options(ref_arg(opts, "opts")?)?;
            (shell, opts, out_arg(out, "out")?)
        };
        let mut forwarder = ChunkForwarder::new(cb, user);
        let result = shell.run(opts, |chunk| forwarder.forward(chunk))?;
        *out = into_c(result)?;
        Ok(())
    })
}

/// Stops the run in progress, if any: its process tree is killed and
/// `conch_shell_run` returns a result with `cancelled` set (the session
/// lives on). A run that starts later is not affected (use a
/// `conch_cancel_token` to cancel ahead of time).
///
/// Callable from any thread, including from inside a chunk callback.
///
/// # Safety
/// `shell` is a live handle; NULL is refused (`CONCH_ERR_INVALID_ARG`), never
/// a crash.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_abort(shell: *mut conch_shell) -> c_int {
    boundary::status("conch_shell_abort", || {
        // SAFETY: the caller's guarantee.
        unsafe { handle::to_arc(shell, "shell") }?.abort();
        Ok(())
    })
}

/// Starts the session afresh, as a new shell with the same options would:
/// everything it runs is killed as `conch_shell_free` kills it (a run in
/// progress returns `cancelled`), its jobs are forgotten (their numbers are
/// `CONCH_ERR_NOT_FOUND` from then on), and a fresh bash starts in its
/// start directory. The handle stays open, its options and artifacts
/// unchanged. From the first reset on, each of its bashes forks a spare of
/// itself before its first command, and the next reset makes the spare
/// the session's bash (a fork, not a bash's start: Linux, the loop
/// builtin, no sandbox). Errors: `CONCH_ERR_CLOSED` for a closed shell,
/// `CONCH_ERR_INVALID_ARG` from inside a chunk callback of a run on the
/// same shell (it would wait for itself) or for a start directory that is
/// gone (everything is ended first; the next run starts a bash in the
/// nearest directory above), `CONCH_ERR_SPAWN` when no bash starts.
///
/// # Safety
/// `shell` is a live handle; NULL is refused (`CONCH_ERR_INVALID_ARG`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_reset(shell: *mut conch_shell) -> c_int {
    boundary::status("conch_shell_reset", || {
        // SAFETY: the caller's guarantee.
        unsafe { handle::to_arc(shell, "shell") }?.reset()
    })
}

/// Lists the processes the session still runs in the background (e.g. after
/// `server &`): writes up to `capacity` pids to `pids` and the total count
/// to `*count` (which may exceed `capacity`: call again with a larger
/// buffer). `pids` may be NULL when `capacity` is 0. They are killed by
/// `conch_shell_free`.
///
/// # Safety
/// `shell` is a live handle; `pids` is writable for `capacity` elements;
/// `count` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_background_jobs(
    shell: *mut conch_shell,
    pids: *mut u32,
    capacity: usize,
    count: *mut usize,
) -> c_int {
    boundary::status("conch_shell_background_jobs", || {
        // SAFETY: the caller's guarantees.
        let (shell, count) = unsafe { (handle::to_arc(shell, "shell")?, out_arg(count, "count")?) };
        if pids.is_null() && capacity > 0 {
            return Err(FfiError::arg("pids is NULL but capacity is not 0"));
        }
        let jobs = shell.background_jobs()?;
        for (i, pid) in jobs.iter().take(capacity).enumerate() {
            // SAFETY: `i < capacity`, and `pids` holds `capacity` elements.
            unsafe { pids.add(i).write(*pid) };
        }
        *count = jobs.len();
        Ok(())
    })
}

/// The loop a session's bash runs (`conch_shell_engine`), as chosen by the
/// `engine` option of `options_json` (`"auto"`, the default: the builtin
/// where bash loads it, or what `CONCH_ENGINE` says; `"builtin"`; `"eval"`).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum conch_engine {
    /// The loop builtin (`conch-loop.so`, loaded by bash): commands run as
    /// `bash -c` input.
    CONCH_ENGINE_BUILTIN = 0,
    /// The eval loop: commands run through `eval`.
    CONCH_ENGINE_EVAL = 1,
}

/// Writes the loop the session's bash runs to `*out`. The first call waits
/// for bash's start-up and fails as a run would for a bash that cannot
/// start (`CONCH_ERR_SPAWN`: with `"engine": "builtin"`, one that cannot
/// load the builtin); on a remote shell it asks the server (the
/// connection's errors). Errors: NULL arguments (`CONCH_ERR_INVALID_ARG`).
///
/// # Safety
/// `shell` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_engine(
    shell: *mut conch_shell,
    out: *mut conch_engine,
) -> c_int {
    boundary::status("conch_shell_engine", || {
        // SAFETY: the caller's guarantees.
        let (shell, out) = unsafe { (handle::to_arc(shell, "shell")?, out_arg(out, "out")?) };
        *out = match shell.engine()? {
            Engine::Builtin => conch_engine::CONCH_ENGINE_BUILTIN,
            Engine::Eval => conch_engine::CONCH_ENGINE_EVAL,
        };
        Ok(())
    })
}

/// Closes the session and frees the handle: kills what it still runs (the
/// current command, its jobs, bash itself). If a run is in progress on
/// another thread, it is stopped and this waits for it to return. With an
/// `on_job_exit` callback, it then waits (a bounded time) for the callback
/// to be told of every job's end, the ones it killed included, and for a
/// call in progress on another thread; the callback is never called after
/// this returns. Called from inside that callback or a chunk callback of a
/// run of the shell, it does not wait for the other calls, which are
/// dropped. NULL is a no-op.
///
/// # Safety
/// `shell` is NULL or a live handle, not used again after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_free(shell: *mut conch_shell) {
    boundary::quiet("conch_shell_free", || {
        // SAFETY: `shell` is NULL or a live handle from `conch_shell_new`,
        // not used again (caller's guarantee); this takes its own reference.
        if let Some(shell) = unsafe { handle::take(shell) } {
            // Close now, not when the last reference drops: a run on another
            // thread holds one until it returns.
            let ended = shell.close();
            // The ends of the jobs the close killed are reported, then no
            // more: the host may free `user_data` once this returns.
            if let Some(gate) = &shell.exits {
                gate.close(ended);
            }
        }
    })
}
