//! `conch run`: one command through the model's `bash` tool, printing what
//! the model would read and exiting with the command's status (124 on
//! timeout, 130 on abort or Ctrl-C, 1 when it could not run).

use std::path::PathBuf;

use conch_core::CancelToken;
use conch_core::registry;
use conch_core::tool::{
    BashTool, BashToolArgs, BashToolConfig, ToolContext, ToolError, load_interceptor_config,
};

use crate::args::{Mode, parse};
use crate::interrupt::cancel_on_interrupt;
use crate::paths::default_artifacts_dir;
use crate::print_line;

pub const USAGE: &str = "\
conch run [--cwd DIR] [--timeout SECS] [--head N] [--tail N] [--pty] [--json]
          [--artifacts DIR] [--tools a,b] [--interceptor FILE] -- COMMAND

Runs COMMAND as the model's bash tool would and prints what the model reads.
  --cwd DIR           directory to run in (relative to the current one)
  --timeout SECS      deadline, clamped to 1..3600 (default 300)
  --head N, --tail N  keep the first / last N lines of the whole output
  --pty               run on a pseudo-terminal (unless CONCH_NO_PTY=1)
  --json              print the engine's result as JSON instead
  --artifacts DIR     where full outputs are spilled (default: see `conch artifact`)
  --tools a,b         the host's tools: turns the interceptor on for them
  --interceptor FILE  interceptor configuration (JSON: {enabled, rules})
Exit status: the command's; 124 on timeout; 130 on abort; 1 if it could not run.";

pub fn main(args: impl Iterator<Item = String>) -> Result<i32, String> {
    let p = parse(
        args,
        &[
            "cwd",
            "timeout",
            "head",
            "tail",
            "artifacts",
            "tools",
            "interceptor",
        ],
        &["pty", "json"],
        Mode::Leading,
    )?;
    let command = p
        .command()
        .ok_or("missing COMMAND (conch run [options] -- COMMAND)")?;
    let host_cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
    let mut config = BashToolConfig::new(host_cwd);
    config.artifacts_dir = Some(
        p.text("artifacts")
            .map(PathBuf::from)
            .unwrap_or_else(default_artifacts_dir),
    );
    if let Some(tools) = p.text("tools") {
        config.tool_names = tools
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(String::from)
            .collect();
        config.interceptor = true;
    }
    if let Some(file) = p.text("interceptor") {
        let interceptor = load_interceptor_config(file).map_err(|e| e.to_string())?;
        config.interceptor = interceptor.enabled;
        config.rules = interceptor.rules;
    }
    config.virtual_terminal = p.flag("pty");
    let tool = BashTool::new(config).map_err(|e| e.to_string())?;

    let cancel = CancelToken::new();
    cancel_on_interrupt(cancel.clone()).map_err(|e| format!("cannot watch for Ctrl-C: {e}"))?;
    let run = tool.run(
        BashToolArgs {
            command,
            cwd: p.text("cwd").map(String::from),
            timeout: p.value("timeout")?,
            head: p.value("head")?,
            tail: p.value("tail")?,
        },
        ToolContext {
            on_update: None,
            cancel: Some(cancel),
            has_ui: p.flag("pty"),
        },
    );
    if p.flag("json") {
        let json = match (&run.bash, &run.outcome) {
            (Some(result), _) => serde_json::to_string(result),
            (
                None,
                Err(ToolError::Blocked {
                    message,
                    suggested_tool,
                }),
            ) => serde_json::to_string(
                &serde_json::json!({ "error": message, "suggestedTool": suggested_tool }),
            ),
            (None, Err(e)) => serde_json::to_string(&serde_json::json!({ "error": e.message() })),
            (None, Ok(r)) => serde_json::to_string(&serde_json::json!({ "text": r.text })),
        };
        print_line(&json.map_err(|e| e.to_string())?);
    } else {
        match &run.outcome {
            Ok(result) => print_line(&result.text),
            Err(error) => print_line(error.message()),
        }
    }
    registry::close_all();
    Ok(run.exit_status())
}
