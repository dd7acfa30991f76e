//! `conch`: the command-line face of conch. Every subcommand only
//! translates its arguments into conch-core calls.

mod args;
mod artifact;
mod engine_flag;
mod interrupt;
mod mcp;
mod paths;
mod pty;
mod requests;
mod rpc;
mod run;
mod sandbox_flags;
mod serve;
mod tool_flags;

use clap::{CommandFactory, Parser, Subcommand};

/// conch — the bash tool runtime for AI coding agents
#[derive(Parser)]
#[command(
    name = "conch",
    version,
    arg_required_else_help = true,
    args_override_self = true,
    after_help = "`conch help COMMAND` (or `conch COMMAND --help`) describes a command."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Run(run::Args),
    Rpc(rpc::Args),
    Artifact(artifact::Args),
    Pty(pty::Args),
    Mcp(mcp::Args),
    Serve(serve::Args),
    /// Print the version (as `conch --version`)
    #[command(hide = true)]
    Version,
    /// Perform one file request of `conch serve` (JSON on stdin, the answer
    /// on stdout): the server runs it so inside a session's sandbox
    #[command(hide = true, name = conch_remote::files::HELPER_ARG)]
    FilesHelper,
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => std::process::exit(args::report(&error, Cli::command())),
    };
    let outcome = match cli.command {
        Command::Run(a) => run::main(a),
        Command::Rpc(a) => rpc::main(a),
        Command::Artifact(a) => artifact::main(a),
        Command::Pty(a) => pty::main(a),
        Command::Mcp(a) => mcp::main(a),
        Command::Serve(a) => serve::main(a),
        Command::FilesHelper => Ok(conch_remote::files::confined::helper_main()),
        Command::Version => {
            print_line(&format!("conch {}", env!("CARGO_PKG_VERSION")));
            Ok(0)
        }
    };
    let code = match outcome {
        Ok(code) => code,
        Err(message) => {
            eprint_line(&format!("{}: {message}", args::prefix(&Cli::command())));
            2
        }
    };
    std::process::exit(code);
}

/// Prints `text` and a newline to stdout; a closed stdout (`conch … | head`)
/// is not an error.
pub fn print_line(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
}

/// Prints `text` and a newline to stderr; a closed stderr is not an error
/// (`eprintln!` would panic on it).
pub fn eprint_line(text: &str) {
    eprint_text(&format!("{text}\n"));
}

/// Prints `text` as is to stderr, ignoring a closed stderr.
pub fn eprint_text(text: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}
