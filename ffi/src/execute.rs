//! `conch_execute_shell`: one command in a fresh process.

use std::ffi::{c_char, c_int, c_void};

use conch_core::shell::{ExecuteOptions, execute_shell};

use crate::artifact::conch_artifact_store;
use crate::boundary::{self, out_arg, ref_arg};
use crate::callback::{ChunkForwarder, conch_chunk_cb};
use crate::cancel::conch_cancel_token;
use crate::options::{self, FromJson, conch_env_policy};
use crate::result::{conch_bash_result, into_c};
use crate::sandbox::conch_sandbox;
use crate::status::FfiResult;

/// One command for `conch_execute_shell`. Zero-initialize it, then set
/// `command`: zero / NULL fields are the defaults.
#[repr(C)]
pub struct conch_execute_options {
    /// The command line. Required.
    pub command: *const c_char,
    /// The shell run as `<shell> -c <command>` (bash, sh, zsh…); NULL: `bash`
    /// from `PATH`.
    pub shell: *const c_char,
    /// Working directory; NULL: the host's cwd.
    pub cwd: *const c_char,
    /// Extra variables, `"KEY=VALUE"` strings ended by a NULL pointer; NULL:
    /// none.
    pub env: *const *const c_char,
    /// true: return the values of `env` as they are. By default the value
    /// of every variable of `env` whose name contains (in any case)
    /// `TOKEN`, `SECRET`, `PASSWORD`, `API_KEY` or `ACCESS_KEY`, 8 bytes or
    /// longer, is replaced by `[masked: NAME]` in everything returned.
    pub skip_mask: bool,
    /// More names whose values are masked so, ended by a NULL pointer;
    /// NULL: none. Not with `skip_mask`.
    pub mask_names: *const *const c_char,
    /// Deadline in milliseconds; 0: none. At most 2147483647 (about 24
    /// days): a larger value is `CONCH_ERR_INVALID_ARG`, never clamped.
    pub timeout_ms: u64,
    /// Bytes of output kept; 0: 51200.
    pub max_bytes: usize,
    /// Where the full output is spilled past `max_bytes`; NULL: nowhere.
    pub artifacts_dir: *const c_char,
    /// A shared store instead of `artifacts_dir` (borrowed); NULL: none.
    pub artifact_store: *const conch_artifact_store,
    /// Keep only the first N lines of the whole output; 0: no limit.
    pub head_lines: usize,
    /// Then keep only the last N lines; 0: no limit.
    pub tail_lines: usize,
    /// Cancels the command when cancelled, from any thread; NULL: none.
    pub cancel: *const conch_cancel_token,
    /// Which host variables the process inherits (see `conch_env_policy`;
    /// zeroed: all of them).
    pub env_policy: conch_env_policy,
    /// true: do not apply the non-interactive defaults (`PAGER=cat`, …).
    pub skip_non_interactive_env: bool,
    /// The sandbox the command runs in (made for this run and removed
    /// after it; borrowed: read before the command starts); NULL: none. A
    /// policy the kernel cannot enforce is `CONCH_ERR_SANDBOX_UNAVAILABLE`.
    pub sandbox: *const conch_sandbox,
    /// More options as a JSON object, the core's `ExecuteOptions`
    /// serialized (snake_case keys, durations in seconds, as
    /// `docs/api/schema.json` lists them; not `command`). An option set here
    /// and by its typed field too is `CONCH_ERR_INVALID_ARG`. NULL: none.
    pub options_json: *const c_char,
}

/// # Safety
/// `opts` fields are NULL or valid, as documented on `conch_execute_options`.
unsafe fn execute_options(opts: &conch_execute_options) -> FfiResult<ExecuteOptions> {
    // SAFETY (whole block): every pointer field is NULL or valid (caller).
    unsafe {
        let FromJson { value: json, given } =
            options::with_command::<ExecuteOptions>(opts.command, opts.options_json)?;
        Ok(ExecuteOptions {
            shell: given.path("shell", opts.shell, json.shell)?,
            cwd: given.path("cwd", opts.cwd, json.cwd)?,
            env: given.env(opts.env, json.env)?,
            mask: given.mask(opts.skip_mask, opts.mask_names, json.mask)?,
            timeout: given.millis("timeout", opts.timeout_ms, json.timeout)?,
            cancel: options::cancel(opts.cancel),
            non_interactive_env: given
                .non_interactive(opts.skip_non_interactive_env, json.non_interactive_env)?,
            env_policy: given.env_policy(&opts.env_policy, json.env_policy)?,
            max_bytes: given.max_bytes(opts.max_bytes, json.max_bytes)?,
            artifacts: given.artifacts(opts.artifacts_dir, opts.artifact_store, json.artifacts)?,
            head_lines: given.lines("head", opts.head_lines, json.head_lines)?,
            tail_lines: given.lines("tail", opts.tail_lines, json.tail_lines)?,
            sandbox: given.sandbox(opts.sandbox, json.sandbox)?,
            ..json
        })
    }
}

/// Runs one command in a fresh `<shell> -c` process (no state kept between
/// calls) and blocks until it exits; what it leaves in the background is
/// killed.
///
/// Output streams to `cb` (may be NULL) on this thread, in order, before
/// this function returns. On `CONCH_OK`, `*out` is the result (free it with
/// `conch_bash_result_free`); a timeout or cancellation is a result, not an
/// error.
///
/// # Safety
/// `opts` points to valid options; `cb`, if not NULL, is safe to call with
/// `user`; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_execute_shell(
    opts: *const conch_execute_options,
    cb: conch_chunk_cb,
    user: *mut c_void,
    out: *mut *mut conch_bash_result,
) -> c_int {
    boundary::status("conch_execute_shell", || {
        // SAFETY (whole block): the caller's guarantees.
        let (opts, out) = unsafe {
            let opts = execute_options(ref_arg(opts, "opts")?)?;
            (opts, out_arg(out, "out")?)
        };
        let mut forwarder = ChunkForwarder::new(cb, user);
        let result = execute_shell(opts, |chunk| forwarder.forward(chunk))?;
        *out = into_c(result)?;
        Ok(())
    })
}
