//! Options of the shell engine, owned and plain so every binding can build them.

use std::path::PathBuf;
use std::time::Duration;

use crate::CancelToken;
use crate::artifact::{Artifact, ArtifactStore};
use crate::output::sink::DEFAULT_MAX_BYTES;
use crate::process::env::EnvPolicy;
use crate::process::tree::KillLadder;

/// Which rc snapshot a session sources at start.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Snapshot {
    /// None: a clean bash.
    None,
    /// The user's `~/.bashrc`, captured once per shell and rc version.
    #[default]
    Auto,
    /// A snapshot file made elsewhere.
    Path(PathBuf),
}

/// How a [`super::Shell`] is created.
#[derive(Debug, Clone)]
pub struct ShellOptions {
    /// bash to run; `None`: `bash` from `PATH`.
    pub shell: Option<PathBuf>,
    /// Starting directory; `None`: the host's cwd.
    pub cwd: Option<PathBuf>,
    /// Variables exported in the session (after the policy and defaults).
    pub session_env: Vec<(String, String)>,
    pub snapshot: Snapshot,
    /// Prepended to every command: `<prefix> <command>`.
    pub prefix: Option<String>,
    /// Apply [`crate::process::env::NON_INTERACTIVE_ENV`].
    pub non_interactive_env: bool,
    pub env_policy: EnvPolicy,
    /// Bytes of output kept in memory per run.
    pub max_bytes: usize,
    /// Where full outputs are spilled; `None`: no artifacts.
    pub artifacts: Option<ArtifactStore>,
    /// Grace between the signals of the kill ladder.
    pub kill_ladder: KillLadder,
}

impl Default for ShellOptions {
    fn default() -> Self {
        ShellOptions {
            shell: None,
            cwd: None,
            session_env: Vec::new(),
            snapshot: Snapshot::Auto,
            prefix: None,
            non_interactive_env: true,
            env_policy: EnvPolicy::default(),
            max_bytes: DEFAULT_MAX_BYTES,
            artifacts: None,
            kill_ladder: KillLadder::default(),
        }
    }
}

/// One command to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub command: String,
    /// Directory for this run only, resolved against the session cwd.
    pub cwd: Option<PathBuf>,
    /// Variables for this run only.
    pub env: Vec<(String, String)>,
    /// `None`: no deadline.
    pub timeout: Option<Duration>,
    pub cancel: Option<CancelToken>,
    /// Keep only the first N lines of the whole stream (and stop the command
    /// once they are complete, as `| head -n N` would).
    pub head_lines: Option<usize>,
    /// Keep only the last N lines (after `head_lines`).
    pub tail_lines: Option<usize>,
    /// An artifact already allocated by the caller; otherwise one is
    /// allocated from the shell's store, if it has one.
    pub artifact: Option<Artifact>,
}

impl RunOptions {
    /// Options for `command` with every other field at its default.
    pub fn new(command: impl Into<String>) -> Self {
        RunOptions {
            command: command.into(),
            ..Default::default()
        }
    }
}
