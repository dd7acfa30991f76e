//! conch's benchmarks from Rust: conch-core's `Shell` driven directly (with
//! the loop builtin, and with the eval loop), next to
//! `std::process::Command` spawning `bash -c` per command (what a Rust
//! host would otherwise write). Prints one JSON record per line (see
//! `record.rs`); `bench/report.py` turns every harness's records into the
//! table.
//!
//! Usage:
//!   conch-bench suite           every scenario except the flood
//!   conch-bench flood RUNTIME   peak RSS during the flood, in this fresh
//!                               process (RUNTIME: conch | conch-eval | std)
//!   conch-bench loop N COMMAND [RUNTIME]
//!                               N runs of COMMAND through conch alone
//!                               (RUNTIME: conch, the default, or
//!                               conch-eval), to profile (`perf record`,
//!                               `strace -c`)
//!
//! Settings come from the environment (see `config.rs`); `bench/run.sh`
//! sets them.

mod config;
mod record;
mod runtime;
mod scenario;

use std::process::ExitCode;

use config::Config;
use record::Record;

/// Whether `name` is one of the conch runtimes.
fn is_conch(name: &str) -> bool {
    runtime::CONCH_ENGINES.iter().any(|(n, ..)| *n == name)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["suite"] => {
            scenario::suite(&Config::from_env());
            ExitCode::SUCCESS
        }
        ["flood", runtime] if runtime == "std" || is_conch(runtime) => {
            scenario::flood(&Config::from_env(), runtime);
            ExitCode::SUCCESS
        }
        ["flood", other] => {
            Record::unavailable("flood_rss", other, "unknown runtime").print();
            ExitCode::FAILURE
        }
        ["loop", n, command] => run_loop("conch", n, command),
        ["loop", n, command, name] => run_loop(name, n, command),
        _ => {
            eprintln!(
                "usage: conch-bench suite | flood conch|conch-eval|std | loop N COMMAND [conch|conch-eval]"
            );
            ExitCode::FAILURE
        }
    }
}

/// `conch-bench loop N COMMAND [RUNTIME]`.
fn run_loop(name: &str, n: &str, command: &str) -> ExitCode {
    if !is_conch(name) {
        eprintln!("loop: no conch runtime named {name}");
        return ExitCode::FAILURE;
    }
    match n.parse() {
        Ok(n) => {
            scenario::run_loop(name, n, command);
            ExitCode::SUCCESS
        }
        Err(_) => {
            eprintln!("loop: N must be a number");
            ExitCode::FAILURE
        }
    }
}
