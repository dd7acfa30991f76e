//! conch-core: the whole engine of conch, the bash tool runtime for AI coding agents.
//!
//! A model's shell command runs in a persistent real bash ([`shell`]) or on a
//! pseudo-terminal ([`pty`]); its output is sanitized and bounded ([`output`]),
//! spilled in full to an artifact ([`artifact`]), and shaped into what the
//! model reads ([`tool`]). Every process it starts is contained and killed as a
//! tree ([`process`]). Bindings (C, Python, Node, CLI) only translate types.

pub mod artifact;
pub mod cancel;
pub mod command;
pub(crate) mod cwd;
pub mod defaults;
pub mod error;
pub mod input;
pub mod jobs;
pub mod output;
pub(crate) mod private_dir;
pub mod process;
pub(crate) mod protocol;
pub mod pty;
pub(crate) mod run_result;
pub mod shell;
pub mod sync;
pub mod tool;
pub mod wire;

pub use artifact::{Artifact, ArtifactSlot, ArtifactStore};
pub use cancel::CancelToken;
pub use command::intercept;
pub use command::normalize::{NormalizedCommand, apply_head_tail, normalize_bash_command};
pub use error::{BadValue, Error, Result};
pub use jobs::{JobExitHook, JobId, JobInfo, JobOptions, JobPoll, JobStatus, PollOptions};
pub use output::{
    Mask, Masker, OutputSink, OutputSummary, Sanitizer, SinkOptions, TailBuffer, sanitize_text,
};
pub use process::sandbox::{
    DomainPolicy, Limits, Network, ProgramOutput, ProgramSandbox, Sandbox, SandboxApplied,
    SandboxOption,
};
pub use pty::{PtyOptions, PtyResult, PtySession};
pub use shell::registry;
pub use shell::{
    BashResult, Engine, EngineChoice, ExecuteOptions, Place, Run, RunOptions, Shell, ShellOptions,
    Snapshot, execute_shell,
};
pub use tool::render;
pub use tool::{
    BashSession, BashTool, BashToolArgs, BashToolConfig, Details, JobTool, JobToolArgs, Meta,
    ToolContext, ToolError, ToolResult, ToolUpdate,
};
