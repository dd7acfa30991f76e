//! `conch_pty`: one command at a time on a pseudo-terminal, with a virtual
//! screen, for programs that want a terminal.
//!
//! Like `conch_shell`, the handle is an `Arc` behind a raw pointer:
//! `conch_pty_start` holds its own reference while it blocks, so the input
//! functions and `conch_pty_free` may be called from other threads.

use std::ffi::{c_char, c_int, c_void};

use conch_core::output::{OutputSummary, SinkOptions};
use conch_core::pty::{PtyOptions, PtySession};

use crate::artifact::conch_artifact_store;
use crate::boundary::{
    self, bytes_arg, c_owned, c_string, free_c_string, into_raw_or_null, opt_c_owned, out_arg,
    ref_arg, str_arg,
};
use crate::callback::{ChunkForwarder, conch_chunk_cb};
use crate::cancel::conch_cancel_token;
use crate::handle::{self, Castable, OwnershipArc, OwnershipBox};
use crate::options::{self, FromJson, conch_env_policy};
use crate::sandbox::conch_sandbox;
use crate::status::FfiResult;

/// A pseudo-terminal session (opaque) that runs one command at a time and
/// keeps what it draws on a virtual screen.
///
/// Thread-safe: while `conch_pty_start` blocks on one thread, other threads
/// call `conch_pty_write`, `conch_pty_write_key`, `conch_pty_resize`,
/// `conch_pty_kill`, `conch_pty_screen_text` and `conch_pty_is_running`.
/// `conch_pty_free` may be called from another thread while a run blocks (it
/// kills the run; `conch_pty_start` then returns), but never concurrently
/// with the start of another call on the handle, nor after it.
pub struct conch_pty {
    _private: [u8; 0],
}

impl Castable for conch_pty {
    type Ownership = OwnershipArc;
    type RustType = PtySession;
}

/// What to run on the terminal. Zero-initialize it, then set `command`.
#[repr(C)]
pub struct conch_pty_options {
    /// Bash source, run as `bash -c <command>`. Required.
    pub command: *const c_char,
    /// Working directory; NULL: the host's cwd.
    pub cwd: *const c_char,
    /// Variables for this run, `"KEY=VALUE"` strings ended by a NULL pointer
    /// (they win over the defaults, `TERM=xterm-256color` included); NULL:
    /// none.
    pub env: *const *const c_char,
    /// true: return the values of `env` as they are. By default the value
    /// of every variable of `env` whose name contains (in any case)
    /// `TOKEN`, `SECRET`, `PASSWORD`, `API_KEY` or `ACCESS_KEY`, 8 bytes or
    /// longer, is replaced by `[masked: NAME]` in the chunks, the screen
    /// and the output.
    pub skip_mask: bool,
    /// More names whose values are masked so, ended by a NULL pointer;
    /// NULL: none. Not with `skip_mask`.
    pub mask_names: *const *const c_char,
    /// Deadline in milliseconds from the start; 0: none. At most 2147483647
    /// (about 24 days): a larger value is `CONCH_ERR_INVALID_ARG`.
    pub timeout_ms: u64,
    /// Terminal width, clamped to 20–400; 0: 80.
    pub cols: u16,
    /// Terminal height, clamped to 5–200; 0: 24.
    pub rows: u16,
    /// The bash to run; NULL: `bash` from `PATH`.
    pub shell: *const c_char,
    /// Cancels the run when cancelled, like `conch_pty_kill`; NULL: none.
    pub cancel: *const conch_cancel_token,
    /// Bytes of sanitized output kept for the model; 0: 51200.
    pub max_bytes: usize,
    /// Where the full output is spilled past `max_bytes`; NULL: nowhere.
    pub artifacts_dir: *const c_char,
    /// A shared store instead of `artifacts_dir` (borrowed); NULL: none.
    pub artifact_store: *const conch_artifact_store,
    /// Which host variables the command inherits (see `conch_env_policy`;
    /// zeroed: all of them).
    pub env_policy: conch_env_policy,
    /// true: do not apply the non-interactive defaults (`PAGER=cat`, …).
    pub skip_non_interactive_env: bool,
    /// The sandbox the command runs in (made for this run and removed
    /// after it; borrowed: read before the command starts); NULL: none. A
    /// policy the kernel cannot enforce is `CONCH_ERR_SANDBOX_UNAVAILABLE`.
    pub sandbox: *const conch_sandbox,
    /// More options as a JSON object: the core's `PtyOptions` serialized
    /// (snake_case keys, durations in seconds, as `docs/api/schema.json`
    /// lists them; not `command`). An option set here and by its typed
    /// field too is `CONCH_ERR_INVALID_ARG`. NULL: none.
    pub options_json: *const c_char,
}

