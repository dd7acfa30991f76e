//! `Shell`: a persistent bash session.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use conch_core::CancelToken;
use conch_core::shell as core;
use napi::bindgen_prelude::{Env, Object};
use napi_derive::napi;

use crate::errors::{Code, core_error};
use crate::options::{self, EnvPolicy};
use crate::quick::{self, ChunkFunction};
use crate::result::BashResult;
use crate::signal::Signal;
use crate::stream::JsBlocked;

/// How a `Shell` is created.
#[napi(object, object_to_js = false)]
pub struct ShellOptions {
    /// bash to run; default: `bash` from `PATH`.
    pub shell: Option<String>,
    /// Starting directory; default: the host's cwd.
    pub cwd: Option<String>,
    /// Variables exported in the session.
    pub env: Option<HashMap<String, String>>,
    /// `'auto'` (default: the user's ~/.bashrc aliases, functions and
    /// options), `'none'`, or the path of a snapshot file.
    pub snapshot: Option<String>,
    /// Prepended to every command: `<prefix> <command>`.
    pub prefix: Option<String>,
    /// Apply the non-interactive defaults (`PAGER=cat`, `GIT_EDITOR=true`,
    /// `CI=1`…); default true.
    pub non_interactive_env: Option<bool>,
    /// Bytes of output kept in memory per run; default 51200.
    pub max_bytes: Option<f64>,
    /// Where full outputs are spilled as `artifact://<id>`; default: nowhere.
    pub artifacts_dir: Option<String>,
    /// Which host variables reach the shell.
    pub env_policy: Option<EnvPolicy>,
}

/// One command for `Shell.run`.
#[napi(object, object_to_js = false)]
pub struct RunOptions {
    pub command: String,
    /// Directory for this run only, resolved against the session's cwd.
    pub cwd: Option<String>,
    /// Variables for this run only.
    pub env: Option<HashMap<String, String>>,
    /// Deadline in milliseconds; the command's process tree is killed then.
    pub timeout_ms: Option<f64>,
    /// Aborting it kills the command's process tree; the result says `cancelled`.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Signal>,
    /// Keep only the first N lines of the whole output (and stop the
    /// command once they are complete).
    pub head: Option<f64>,
    /// Then keep only the last N lines.
    pub tail: Option<f64>,
}

/// A persistent real bash: cwd, variables, functions and aliases carry over
/// from one `run` to the next. Runs queue in order; `abort()` and `close()`
/// work at any moment.
#[napi]
pub struct Shell {
    inner: Arc<core::Shell>,
}

#[napi]
impl Shell {
    /// Starts bash (throws for a bad shell path, cwd or option).
    #[napi(constructor)]
    pub fn new(options: Option<ShellOptions>) -> napi::Result<Self, Code> {
        let o = options.unwrap_or(ShellOptions {
            shell: None,
            cwd: None,
            env: None,
            snapshot: None,
            prefix: None,
            non_interactive_env: None,
            max_bytes: None,
            artifacts_dir: None,
            env_policy: None,
        });
        let opts = core::ShellOptions {
            shell: o.shell.map(PathBuf::from),
            cwd: o.cwd.map(PathBuf::from),
            session_env: options::env(o.env),
            snapshot: options::snapshot(o.snapshot)?,
            prefix: o.prefix,
            non_interactive_env: options::non_interactive_env(o.non_interactive_env),
            env_policy: options::env_policy(o.env_policy)?,
            max_bytes: options::max_bytes(o.max_bytes)?,
            artifacts: options::artifacts(o.artifacts_dir),
            ..core::ShellOptions::default()
        };
        let inner = core::Shell::new(opts).map_err(core_error)?;
        Ok(Shell {
            inner: Arc::new(inner),
        })
    }

    /// Runs one command. `onChunk` receives the sanitized output as it
    /// arrives, in order, all of it before the promise settles; if it
    /// throws, the command is aborted and the promise rejects with that
    /// error. Timeout and abort resolve with `cancelled: true`. When no
    /// other run is in flight, the call waits up to 2 ms for the command
    /// before it returns: a command that ends by then (a builtin, a small
    /// program) comes back settled, its chunks delivered during the call.
    #[napi(
        ts_args_type = "options: RunOptions, onChunk?: (chunk: string) => void",
        ts_return_type = "Promise<BashResult>"
    )]
    pub fn run<'env>(
        &self,
        env: &'env Env,
        options: RunOptions,
        on_chunk: Option<ChunkFunction<'env>>,
    ) -> napi::Result<Object<'env>, Code> {
        let cancel = CancelToken::new();
        let opts = core::RunOptions {
            command: options.command,
            cwd: options.cwd.map(PathBuf::from),
            env: options::env(options.env),
            timeout: options::timeout(options.timeout_ms)?,
            cancel: Some(cancel.clone()),
            head_lines: options::lines("head", options.head)?,
            tail_lines: options::lines("tail", options.tail)?,
            artifact: None,
        };
        let shell = self.inner.clone();
        // The place is taken here, on the JS thread: runs keep the order of
        // the calls whichever pooled thread starts first.
        let place = shell.reserve();
        quick::run(env, options.signal, on_chunk, cancel, move |chunks| {
            shell
                .run_in_place(place, opts, |c: &str| chunks.send(c))
                .map(BashResult::from)
                .map_err(core_error)
        })
    }

    /// Cancels the running command (its result says `cancelled: true`).
    #[napi]
    pub fn abort(&self) {
        self.inner.abort();
    }

    /// Pids of the processes the session still runs in the background.
    #[napi]
    pub fn background_jobs(&self) -> Vec<u32> {
        self.inner.background_jobs()
    }

    /// Kills everything the session runs (the current command, background
    /// jobs, bash) and refuses further runs. Idempotent.
    #[napi]
    pub fn close(&self) {
        let _blocked = JsBlocked::enter();
        self.inner.close();
    }
}
