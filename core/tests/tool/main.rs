//! Integration tests of `conch_core::tool` with real processes: `BashTool`
//! (the model's `bash` tool) on its shell and PTY paths, and `BashSession`
//! (the user's `!cmd`). A new test of them goes in a module here:
//!
//! - `bash`: `BashTool` end to end (the result table, error texts, the
//!   interceptor, cwd and timeout rules, updates);
//! - `bash_output`: its artifacts and the head and tail of the complete
//!   stream;
//! - `pty`: `BashTool` on its PTY path;
//! - `bang`: `BashSession`;
//! - `no_terminal`: an editor started through the tool, which has no
//!   terminal (the notice, in the foreground and as a job);
//! - `vectors`: replay of `tests/vectors/tool.json`;
//! - `engine`: the `engine` option, the loop the session runs;
//! - `definition`: the tools' definitions (`tool_definition.json`) and
//!   their schemas against the tools' own argument parsing.
//!
//! The modules run in parallel threads of one process and share the
//! process-wide session registry: a test keeps its state in a session key
//! of its own and closes it, and none clears or counts the registry (that
//! is `shell_registry.rs`, alone). Kept apart, in a binary of its own:
//! `tool_pty_env.rs`, which sets `CONCH_NO_PTY` and `PI_NO_PTY`; the
//! environment is the whole process's, and these variables would turn the
//! PTY path off under every other tool test.

#[path = "../common/mod.rs"]
mod common;

use std::path::PathBuf;

use conch_core::tool::{BashTool, BashToolConfig};

/// A tool whose session and project directory (its config's `cwd`) go away
/// with it.
struct Fixture {
    tool: BashTool,
    dir: PathBuf,
}

impl Fixture {
    fn new(config: BashToolConfig) -> Fixture {
        let dir = config.cwd.clone();
        Fixture {
            tool: BashTool::new(config).unwrap(),
            dir,
        }
    }
}

impl std::ops::Deref for Fixture {
    type Target = BashTool;
    fn deref(&self) -> &BashTool {
        &self.tool
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.tool.close();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

mod bang;
mod bash;
mod bash_output;
mod definition;
mod engine;
mod job_tool;
mod no_terminal;
mod pty;
mod vectors;