/// How a PTY run ended. Owned by the caller: free it with
/// `conch_pty_result_free` (which frees its strings too).
#[repr(C)]
pub struct conch_pty_result {
    /// The exit status (`128 + signal` when a signal ended the command);
    /// meaningful only when `has_exit_code`.
    pub exit_code: i32,
    /// False when the command could not start (the output then says
    /// `PTY error: <message>`) or was stopped.
    pub has_exit_code: bool,
    /// Stopped: by `conch_pty_kill`, the cancel token or the timeout (as in
    /// `conch_bash_result`); `output` then starts with the notice.
    pub cancelled: bool,
    /// Ended by the timeout.
    pub timed_out: bool,
    /// `output` is not the whole stream.
    pub truncated: bool,
    /// The output for the model: sanitized (escapes removed, `\r` as line
    /// breaks) and bounded. Never NULL.
    pub output: *const c_char,
    /// Lines of the whole sanitized stream.
    pub total_lines: u64,
    /// Bytes of the whole sanitized stream.
    pub total_bytes: u64,
    /// Lines in `output`.
    pub output_lines: u64,
    /// Bytes in `output`.
    pub output_bytes: u64,
    /// Set when the full stream was spilled to an artifact; NULL when none.
    pub artifact_id: *const c_char,
}

impl Castable for conch_pty_result {
    type Ownership = OwnershipBox;
    type RustType = conch_pty_result;
}

/// # Safety
/// `opts` fields are NULL or valid, as documented on `conch_pty_options`.
unsafe fn pty_options(opts: &conch_pty_options) -> FfiResult<PtyOptions> {
    // SAFETY (whole block): every pointer field is NULL or valid (caller).
    unsafe {
        let FromJson { value: json, given } =
            options::with_command::<PtyOptions>(opts.command, opts.options_json)?;
        let size = |key: &str, typed: u16, json: u16| {
            given.pick(
                key,
                &format!("opts->{key}"),
                (typed != 0).then_some(typed),
                json,
            )
        };
        let store = options::artifacts(opts.artifacts_dir, opts.artifact_store, "opts->")?;
        Ok(PtyOptions {
            cwd: given.path("cwd", opts.cwd, json.cwd)?,
            env: given.env(opts.env, json.env)?,
            mask: given.mask(opts.skip_mask, opts.mask_names, json.mask)?,
            timeout: given.millis("timeout", opts.timeout_ms, json.timeout)?,
            cols: size("cols", opts.cols, json.cols)?,
            rows: size("rows", opts.rows, json.rows)?,
            shell: given.path("shell", opts.shell, json.shell)?,
            cancel: options::cancel(opts.cancel),
            non_interactive_env: given
                .non_interactive(opts.skip_non_interactive_env, json.non_interactive_env)?,
            env_policy: given.env_policy(&opts.env_policy, json.env_policy)?,
            sink: SinkOptions {
                max_bytes: given.max_bytes(opts.max_bytes, json.sink.max_bytes)?,
                // Best effort, as for shell runs: no artifact is no error.
                artifact: store.map(|s| s.slot("bash")),
                ..json.sink
            },
            sandbox: given.sandbox(opts.sandbox, json.sandbox)?,
            ..json
        })
    }
}

