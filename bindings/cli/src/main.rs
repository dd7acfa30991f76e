//! `conch`: the command-line face of conch. Every subcommand only
//! translates its arguments into conch-core calls.

mod args;
mod artifact;
mod interrupt;
mod paths;
mod pty;
mod rpc;
mod run;

const USAGE: &str = "\
conch — the bash tool runtime for AI coding agents

Usage:
  conch run [options] -- COMMAND    run COMMAND as the model's bash tool would
  conch rpc [options]               serve bash over JSON lines on stdin/stdout
  conch artifact ID [options]       print a spilled full output (artifact://ID)
  conch pty [options] -- COMMAND    run COMMAND on a pseudo-terminal
  conch --version

`conch help COMMAND` (or `conch COMMAND --help`) describes a command.";

fn main() {
    let mut args = std::env::args().skip(1);
    let command = args.next();
    let rest: Vec<String> = args.collect();
    if rest.first().is_some_and(|a| a == "--help" || a == "-h") {
        return print_usage(command.as_deref());
    }
    let outcome = match command.as_deref() {
        Some("run") => run::main(rest.into_iter()),
        Some("rpc") => rpc::main(rest.into_iter()),
        Some("artifact") => artifact::main(rest.into_iter()),
        Some("pty") => pty::main(rest.into_iter()),
        Some("--version" | "-V" | "version") => {
            print_line(&format!("conch {}", env!("CARGO_PKG_VERSION")));
            Ok(0)
        }
        Some("help" | "--help" | "-h") => return print_usage(rest.first().map(String::as_str)),
        None => {
            eprintln!("{USAGE}");
            Ok(2)
        }
        Some(other) => {
            eprintln!("conch: unknown command `{other}`\n\n{USAGE}");
            Ok(2)
        }
    };
    let code = match outcome {
        Ok(code) => code,
        Err(message) => {
            let name = command.unwrap_or_default();
            eprintln!("conch {name}: {message}");
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

fn print_usage(command: Option<&str>) {
    let text = match command {
        Some("run") => run::USAGE,
        Some("rpc") => rpc::USAGE,
        Some("artifact") => artifact::USAGE,
        Some("pty") => pty::USAGE,
        _ => USAGE,
    };
    print_line(text);
}
