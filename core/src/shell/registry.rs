//! The process-wide cache of persistent sessions behind [`execute_bash`]
//! (and the bash tool): calls with the same shell, prefix, snapshot,
//! session env, artifact store and session key share one [`Shell`], so
//! state carries over between them.
//!
//! The cache is bounded, so a long-lived host does not collect shells
//! without end: past [`MAX_SESSIONS`] the least recently used idle session
//! is closed, and sessions idle longer than [`IDLE_TIMEOUT`] are closed on
//! the next call. A running session, or one whose jobs run, is never
//! evicted. Hosts call
//! [`close_all`] at exit.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use super::engine::EngineChoice;
use super::options::{RunOptions, ShellOptions, Snapshot};
use super::session::Shell;
use crate::artifact::{ArtifactSlot, ArtifactStore};
use crate::output::Mask;
use crate::process::sandbox::Sandbox;
use crate::run_result::BashResult;
use crate::sync::lock;
use crate::{CancelToken, Result};

/// Sessions kept at most (idle ones beyond are closed, oldest first).
pub const MAX_SESSIONS: usize = 32;
/// Idle time after which a session is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Options of [`execute_bash`]; the first group picks the session, the
/// second applies to this call only.
#[derive(Debug, Clone)]
pub struct ExecuteBashOptions {
    /// Isolates sessions of different agents/sessions of a host.
    pub session_key: Option<String>,
    pub shell: Option<PathBuf>,
    pub prefix: Option<String>,
    pub snapshot: Snapshot,
    /// See [`ShellOptions::engine`].
    pub engine: EngineChoice,
    pub session_env: Vec<(String, String)>,
    /// See [`ShellOptions::mask`].
    pub mask: Mask,

    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    pub timeout: Option<Duration>,
    pub cancel: Option<CancelToken>,
    /// Where full outputs are spilled; `None`: no artifacts. The default
    /// is the process's private directory
    /// ([`ArtifactStore::process_default`]). It also picks the session,
    /// whose own store it is: the session's jobs spill there (see
    /// [`ShellOptions::artifacts`]), so the `artifact://<id>` they name is
    /// read from this store, as a run's is.
    pub artifacts: Option<ArtifactStore>,
    /// See [`RunOptions::artifact`](crate::RunOptions::artifact).
    pub artifact: Option<ArtifactSlot>,
    pub head_lines: Option<usize>,
    pub tail_lines: Option<usize>,
    /// See [`RunOptions::yield_after`].
    pub yield_after: Option<Duration>,
}

impl Default for ExecuteBashOptions {
    fn default() -> Self {
        ExecuteBashOptions {
            session_key: None,
            shell: None,
            prefix: None,
            snapshot: Snapshot::default(),
            engine: EngineChoice::default(),
            session_env: Vec::new(),
            mask: Mask::default(),
            cwd: None,
            env: Vec::new(),
            timeout: None,
            cancel: None,
            artifacts: Some(ArtifactStore::process_default()),
            artifact: None,
            head_lines: None,
            tail_lines: None,
            yield_after: None,
        }
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    shell: Option<PathBuf>,
    prefix: Option<String>,
    snapshot: Snapshot,
    engine: EngineChoice,
    session_env: Vec<(String, String)>,
    mask: Mask,
    session_key: Option<String>,
    sandbox: Option<Sandbox>,
    /// The directory of the session's store.
    artifacts: Option<PathBuf>,
}

impl std::hash::Hash for Snapshot {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            Snapshot::None => 0u8.hash(state),
            Snapshot::Auto => 1u8.hash(state),
            Snapshot::Path(p) => p.hash(state),
        }
    }
}

struct Entry {
    shell: Shell,
    users: AtomicUsize,
    last_used: Mutex<Instant>,
}

static SESSIONS: LazyLock<Mutex<HashMap<Key, Arc<Entry>>>> = LazyLock::new(Default::default);

/// Runs `command` in the cached session for these options (creating it if
/// needed). Timeout and cancellation come back as results
/// (`[Command timed out after N seconds]`, `[Command cancelled]` before the
/// output); errors are bad input or a shell that cannot start.
pub fn execute_bash(
    command: &str,
    opts: ExecuteBashOptions,
    on_chunk: impl FnMut(&str),
) -> Result<BashResult> {
    execute_bash_in(command, opts, None, on_chunk)
}

/// [`execute_bash`] in a session with `sandbox` (see
/// [`ShellOptions::sandbox`]): sessions with different sandboxes are
/// different sessions.
pub fn execute_bash_in(
    command: &str,
    opts: ExecuteBashOptions,
    sandbox: Option<&Sandbox>,
    on_chunk: impl FnMut(&str),
) -> Result<BashResult> {
    let run = run_options(command, &opts);
    with_session_in(&opts, sandbox, |shell| shell.run(run, on_chunk))?
}

