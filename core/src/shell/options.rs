//! Options of the shell engine, owned and plain so every binding can build
//! them. Defaults come from [`crate::defaults`]; the values a face receives
//! as text or numbers are checked by [`crate::input`].

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::CancelToken;
use crate::artifact::{ArtifactSlot, ArtifactStore};
use crate::defaults;
use crate::error::{BadValue, Result};
use crate::jobs::JobExitHook;
use crate::output::Mask;
use crate::process::env::EnvPolicy;
use crate::process::sandbox::Sandbox;
use crate::process::tree::Escalation;
use crate::wire::{self, read, shape};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::output::carriage::CarriageReturn;
use crate::shell::engine::EngineChoice;

/// Which rc snapshot a session sources at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Snapshot {
    /// None: a clean bash.
    None,
    /// The user's `~/.bashrc`, captured once per shell and rc version.
    Auto,
    /// A snapshot file made elsewhere.
    Path(PathBuf),
}

impl Default for Snapshot {
    fn default() -> Self {
        defaults::SNAPSHOT
            .parse()
            .expect("the default snapshot parses")
    }
}

/// `"auto"`, `"none"`, or the path of a snapshot file. An empty path is
/// refused: it is a mistake (an unset variable), not a file.
impl FromStr for Snapshot {
    type Err = BadValue;

    fn from_str(text: &str) -> Result<Self, BadValue> {
        match text {
            "auto" => Ok(Snapshot::Auto),
            "none" => Ok(Snapshot::None),
            "" => Err(BadValue::new(
                r#""auto", "none" or the path of a snapshot file"#,
                format_args!("{text:?}"),
            )),
            path => Ok(Snapshot::Path(PathBuf::from(path))),
        }
    }
}

/// How a [`super::Shell`] is created. On the wire (see [`crate::wire`])
/// the session's variables are `env` and the store `artifacts_dir`; the
/// kill ladder and the job exit hook are set by the host only.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ShellOptions {
    /// bash to run; `None`: `bash` from `PATH`.
    pub shell: Option<PathBuf>,
    /// Starting directory; `None`: the host's cwd.
    pub cwd: Option<PathBuf>,
    /// Variables exported in the session (after the policy and defaults).
    #[serde(rename = "env", deserialize_with = "read::env")]
    #[schemars(schema_with = "shape::env")]
    pub session_env: Vec<(String, String)>,
    /// Which values of the variables given to the session (its `env`, a
    /// run's and a job's) are replaced by `[masked: NAME]` in everything
    /// it returns (see [`crate::output::mask`]): `true`, those of names
    /// that look secret (containing `TOKEN`, `SECRET`, `PASSWORD`,
    /// `API_KEY` or `ACCESS_KEY`, in any case); `false`, none; a list of
    /// names, those and these. Values under 8 bytes are never masked.
    pub mask: Mask,
    /// How the output shows carriage returns and backspaces: `"terminal"`
    /// (a redrawn line is its last frame, as a terminal shows it) or
    /// `"newline"` (every `\r` a line break). The artifact keeps every
    /// frame either way.
    pub carriage_return: CarriageReturn,
    /// The rc snapshot sourced at start: `"auto"` (the user's), `"none"`,
    /// or the path of a snapshot file.
    #[serde(deserialize_with = "read::snapshot")]
    #[schemars(schema_with = "shape::snapshot")]
    pub snapshot: Snapshot,
    /// Which loop runs the commands inside bash (see
    /// [`crate::shell::engine`]): `"auto"` (the loop builtin where bash
    /// loads it, else the eval loop; `CONCH_ENGINE` decides when set),
    /// `"builtin"` (no session without it) or `"eval"`.
    pub engine: EngineChoice,
    /// Prepended to every command: `<prefix> <command>`.
    pub prefix: Option<String>,
    /// Apply [`crate::process::env::NON_INTERACTIVE_ENV`].
    pub non_interactive_env: bool,
    /// Which host variables reach the shell.
    pub env_policy: EnvPolicy,
    /// Bytes of output kept in memory per run.
    #[serde(deserialize_with = "read::max_bytes")]
    #[schemars(schema_with = "shape::positive")]
    pub max_bytes: usize,
    /// Where full outputs are spilled; `None`: no artifacts. The default
    /// is the process's private directory
    /// ([`ArtifactStore::process_default`]).
    #[serde(rename = "artifacts_dir", deserialize_with = "read::artifacts_dir")]
    #[schemars(schema_with = "shape::optional_string")]
    pub artifacts: Option<ArtifactStore>,
    /// Grace between the signals of the kill escalation.
    #[serde(skip)]
    pub kill_ladder: Escalation,
    /// Jobs the session runs at once, at most (see [`crate::Shell::start`]).
    #[serde(deserialize_with = "read::max_jobs")]
    #[schemars(schema_with = "shape::optional_count")]
    pub max_jobs: usize,
    /// Bytes one job's artifact takes, at most.
    #[serde(deserialize_with = "read::job_artifact_cap")]
    #[schemars(schema_with = "shape::optional_count")]
    pub job_artifact_cap: u64,
    /// Told of every job's end.
    #[serde(skip)]
    pub on_job_exit: Option<JobExitHook>,
    /// The sandbox around everything the session runs; `None`: none. On the wire, `true` is
    /// the strict default policy and `false` none.
    #[serde(deserialize_with = "read::sandbox")]
    #[schemars(schema_with = "shape::sandbox")]
    pub sandbox: Option<Sandbox>,
}

