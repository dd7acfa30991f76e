//! conch's benchmarks from Rust: conch-core's `Shell` driven directly, next
//! to `std::process::Command` spawning `bash -c` per command (what a Rust
//! host would otherwise write). Prints one JSON record per line (see
//! `record.rs`); `bench/report.py` turns every harness's records into the
//! table.
//!
//! Usage:
//!   conch-bench suite           every scenario except the flood
//!   conch-bench flood RUNTIME   peak RSS during the flood, in this fresh
//!                               process (RUNTIME: conch | std)
//!   conch-bench loop N COMMAND  N runs of COMMAND through conch alone, to
//!                               profile (`perf record`, `strace -c`)
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

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["suite"] => {
            scenario::suite(&Config::from_env());
            ExitCode::SUCCESS
        }
        ["flood", runtime] => match runtime {
            "conch" | "std" => {
                scenario::flood(&Config::from_env(), runtime);
                ExitCode::SUCCESS
            }
            other => {
                Record::unavailable("flood_rss", other, "unknown runtime").print();
                ExitCode::FAILURE
            }
        },
        ["loop", n, command] => match n.parse() {
            Ok(n) => {
                scenario::run_loop(n, command);
                ExitCode::SUCCESS
            }
            Err(_) => {
                eprintln!("loop: N must be a number");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("usage: conch-bench suite | flood conch|std | loop N COMMAND");
            ExitCode::FAILURE
        }
    }
}