/// The run [`execute_bash`] makes of `command` with these options.
pub(crate) fn run_options(command: &str, opts: &ExecuteBashOptions) -> RunOptions {
    RunOptions {
        command: command.to_string(),
        cwd: opts.cwd.clone(),
        env: opts.env.clone(),
        timeout: opts.timeout,
        cancel: opts.cancel.clone(),
        head_lines: opts.head_lines,
        tail_lines: opts.tail_lines,
        artifact: opts
            .artifact
            .clone()
            .or_else(|| opts.artifacts.as_ref().map(|s| s.slot("bash"))),
        yield_after: opts.yield_after,
    }
}

/// Calls `f` with the cached session for these options (created if
/// needed; only the options that pick the session matter), marked in use
/// meanwhile so it is not evicted under the call: for a host that starts
/// and reads jobs in the session its bash tool runs in.
pub fn with_session<T>(opts: &ExecuteBashOptions, f: impl FnOnce(&Shell) -> T) -> Result<T> {
    with_session_in(opts, None, f)
}

/// [`with_session`] for the session with `sandbox`.
pub fn with_session_in<T>(
    opts: &ExecuteBashOptions,
    sandbox: Option<&Sandbox>,
    f: impl FnOnce(&Shell) -> T,
) -> Result<T> {
    let mut session_env = opts.session_env.clone();
    session_env.sort();
    let key = Key {
        shell: opts.shell.clone(),
        prefix: opts.prefix.clone(),
        snapshot: opts.snapshot.clone(),
        engine: opts.engine,
        session_env,
        mask: opts.mask.clone(),
        session_key: opts.session_key.clone(),
        sandbox: sandbox.cloned(),
        artifacts: opts
            .artifacts
            .as_ref()
            .map(|store| store.dir().to_path_buf()),
    };
    let entry = checkout(&key, opts)?;
    let result = f(&entry.shell);
    *lock(&entry.last_used) = Instant::now();
    entry.users.fetch_sub(1, Ordering::SeqCst);
    evict();
    Ok(result)
}

/// Closes the sessions created with `session_key`.
pub fn close(session_key: &str) {
    let closed: Vec<Arc<Entry>> = {
        let mut map = lock(&SESSIONS);
        let keys: Vec<Key> = map
            .keys()
            .filter(|k| k.session_key.as_deref() == Some(session_key))
            .cloned()
            .collect();
        keys.iter().filter_map(|k| map.remove(k)).collect()
    };
    for entry in closed {
        entry.shell.close();
    }
}

/// Closes every cached session (call at host exit).
pub fn close_all() {
    let all: Vec<Arc<Entry>> = lock(&SESSIONS).drain().map(|(_, e)| e).collect();
    for entry in all {
        entry.shell.close();
    }
}

/// Number of cached sessions.
pub fn len() -> usize {
    lock(&SESSIONS).len()
}

/// The session for `key`, marked in use; a closed or missing one is replaced.
fn checkout(key: &Key, opts: &ExecuteBashOptions) -> Result<Arc<Entry>> {
    let mut map = lock(&SESSIONS);
    if let Some(entry) = map.get(key) {
        entry.users.fetch_add(1, Ordering::SeqCst);
        return Ok(entry.clone());
    }
    let shell = Shell::new(ShellOptions {
        shell: opts.shell.clone(),
        session_env: opts.session_env.clone(),
        mask: opts.mask.clone(),
        snapshot: opts.snapshot.clone(),
        engine: opts.engine,
        prefix: opts.prefix.clone(),
        sandbox: key.sandbox.clone(),
        artifacts: opts.artifacts.clone(),
        ..ShellOptions::default()
    })?;
    let entry = Arc::new(Entry {
        shell,
        users: AtomicUsize::new(1),
        last_used: Mutex::new(Instant::now()),
    });
    map.insert(key.clone(), entry.clone());
    Ok(entry)
}

/// Closes idle sessions past the idle time, then the oldest idle ones past
/// the maximum. Closing happens outside the map lock.
fn evict() {
    let now = Instant::now();
    let doomed: Vec<Arc<Entry>> = {
        let mut map = lock(&SESSIONS);
        let mut idle: Vec<(Instant, Key)> = map
            .iter()
            .filter(|(_, e)| e.users.load(Ordering::SeqCst) == 0 && !e.shell.runs_jobs())
            .map(|(k, e)| (*lock(&e.last_used), k.clone()))
            .collect();
        idle.sort_by_key(|(t, _)| *t);
        let excess = map.len().saturating_sub(MAX_SESSIONS);
        let mut out = Vec::new();
        for (i, (t, k)) in idle.into_iter().enumerate() {
            if i < excess || now.duration_since(t) > IDLE_TIMEOUT {
                out.extend(map.remove(&k));
            }
        }
        out
    };
    for entry in doomed {
        entry.shell.close();
    }
}
