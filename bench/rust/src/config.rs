//! Settings shared by every harness, read from the environment so that the
//! Rust, Node and Python harnesses of one run measure the same things.

use std::path::PathBuf;

/// Repetitions and sizes of one run.
pub struct Config {
    /// The generated git repository the agent-like sequence works in.
    pub repo: PathBuf,
    /// The 20 commands of the sequence (`@REPO@` replaced by `repo`).
    pub sequence: Vec<String>,
    /// `BENCH_QUICK=1`: few repetitions and small floods, to check the harness.
    pub quick: bool,
    /// The command that prints `throughput_bytes` bytes of text lines.
    pub throughput_command: String,
    pub throughput_bytes: u64,
    /// The same for the memory flood.
    pub flood_command: String,
    pub flood_bytes: u64,
    /// `BENCH_ONLY=builtin,abort`: run only these scenarios (for profiling).
    only: Option<Vec<String>>,
}

impl Config {
    pub fn from_env() -> Config {
        let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1");
        let repo = PathBuf::from(env_or("BENCH_REPO", "/tmp/conch-bench-repo"));
        let sequence_file = env_or("BENCH_SEQUENCE", "bench/sequence.txt");
        let text = std::fs::read_to_string(&sequence_file)
            .unwrap_or_else(|e| panic!("cannot read {sequence_file}: {e}"));
        let repo_text = repo.to_string_lossy().into_owned();
        let sequence = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.replace("@REPO@", &repo_text))
            .collect();
        let bytes = |name: &str| -> u64 {
            env_or(name, "")
                .parse()
                .unwrap_or_else(|_| panic!("{name} must be a byte count"))
        };
        Config {
            repo,
            sequence,
            quick,
            throughput_command: env_or("BENCH_THROUGHPUT_CMD", ""),
            throughput_bytes: bytes("BENCH_THROUGHPUT_BYTES"),
            flood_command: env_or("BENCH_FLOOD_CMD", ""),
            flood_bytes: bytes("BENCH_FLOOD_BYTES"),
            only: std::env::var("BENCH_ONLY")
                .ok()
                .filter(|v| !v.is_empty())
                .map(|v| v.split(',').map(str::to_string).collect()),
        }
    }

    /// Whether `scenario` is to be run.
    pub fn wants(&self, scenario: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|s| s == scenario))
    }

    /// `(warm-up, measured)` repetitions: `full` normally, `quick` with BENCH_QUICK.
    pub fn reps(&self, full: (usize, usize), quick: (usize, usize)) -> (usize, usize) {
        if self.quick { quick } else { full }
    }
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}
