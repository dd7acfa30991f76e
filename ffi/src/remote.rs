//! `conch_remote`: a connection to a `conch serve` (in a container, a pod,
//! another machine). `conch_remote_shell` opens a session there as a
//! `conch_shell`, which every `conch_shell_*` call drives as a local one:
//! the same results, the same status codes, plus those of the connection
//! (`CONCH_ERR_AUTH`, `CONCH_ERR_CONNECTION_LOST`, `CONCH_ERR_SESSION_LOST`,
//! `CONCH_ERR_TOO_MANY_SESSIONS`).

use std::ffi::{c_char, c_int};

use ::conch_remote::{ConnectOptions, Remote, Target, connect};
use serde_json::{Map, Value};

use crate::backend::Backend;
use crate::boundary::{self, opt_str_arg, opt_str_list, out_arg, str_arg};
use crate::handle::{self, Castable, OwnershipArc};
use crate::job_exit::ExitGate;
use crate::shell::{ShellHandle, conch_shell, conch_shell_options};
use crate::status::{FfiError, FfiResult};

/// A connection to a `conch serve` (opaque). A dropped WebSocket is
/// reconnected by itself and every session resumed where it stopped.
///
/// Thread-safe: `conch_remote_shell` may be called from any thread; the
/// shells it opens are as thread-safe as local ones. Free it with
/// `conch_remote_free` (its shells then fail with
/// `CONCH_ERR_CONNECTION_LOST`; free them too).
pub struct conch_remote {
    _private: [u8; 0],
}

impl Castable for conch_remote {
    type Ownership = OwnershipArc;
    type RustType = Remote;
}

/// Connects to the server at `target`: a `ws://` or `wss://` URL (`wss://`
/// trusts the system's CA bundle, or the file `SSL_CERT_FILE` names).
/// `token` is the server's token (NULL: none). On `CONCH_OK`, `*out` is the
/// connection (free it with `conch_remote_free`). Errors: a refused token
/// (`CONCH_ERR_AUTH`), a server that cannot be reached or whose certificate
/// is not trusted (`CONCH_ERR_CONNECTION_LOST`), NULL or bad arguments
/// (`CONCH_ERR_INVALID_ARG`).
///
/// # Safety
/// `target` is a C string; `token` is NULL or a C string; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_remote_connect(
    target: *const c_char,
    token: *const c_char,
    out: *mut *mut conch_remote,
) -> c_int {
    boundary::status("conch_remote_connect", || {
        // SAFETY: the caller's guarantees.
        let (target, token, out) = unsafe {
            (
                str_arg(target, "target")?,
                opt_str_arg(token, "token")?,
                out_arg(out, "out")?,
            )
        };
        let opts = ConnectOptions {
            token: token.map(str::to_string),
            ..ConnectOptions::default()
        };
        *out = handle::into_raw(connect(Target::Url(target.to_string()), opts)?);
        Ok(())
    })
}

/// Connects to a server that a command runs on its stdin and stdout:
/// `argv` (ended by NULL) is that command, e.g. `{"docker", "exec", "-i",
/// "box", "conch", "serve", "--stdio", NULL}`. Freeing the connection ends
/// the command's input, and the server closes its sessions. Errors as
/// `conch_remote_connect` (a command that cannot start:
/// `CONCH_ERR_CONNECTION_LOST`).
///
/// # Safety
/// `argv` is a NULL-terminated array of C strings; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_remote_connect_command(
    argv: *const *const c_char,
    out: *mut *mut conch_remote,
) -> c_int {
    boundary::status("conch_remote_connect_command", || {
        // SAFETY: the caller's guarantees.
        let (argv, out) = unsafe { (opt_str_list(argv, "argv")?, out_arg(out, "out")?) };
        let argv: Vec<String> = argv
            .ok_or_else(|| FfiError::arg("argv is NULL"))?
            .into_iter()
            .map(str::to_string)
            .collect();
        if argv.is_empty() {
            return Err(FfiError::arg("argv is empty: it needs a command"));
        }
        let remote = connect(Target::Command(argv), ConnectOptions::default())?;
        *out = handle::into_raw(remote);
        Ok(())
    })
}

