//! How a [`BashTool`](super::BashTool) is set up by its host: its
//! configuration and the defaults of a project's tool.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::command::intercept::Rule;
use crate::defaults;
use crate::output::Mask;
use crate::process::sandbox::Sandbox;
use crate::shell::Snapshot;
use crate::shell::engine::EngineChoice;
use crate::wire::{read, shape};
// What the docs name (the schema keeps the docs' text as written).
#[cfg(doc)]
use {super::BashTool, crate::ArtifactStore};

/// Default pace of live updates.
pub const DEFAULT_UPDATE_INTERVAL: Duration = defaults::UPDATE_INTERVAL;

/// How a [`BashTool`] is set up by its host. On the wire (see
/// [`crate::wire`], a remote `tool` session's options) the variables are
/// `env` and the durations seconds; the PTY's size is the host's only.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct BashToolConfig {
    /// The name the model calls this tool by (its definition's `name`).
    pub name: String,
    /// The name of the job tool of this tool's session, which this tool's
    /// texts point the model to.
    pub job_tool_name: String,
    /// The project directory: commands run here, relative `cwd` arguments
    /// are resolved against it.
    pub cwd: PathBuf,
    /// Where truncated outputs are spilled (`<dir>/<id>.bash.log`), checked
    /// when the tool is made; `None`: the process's private directory
    /// ([`ArtifactStore::process_default`]).
    pub artifacts_dir: Option<PathBuf>,
    /// The host's tool names: an interceptor rule applies only when its
    /// tool is among them.
    pub tool_names: Vec<String>,
    /// Refuse commands the host has a dedicated tool for.
    pub interceptor: bool,
    /// The interceptor's rules; `None`: the default rules.
    pub rules: Option<Vec<Rule>>,
    /// Run on a PTY when the host has a UI (`ToolContext::has_ui`).
    pub virtual_terminal: bool,
    /// Isolates this tool's persistent shell from other tools' (the
    /// registry's session key); `None`: shared by every tool of the process
    /// with the same shell settings.
    pub session_key: Option<String>,
    /// Least time between two live updates.
    #[serde(deserialize_with = "read::update_interval")]
    #[schemars(schema_with = "shape::seconds")]
    pub update_interval: Duration,
    /// bash to run; `None`: `bash` from `PATH`.
    pub shell: Option<PathBuf>,
    /// Prepended to every command: `<prefix> <command>`.
    pub prefix: Option<String>,
    /// Which loop runs the commands inside the session's bash (as
    /// [`crate::ShellOptions::engine`]).
    pub engine: EngineChoice,
    /// The rc snapshot the shell sources.
    #[serde(deserialize_with = "read::snapshot")]
    #[schemars(schema_with = "shape::snapshot")]
    pub snapshot: Snapshot,
    /// Variables exported in the shell session (and given to PTY runs).
    /// (`session_env` is Node's name for it.)
    #[serde(rename = "env", alias = "session_env", deserialize_with = "read::env")]
    #[schemars(schema_with = "shape::env")]
    pub session_env: Vec<(String, String)>,
    /// Which values of `env` are replaced by `[masked: NAME]` in what the
    /// tool returns (as [`crate::ShellOptions::mask`]): `true`, those of
    /// names that look secret; `false`, none; a list of names, those and
    /// these.
    pub mask: Mask,
    /// Size of the PTY.
    #[serde(skip)]
    pub pty_cols: u16,
    #[serde(skip)]
    pub pty_rows: u16,
    /// A command still running this long after it started goes on as a
    /// job of the session and the call returns with its output so far
    /// (see [`crate::RunOptions::yield_after`]); `None`: the call waits
    /// for the command or its timeout.
    #[serde(deserialize_with = "read::auto_background_after")]
    #[schemars(schema_with = "shape::optional_seconds")]
    pub auto_background_after: Option<Duration>,
    /// The sandbox commands run in (see [`crate::Sandbox`]): the project
    /// directory `cwd` is writable besides its `writable` paths. The tool's
    /// description then says what the sandbox allows. `None`: none.
    #[serde(deserialize_with = "read::sandbox")]
    #[schemars(schema_with = "shape::sandbox")]
    pub sandbox: Option<Sandbox>,
}

impl BashToolConfig {
    /// Defaults for a project in `cwd`.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        BashToolConfig {
            name: defaults::TOOL_NAME.to_string(),
            job_tool_name: defaults::JOB_TOOL_NAME.to_string(),
            cwd: cwd.into(),
            artifacts_dir: None,
            tool_names: Vec::new(),
            interceptor: defaults::INTERCEPTOR,
            rules: None,
            virtual_terminal: defaults::VIRTUAL_TERMINAL,
            session_key: None,
            update_interval: DEFAULT_UPDATE_INTERVAL,
            shell: None,
            prefix: None,
            engine: EngineChoice::default(),
            snapshot: Snapshot::default(),
            session_env: Vec::new(),
            mask: Mask::default(),
            pty_cols: crate::pty::DEFAULT_COLS,
            pty_rows: crate::pty::DEFAULT_ROWS,
            auto_background_after: None,
            sandbox: None,
        }
    }
}

impl Default for BashToolConfig {
    fn default() -> Self {
        BashToolConfig::new(defaults::TOOL_CWD)
    }
}
