//! `executeShell` (a fresh process per call) and `executeBash` (cached
//! persistent sessions).

use std::path::PathBuf;

use conch_core::shell::registry::{self, ExecuteBashOptions as CoreBashOptions};
use conch_core::shell::{ExecuteOptions, execute_shell as core_execute_shell};
use conch_core::wire::EnvVars;
use conch_core::{CancelToken, Mask, SandboxOption};
use napi::bindgen_prelude::{Env, Object};
use napi_derive::napi;

use crate::errors::{Code, core_error, from_napi};
use crate::options::{self, Read};
use crate::result::Js;
use crate::signal::Signal;
use crate::stream::{ChunkFn, JsBlocked};
use crate::worker;

/// Runs one command in a fresh `<shell> -c` process (no state carried
/// over). The options are the core's `ExecuteOptions`.
#[napi(
    catch_unwind,
    ts_args_type = "options: ExecuteShellOptions & { signal?: AbortSignal }, onChunk?: (chunk: string) => void",
    ts_return_type = "Promise<BashResult>"
)]
pub fn execute_shell<'env>(
    env: &'env Env,
    options: Object<'env>,
    on_chunk: Option<ChunkFn>,
) -> napi::Result<Object<'env>, Code> {
    let mut opts: ExecuteOptions = options::read(env, Some(&options), &["signal"])?;
    let signal: Option<Signal> = options.get("signal").map_err(from_napi)?;
    let cancel = CancelToken::new();
    opts.cancel = Some(cancel.clone());
    worker::spawn(env, signal, on_chunk, cancel, move |chunks| {
        core_execute_shell(opts, |c: &str| chunks.send(c))
            .map(Js)
            .map_err(core_error)
    })
}

/// Options of `executeBash`: the first group picks the cached session, the
/// rest applies to this call only.
#[napi(object, object_to_js = false)]
pub struct ExecuteBashOptions {
    /// Isolates the sessions of different agents or conversations.
    pub session_key: Option<String>,
    /// bash to run; default: `bash` from `PATH`.
    pub shell: Option<String>,
    /// Prepended to every command of the session.
    pub prefix: Option<String>,
    /// `'auto'` (default), `'none'`, or a snapshot file path.
    pub snapshot: Option<String>,
    /// The loop that runs the commands inside the session's bash:
    /// `'auto'` (default), `'builtin'` or `'eval'`, as `Shell` takes it;
    /// sessions with different loops are different sessions.
    #[napi(ts_type = "'auto' | 'builtin' | 'eval'")]
    pub engine: Option<String>,
    /// Variables exported in the session.
    #[napi(ts_type = "Record<string, string> | null")]
    pub session_env: Option<Read<EnvVars>>,
    /// Which values of `sessionEnv` and `env` are replaced by `[masked:
    /// NAME]` in the result and the chunks, as `Shell` takes it; sessions
    /// with different masks are different sessions.
    #[napi(ts_type = "boolean | Array<string> | null")]
    pub mask: Option<Read<Mask>>,
    /// Directory for this call, resolved against the session's cwd.
    pub cwd: Option<String>,
    /// Variables for this call only.
    #[napi(ts_type = "Record<string, string> | null")]
    pub env: Option<Read<EnvVars>>,
    /// Deadline in milliseconds.
    pub timeout_ms: Option<f64>,
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Signal>,
    /// Receives the output as it arrives (see `Shell.run`).
    #[napi(ts_type = "(chunk: string) => void")]
    pub on_chunk: Option<ChunkFn>,
    /// Where the full output is spilled as `artifact://<id>`.
    pub artifacts_dir: Option<String>,
    /// Keep only the first N lines of the whole output.
    pub head: Option<f64>,
    /// Then keep only the last N lines.
    pub tail: Option<f64>,
    /// The session's sandbox, as `Shell` takes it; sessions with different
    /// sandboxes are different sessions.
    #[napi(ts_type = "SandboxOptions | boolean | null")]
    pub sandbox: Option<Read<SandboxOption>>,
}

/// Runs `command` in the cached persistent session for these options
/// (created on first use): state carries over between calls with the same
/// `sessionKey`. Timeout and abort resolve with `cancelled: true`.
#[napi(ts_return_type = "Promise<BashResult>", catch_unwind)]
pub fn execute_bash<'env>(
    env: &'env Env,
    command: String,
    options: Option<ExecuteBashOptions>,
) -> napi::Result<Object<'env>, Code> {
    let cancel = CancelToken::new();
    let Some(o) = options else {
        let opts = CoreBashOptions {
            cancel: Some(cancel.clone()),
            ..CoreBashOptions::default()
        };
        return worker::spawn(env, None, None::<ChunkFn>, cancel, move |chunks| {
            registry::execute_bash(&command, opts, |c: &str| chunks.send(c))
                .map(Js)
                .map_err(core_error)
        });
    };
    let opts = CoreBashOptions {
        session_key: o.session_key,
        shell: o.shell.map(PathBuf::from),
        prefix: o.prefix,
        snapshot: options::snapshot(o.snapshot)?,
        engine: options::engine(o.engine)?,
        session_env: Read::get(env, "sessionEnv", o.session_env)?.0,
        mask: Read::get(env, "mask", o.mask)?,
        cwd: o.cwd.map(PathBuf::from),
        env: Read::get(env, "env", o.env)?.0,
        timeout: options::timeout(o.timeout_ms)?,
        cancel: Some(cancel.clone()),
        artifacts: options::artifacts(o.artifacts_dir)?,
        artifact: None,
        head_lines: options::lines("head", o.head)?,
        tail_lines: options::lines("tail", o.tail)?,
        yield_after: None,
    };
    let sandbox = Read::get(env, "sandbox", o.sandbox)?.0;
    worker::spawn(env, o.signal, o.on_chunk, cancel, move |chunks| {
        registry::execute_bash_in(&command, opts, sandbox.as_ref(), |c: &str| chunks.send(c))
            .map(Js)
            .map_err(core_error)
    })
}

/// Closes the cached sessions of `sessionKey` (killing what they run).
#[napi(catch_unwind)]
pub fn close_bash_session(session_key: String) {
    let _blocked = JsBlocked::enter();
    registry::close(&session_key);
}

/// Closes every cached session (e.g. at host exit).
#[napi(catch_unwind)]
pub fn close_all_bash_sessions() {
    let _blocked = JsBlocked::enter();
    registry::close_all();
}
