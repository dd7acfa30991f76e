//! `conch mcp`: the model's `bash` and `job` tools served over MCP on
//! stdio, for any MCP client (coding agents, desktop apps) to attach with
//! one line of configuration.
//!
//! The tools are the core's, as every face has them: `tools/list` gives
//! their definitions ([`conch_core::tool::ToolDefinition`]), `tools/call`
//! reads the arguments with the core's own parsing and runs `execute`; a
//! failure is an `isError` result carrying the text the tool gives. See
//! [`server`] for progress, cancellation and the `artifact://` resources.
//!
//! stdout is the protocol: nothing else is ever written to it (commands
//! write to conch's pipes, never to the server's stdio). When the client
//! goes away (stdin ends) or the server is told to stop (SIGTERM, SIGHUP,
//! SIGINT), every command and job the tools started is killed before it
//! exits, within [`STOP_GRACE`] of the signal even when the client no
//! longer reads.

mod server;
mod transport;
mod turns;

use std::path::PathBuf;

use conch_core::registry;
use conch_core::tool::{BashTool, BashToolConfig, JobTool};
use rmcp::ServiceExt;

use crate::args::HELP;
use crate::engine_flag::EngineFlag;
use crate::sandbox_flags::SandboxFlags;
use crate::tool_flags::ToolFlags;

/// Serve the bash and job tools over MCP on stdin/stdout
#[derive(clap::Args)]
#[command(
    override_usage = "conch mcp [--cwd DIR] [--artifacts DIR] [--tools a,b] [--interceptor FILE] \
                      [--engine auto|builtin|eval] [sandbox options]",
    help_template = HELP,
    after_help = "Client configuration, e.g.: {\"mcpServers\": {\"conch\": {\"command\": \"conch\", \
                  \"args\": [\"mcp\", \"--cwd\", \"/path/to/project\"]}}}"
)]
pub struct Args {
    /// the project directory: commands run there (default: the current one)
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    cwd: Option<PathBuf>,
    #[command(flatten)]
    tool: ToolFlags,
    #[command(flatten)]
    engine: EngineFlag,
    #[command(flatten)]
    sandbox: SandboxFlags,
}

pub fn main(p: Args) -> Result<i32, String> {
    let host_cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
    let mut config = BashToolConfig::new(match p.cwd {
        Some(dir) => host_cwd.join(dir),
        None => host_cwd,
    });
    if !config.cwd.is_dir() {
        return Err(format!(
            "--cwd is not a directory: {}",
            config.cwd.display()
        ));
    }
    p.tool.apply(&mut config)?;
    config.sandbox = p.sandbox.policy()?;
    config.engine = p.engine.choice();
    // Progress notifications need no more than a few a second.
    config.update_interval = server::UPDATE_INTERVAL;
    let bash = BashTool::new(config).map_err(|e| e.to_string())?;
    let job = JobTool::new(&bash);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let outcome = runtime.block_on(async move {
        let service = server::Conch::new(bash, job)
            .serve(transport::LineTransport::new(
                tokio::io::stdin(),
                tokio::io::stdout(),
            ))
            .await
            .map_err(|e| format!("MCP handshake failed: {e}"))?;
        let stop = service.cancellation_token();
        let stopped = std::sync::Arc::new(tokio::sync::Notify::new());
        tokio::spawn({
            let stopped = stopped.clone();
            async move {
                crate::interrupt::stop_signal().await;
                stop.cancel();
                stopped.notify_one();
            }
        });
        // A stopped server whose client no longer reads could wait for
        // ever to write its last replies: it gives them `STOP_GRACE`.
        tokio::select! {
            ended = service.waiting() => ended
                .map(drop)
                .map_err(|e| format!("MCP server failed: {e}")),
            () = async {
                stopped.notified().await;
                tokio::time::sleep(STOP_GRACE).await;
            } => Ok(()),
        }
    });
    // Not waiting for the runtime's threads: its stdin reader may be
    // blocked in a read that only the client can end.
    runtime.shutdown_background();
    // Whatever ended the server, nothing it started outlives it.
    registry::close_all();
    outcome.map(|()| 0)
}

/// How long a stopped server waits to write what was in flight.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