/// Opens a session on the server, as `conch_shell_new` does here. Its
/// options are read on the server, where paths and defaults mean
/// something: give them as `opts->options_json` (the core's
/// `ShellOptions`, snake_case keys, e.g. `{"cwd": "/work", "max_bytes":
/// 100000}`), with `opts->on_job_exit` and `opts->user_data` as for a local
/// shell (the callback runs on a thread of the connection's). The other
/// fields of `opts` must be zero: `CONCH_ERR_INVALID_ARG` names one that is
/// not. `opts` may be NULL (the server's defaults). On `CONCH_OK`, `*out`
/// is the shell: every `conch_shell_*` call works on it; free it with
/// `conch_shell_free` (which closes the session on the server).
///
/// # Safety
/// `remote` is a live connection; `opts` is NULL or valid; `out` is
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_remote_shell(
    remote: *mut conch_remote,
    opts: *const conch_shell_options,
    out: *mut *mut conch_shell,
) -> c_int {
    boundary::status("conch_remote_shell", || {
        // SAFETY: the caller's guarantees.
        let (remote, opts, out) = unsafe {
            (
                handle::to_arc(remote, "remote")?,
                opts.as_ref(),
                out_arg(out, "out")?,
            )
        };
        let (options, exits) = match opts {
            // SAFETY: the caller's guarantee on the fields.
            Some(o) => (
                unsafe { remote_options(o) }?,
                ExitGate::new(o.on_job_exit, o.user_data),
            ),
            None => (Map::new(), None),
        };
        let shell = remote.shell(options)?;
        let exits = exits.map(|(gate, hook)| {
            shell.on_job_exit(hook);
            gate
        });
        *out = handle::into_raw(ShellHandle::new(Backend::Remote(shell), exits));
        Ok(())
    })
}

/// The options of a remote shell: `options_json` only (the other fields
/// name paths and stores of this machine).
///
/// # Safety
/// `opts` fields are NULL or valid, as documented on `conch_shell_options`.
unsafe fn remote_options(opts: &conch_shell_options) -> FfiResult<Map<String, Value>> {
    let local = [
        ("opts->shell", !opts.shell.is_null()),
        ("opts->cwd", !opts.cwd.is_null()),
        ("opts->env", !opts.env.is_null()),
        ("opts->skip_mask", opts.skip_mask),
        ("opts->mask_names", !opts.mask_names.is_null()),
        ("opts->artifacts_dir", !opts.artifacts_dir.is_null()),
        ("opts->max_bytes", opts.max_bytes != 0),
        ("opts->snapshot", !opts.snapshot.is_null()),
        ("opts->prefix", !opts.prefix.is_null()),
        (
            "opts->env_policy",
            !opts.env_policy.inherit.is_null() || !opts.env_policy.exclude.is_null(),
        ),
        (
            "opts->skip_non_interactive_env",
            opts.skip_non_interactive_env,
        ),
        ("opts->artifact_store", !opts.artifact_store.is_null()),
        ("opts->max_jobs", opts.max_jobs != 0),
        ("opts->job_artifact_cap", opts.job_artifact_cap != 0),
        ("opts->sandbox", !opts.sandbox.is_null()),
    ];
    if let Some((name, _)) = local.iter().find(|(_, set)| *set) {
        return Err(FfiError::arg(format!(
            "{name} is set: a remote shell takes its options as opts->options_json, \
             read on the server"
        )));
    }
    // SAFETY: the caller's guarantee.
    match unsafe { opt_str_arg(opts.options_json, "opts->options_json") }? {
        None => Ok(Map::new()),
        Some(text) => match serde_json::from_str(text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(FfiError::arg("opts->options_json must be a JSON object")),
            Err(e) => Err(FfiError::arg(format!(
                "opts->options_json is not JSON: {e}"
            ))),
        },
    }
}

/// Ends the connection: the server closes its sessions (at once for a
/// command's stdin, after its grace period for a WebSocket). NULL is a
/// no-op.
///
/// # Safety
/// `remote` is NULL or a live connection, not used again after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_remote_free(remote: *mut conch_remote) {
    boundary::quiet("conch_remote_free", || {
        // SAFETY: NULL or a live handle, not used again (the caller's
        // guarantee).
        if let Some(remote) = unsafe { handle::take(remote) } {
            remote.close();
        }
    })
}