fn result_into_c(
    exit_code: Option<i32>,
    cancelled: bool,
    timed_out: bool,
    summary: OutputSummary,
) -> FfiResult<*mut conch_pty_result> {
    let output = c_owned(summary.output)?;
    let artifact_id = opt_c_owned(summary.artifact_id)?;
    Ok(handle::into_raw(conch_pty_result {
        exit_code: exit_code.unwrap_or(0),
        has_exit_code: exit_code.is_some(),
        cancelled,
        timed_out,
        truncated: summary.truncated,
        output: output.into_raw(),
        total_lines: summary.total_lines,
        total_bytes: summary.total_bytes,
        output_lines: summary.output_lines,
        output_bytes: summary.output_bytes,
        artifact_id: into_raw_or_null(artifact_id),
    }))
}

/// An idle PTY session with a blank 80x24 screen. Free it with
/// `conch_pty_free`. NULL only on an internal error.
#[unsafe(no_mangle)]
pub extern "C" fn conch_pty_new() -> *mut conch_pty {
    boundary::pointer("conch_pty_new", || Ok(handle::into_raw(PtySession::new())))
}

/// Runs a command on a new terminal and blocks until it ends.
///
/// `cb` (may be NULL) gets the raw terminal text, escape sequences intact,
/// on this thread, in order, before this function returns; the result's
/// `output` is the sanitized text for the model. Bad input is an error,
/// worded as for `conch_shell_run`: NULL/invalid arguments, a NUL in the
/// command, a bad variable, a missing cwd, a `timeout_ms` past the bound,
/// a run already in progress on this session ("PTY session already
/// running") are `CONCH_ERR_INVALID_ARG`, a shell that is not there
/// `CONCH_ERR_SPAWN`. A failure of the system once the input is good
/// (`openpty`, the spawn itself) is a result whose output is `PTY error:
/// <message>`, with no exit code. On `CONCH_OK`, `*out` is the result (free
/// it with `conch_pty_result_free`).
///
/// # Safety
/// `pty` is a live handle; `opts` points to valid options; `cb`, if not NULL,
/// is safe to call with `user`; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_pty_start(
    pty: *mut conch_pty,
    opts: *const conch_pty_options,
    cb: conch_chunk_cb,
    user: *mut c_void,
    out: *mut *mut conch_pty_result,
) -> c_int {
    boundary::status("conch_pty_start", || {
        // SAFETY (whole block): the caller's guarantees.
        let (pty, opts, out) = unsafe {
            let pty = handle::to_arc(pty, "pty")?;
            let opts = pty_options(ref_arg(opts, "opts")?)?;
            (pty, opts, out_arg(out, "out")?)
        };
        let mut forwarder = ChunkForwarder::new(cb, user);
        let r = pty.start(opts, |chunk| forwarder.forward(chunk))?;
        *out = result_into_c(r.exit_code, r.cancelled, r.timed_out, r.summary)?;
        Ok(())
    })
}

/// Sends input to the running command, as typed (`"ls\r"`: `\r` is Enter).
/// Kitty keyboard sequences become legacy bytes and cursor keys follow the
/// terminal's application-cursor mode. Blocks while the terminal's input
/// buffer is full. Errors: no command running (`CONCH_ERR_INVALID_ARG`,
/// "PTY session is not running"). `data` may be NULL only when `len` is 0.
///
/// # Safety
/// `pty` is a live handle; `data` is readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_pty_write(
    pty: *mut conch_pty,
    data: *const u8,
    len: usize,
) -> c_int {
    boundary::status("conch_pty_write", || {
        // SAFETY: the caller's guarantee.
        let pty = unsafe { handle::to_arc(pty, "pty") }?;
        // SAFETY: the caller's guarantee.
        let bytes = unsafe { bytes_arg(data, len, "data") }?;
        pty.write(bytes)?;
        Ok(())
    })
}

