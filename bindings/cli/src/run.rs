//! `conch run`: one command through the model's `bash` tool, printing what
//! the model would read and exiting with the command's status (124 on
//! timeout, 130 on abort or Ctrl-C, 1 when it could not run).

use std::ffi::OsString;
use std::path::PathBuf;

use conch_core::CancelToken;
use conch_core::registry;
use conch_core::tool::{BashTool, BashToolArgs, BashToolConfig, ToolContext, ToolError};

use crate::args::{self, HELP, command};
use crate::interrupt::cancel_on_interrupt;
use crate::print_line;
use crate::sandbox_flags::SandboxFlags;
use crate::tool_flags::ToolFlags;

/// Run COMMAND as the model's bash tool would and print what the model reads
#[derive(clap::Args)]
#[command(
    override_usage = "\
conch run [--cwd DIR] [--timeout SECS] [--head N] [--tail N] [--pty] [--json]
          [--artifacts DIR] [--tools a,b] [--interceptor FILE] [sandbox options] -- COMMAND",
    help_template = HELP,
    after_help = "Exit status: the command's; 124 on timeout; 130 on abort; 1 if it could not run."
)]
pub struct Args {
    /// directory to run in (relative to the current one)
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    cwd: Option<PathBuf>,
    /// deadline, clamped to 1..3600 (default 300)
    #[arg(long, value_name = "SECS", allow_hyphen_values = true)]
    timeout: Option<f64>,
    /// keep the first N lines of the whole output
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    head: Option<f64>,
    /// keep the last N lines of the whole output
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    tail: Option<f64>,
    /// run on a pseudo-terminal (unless CONCH_NO_PTY=1)
    #[arg(long)]
    pty: bool,
    /// print the engine's result as JSON instead
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    tool: ToolFlags,
    #[command(flatten)]
    sandbox: SandboxFlags,
    /// the command; several words are joined by spaces
    #[arg(value_name = "COMMAND", trailing_var_arg = true)]
    command: Vec<OsString>,
}

pub fn main(p: Args) -> Result<i32, String> {
    let command = command(&p.command)?.ok_or("missing COMMAND (conch run [options] -- COMMAND)")?;
    // The tool resolves the cwd (`~`, relative to the project) from text.
    let cwd = p.cwd.map(|cwd| args::text("--cwd", cwd)).transpose()?;
    let timeout = args::timeout("--timeout", p.timeout)?;
    let head = args::count("--head", p.head)?;
    let tail = args::count("--tail", p.tail)?;
    let host_cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
    let mut config = BashToolConfig::new(host_cwd);
    p.tool.apply(&mut config)?;
    config.sandbox = p.sandbox.policy()?;
    config.virtual_terminal = p.pty;
    let tool = BashTool::new(config).map_err(|e| e.to_string())?;

    let cancel = CancelToken::new();
    cancel_on_interrupt(cancel.clone()).map_err(|e| format!("cannot watch for Ctrl-C: {e}"))?;
    let run = tool.run(
        BashToolArgs {
            command,
            cwd,
            timeout,
            head,
            tail,
            ..BashToolArgs::default()
        },
        ToolContext {
            on_update: None,
            cancel: Some(cancel),
            has_ui: p.pty,
        },
    );
    if p.json {
        let json = match (&run.bash, &run.outcome) {
            (Some(result), _) => {
                serde_json::to_string(&conch_core::wire::camel_case(serde_json::json!(result)))
            }
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::{Cli, Command};

    fn parse(line: &str) -> super::Args {
        let cli = Cli::try_parse_from(std::iter::once("conch").chain(line.split(' ')));
        match cli.map(|cli| cli.command) {
            Ok(Command::Run(args)) => args,
            _ => panic!("{line:?} is not a valid `conch run`"),
        }
    }

    #[test]
    fn options_end_at_the_first_word_or_double_dash() {
        let p = parse("run --cwd /tmp --json ls -la --x");
        assert_eq!(p.cwd, Some("/tmp".into()));
        assert!(p.json && !p.pty);
        assert_eq!(p.command, ["ls", "-la", "--x"]);
        let p = parse("run --timeout=5 -- --weird");
        assert_eq!(p.timeout, Some(5.0));
        assert_eq!(p.command, ["--weird"]);
        // A value is the next argument, whatever it looks like; the last
        // of a repeated option wins.
        let p = parse("run --timeout -5 --cwd --json --cwd=b --head 3 true");
        assert_eq!(p.timeout, Some(-5.0));
        assert_eq!(p.cwd, Some("b".into()));
        assert_eq!((p.head, p.json), (Some(3.0), false));
        assert_eq!(p.command, ["true"]);
    }
}