impl Default for ShellOptions {
    fn default() -> Self {
        ShellOptions {
            shell: None,
            cwd: None,
            session_env: Vec::new(),
            mask: Mask::default(),
            carriage_return: CarriageReturn::default(),
            snapshot: Snapshot::default(),
            engine: EngineChoice::default(),
            prefix: None,
            non_interactive_env: defaults::NON_INTERACTIVE_ENV,
            env_policy: EnvPolicy::default(),
            max_bytes: defaults::MAX_BYTES,
            artifacts: Some(ArtifactStore::process_default()),
            kill_ladder: Escalation::default(),
            max_jobs: defaults::MAX_JOBS,
            job_artifact_cap: defaults::JOB_ARTIFACT_CAP,
            on_job_exit: None,
            sandbox: None,
        }
    }
}

/// One command to run. On the wire (see [`crate::wire`]) the line limits
/// are `head` and `tail`; the cancel token and the artifact are set by the
/// host only.
// Serialized in the form it is read from: a remote client sends it so.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct RunOptions {
    /// The bash command.
    pub command: String,
    /// Directory for this run only, resolved against the session cwd.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Variables for this run only.
    #[serde(
        default,
        deserialize_with = "read::env",
        serialize_with = "wire::env_map"
    )]
    #[schemars(schema_with = "shape::env")]
    pub env: Vec<(String, String)>,
    /// The deadline, from the command's start; `None`: none.
    #[serde(
        default,
        deserialize_with = "read::timeout",
        serialize_with = "wire::optional_secs"
    )]
    #[schemars(schema_with = "shape::optional_seconds")]
    pub timeout: Option<Duration>,
    /// Cancels the run from any thread.
    #[serde(skip)]
    pub cancel: Option<CancelToken>,
    /// Keep only the first N lines of the whole stream (and stop the command
    /// once they are complete, as `| head -n N` would).
    #[serde(default, rename = "head", deserialize_with = "read::head")]
    #[schemars(schema_with = "shape::optional_count")]
    pub head_lines: Option<usize>,
    /// Keep only the last N lines (after `head_lines`).
    #[serde(default, rename = "tail", deserialize_with = "read::tail")]
    #[schemars(schema_with = "shape::optional_count")]
    pub tail_lines: Option<usize>,
    /// Where the whole output goes if it spills: an artifact the caller
    /// reserved, or a store's next id; otherwise the shell's store's next
    /// id, if it has a store. Either way a store's id is reserved only
    /// when the output spills.
    #[serde(skip)]
    pub artifact: Option<ArtifactSlot>,
    /// When the command still runs this long after it started, the run
    /// returns with its output so far and the command goes on as a job
    /// ([`crate::BashResult::backgrounded`]); the session goes on with
    /// the state it had before the command. `None`: the run waits for the
    /// command (or its timeout). With the session's jobs at their limit
    /// the command stays in the foreground.
    #[serde(
        default,
        deserialize_with = "read::yield_after",
        serialize_with = "wire::optional_secs"
    )]
    #[schemars(schema_with = "shape::optional_seconds")]
    pub yield_after: Option<Duration>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::parse_option;

    #[test]
    fn snapshots_read_as_on_every_face() {
        let parse = |text: &str| parse_option::<Snapshot>("snapshot", text);
        assert_eq!(parse("auto").unwrap(), Snapshot::Auto);
        assert_eq!(parse("none").unwrap(), Snapshot::None);
        assert_eq!(parse("rc.sh").unwrap(), Snapshot::Path("rc.sh".into()));
        assert_eq!(
            parse("").unwrap_err().to_string(),
            r#"snapshot must be "auto", "none" or the path of a snapshot file, got """#
        );
        assert_eq!(Snapshot::default(), Snapshot::Auto);
    }

    /// A remote client sends run options serialized; the server reads them
    /// back as the same options.
    #[test]
    fn run_options_read_back_what_they_serialize_to() {
        let opts = RunOptions {
            command: "make test".into(),
            cwd: Some("sub/dir".into()),
            env: vec![("A".into(), "1".into()), ("B".into(), "2".into())],
            timeout: Some(Duration::from_millis(1500)),
            head_lines: Some(3),
            tail_lines: Some(0),
            yield_after: Some(Duration::from_secs(2)),
            ..RunOptions::default()
        };
        let value = serde_json::to_value(&opts).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"command": "make test", "cwd": "sub/dir",
                               "env": {"A": "1", "B": "2"}, "timeout": 1.5,
                               "head": 3, "tail": 0, "yield_after": 2.0})
        );
        let back: RunOptions = serde_json::from_value(value).unwrap();
        assert_eq!(
            (back.command, back.cwd, back.env, back.timeout),
            (opts.command, opts.cwd, opts.env, opts.timeout)
        );
        assert_eq!(
            (back.head_lines, back.tail_lines, back.yield_after),
            (opts.head_lines, opts.tail_lines, opts.yield_after)
        );
        let none: RunOptions =
            serde_json::from_value(serde_json::to_value(RunOptions::new("true")).unwrap()).unwrap();
        assert_eq!(
            (none.timeout, none.head_lines, none.env.len()),
            (None, None, 0)
        );
    }
}