/// Sends a named key: `enter`, `tab`, `esc`, `backspace`, `up`, `down`,
/// `left`, `right`, `home`, `end`, `pageup`, `pagedown`, `insert`,
/// `delete`, `f1`–`f35`, or one character, optionally prefixed by `ctrl+`,
/// `alt+`, `shift+` (`"ctrl+c"`). Errors: an unknown name, or no command
/// running (`CONCH_ERR_INVALID_ARG`).
///
/// # Safety
/// `pty` is a live handle; `key` is a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_pty_write_key(pty: *mut conch_pty, key: *const c_char) -> c_int {
    boundary::status("conch_pty_write_key", || {
        // SAFETY: the caller's guarantees.
        let (pty, key) = unsafe { (handle::to_arc(pty, "pty")?, str_arg(key, "key")?) };
        pty.write_key(key)?;
        Ok(())
    })
}

/// Resizes the terminal of the running command (clamped to 20–400 columns,
/// 5–200 rows); the command gets SIGWINCH. Errors: no command running.
///
/// # Safety
/// `pty` is a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_pty_resize(pty: *mut conch_pty, cols: u16, rows: u16) -> c_int {
    boundary::status("conch_pty_resize", || {
        // SAFETY: the caller's guarantee.
        unsafe { handle::to_arc(pty, "pty") }?.resize(cols, rows)?;
        Ok(())
    })
}

/// Stops the running command (SIGINT, then SIGTERM, then SIGKILL to all its
/// processes); `conch_pty_start` returns a result with `cancelled` set.
/// Returns at once. Errors: no command running.
///
/// # Safety
/// `pty` is a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_pty_kill(pty: *mut conch_pty) -> c_int {
    boundary::status("conch_pty_kill", || {
        // SAFETY: the caller's guarantee.
        unsafe { handle::to_arc(pty, "pty") }?.kill()?;
        Ok(())
    })
}

/// Writes whether a command is running to `*out`.
///
/// # Safety
/// `pty` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_pty_is_running(pty: *mut conch_pty, out: *mut bool) -> c_int {
    boundary::status("conch_pty_is_running", || {
        // SAFETY: the caller's guarantees.
        let (pty, out) = unsafe { (handle::to_arc(pty, "pty")?, out_arg(out, "out")?) };
        *out = pty.is_running();
        Ok(())
    })
}

/// The visible screen as text, one line per row, trailing blanks trimmed
/// (the last run's screen once it ended). Returns a new string (free with
/// `conch_string_free`), or NULL on error.
///
/// # Safety
/// `pty` is a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_pty_screen_text(pty: *mut conch_pty) -> *mut c_char {
    boundary::pointer("conch_pty_screen_text", || {
        // SAFETY: the caller's guarantee.
        c_string(unsafe { handle::to_arc(pty, "pty") }?.screen_text())
    })
}

/// Frees the handle; a command still running is killed (a `conch_pty_start`
/// blocked on another thread then returns). NULL is a no-op.
///
/// # Safety
/// `pty` is NULL or a live handle, not used again after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_pty_free(pty: *mut conch_pty) {
    boundary::quiet("conch_pty_free", || {
        // SAFETY: `pty` is NULL or a live handle from `conch_pty_new`, not
        // used again (caller's guarantee); this takes its own reference.
        if let Some(pty) = unsafe { handle::take(pty) }
            && pty.is_running()
        {
            // Ignored: the run may have ended since the check.
            let _ = pty.kill();
        }
    })
}

/// Frees a PTY result and its strings. NULL is a no-op.
///
/// # Safety
/// `result` is NULL or a result returned by conch, not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_pty_result_free(result: *mut conch_pty_result) {
    boundary::quiet("conch_pty_result_free", || {
        // SAFETY: `result` is NULL or made by `result_into_c`, not freed
        // before (caller's guarantee), strings by `CString::into_raw`.
        unsafe {
            let Some(r) = handle::take(result) else {
                return;
            };
            free_c_string(r.output);
            free_c_string(r.artifact_id);
        }
    })
}
