//! The scenarios, each measured for conch and for the std baseline.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use conch_core::{CancelToken, RunOptions};

use crate::config::Config;
use crate::record::Record;
use crate::runtime::{Conch, Runner, StdSpawn};

/// Time between starting `/bin/sleep 100` and aborting it.
const ABORT_AFTER: Duration = Duration::from_millis(300);
const TIMEOUT: Duration = Duration::from_millis(500);
const SESSIONS: usize = 100;
/// What each of the concurrent sessions runs.
const SESSION_COMMANDS: [&str; 4] = ["cd /tmp", "echo $((6 * 7))", "/bin/true", "pwd"];

pub fn suite(cfg: &Config) {
    let mut conch = Conch::start(None);
    let mut std = StdSpawn { cwd: None };

    if cfg.wants("builtin") {
        let reps = cfg.reps((50, 500), (5, 30));
        latency("builtin", "true", &mut conch, "conch", reps);
        latency("builtin", "true", &mut std, "std", reps);
    }
    if cfg.wants("external") {
        let reps = cfg.reps((20, 300), (5, 30));
        latency("external", "/bin/true", &mut conch, "conch", reps);
        latency("external", "/bin/true", &mut std, "std", reps);
    }
    if cfg.wants("sequence") {
        let reps = cfg.reps((1, 10), (1, 3));
        sequence(cfg, &mut conch, "conch", reps);
        let mut std_in_repo = StdSpawn {
            cwd: Some(cfg.repo.clone()),
        };
        sequence(cfg, &mut std_in_repo, "std", reps);
    }
    if cfg.wants("throughput") {
        let reps = cfg.reps((0, 3), (0, 1));
        throughput(cfg, &mut conch, "conch", reps);
        throughput(cfg, &mut std, "std", reps);
    }
    if cfg.wants("abort") {
        let reps = cfg.reps((1, 10), (0, 3));
        abort_conch(&conch, reps);
        abort_std(reps);
    }
    if cfg.wants("timeout") {
        let reps = cfg.reps((0, 5), (0, 2));
        timeout_conch(&mut conch, reps);
        Record::unavailable(
            "timeout",
            "std",
            "std::process has no timeout (a host adds its own timer thread)",
        )
        .print();
    }
    if cfg.wants("concurrent") {
        let reps = cfg.reps((0, 3), (0, 1));
        concurrent(reps, "conch", || Box::new(Conch::start(None)));
        concurrent(reps, "std", || Box::new(StdSpawn { cwd: None }));
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Time per run of one quick command.
fn latency(
    scenario: &str,
    command: &str,
    runner: &mut dyn Runner,
    name: &str,
    (warm, n): (usize, usize),
) {
    let mut samples = Vec::with_capacity(n);
    let mut failures = 0;
    for i in 0..warm + n {
        let start = Instant::now();
        let code = runner.run(command, &mut |_| {});
        let took = start.elapsed();
        failures += usize::from(code != Some(0));
        if i >= warm {
            samples.push(micros(took));
        }
    }
    let mut rec = Record::samples(scenario, name, "us", &samples);
    if failures > 0 {
        rec = rec.note(format!("{failures} runs did not exit 0"));
    }
    rec.print();
}

/// Time for the 20 commands of the agent-like sequence; every one must exit 0.
fn sequence(cfg: &Config, runner: &mut dyn Runner, name: &str, (warm, n): (usize, usize)) {
    let mut samples = Vec::with_capacity(n);
    let mut failed: Vec<String> = Vec::new();
    for i in 0..warm + n {
        let start = Instant::now();
        for command in &cfg.sequence {
            if runner.run(command, &mut |_| {}) != Some(0) && !failed.contains(command) {
                failed.push(command.clone());
            }
        }
        if i >= warm {
            samples.push(millis(start.elapsed()));
        }
    }
    let mut rec = Record::samples("sequence", name, "ms", &samples);
    if !failed.is_empty() {
        rec = rec.note(format!("non-zero exit: {}", failed.join("; ")));
    }
    rec.print();
}

/// MB/s of output delivered to the chunk callback.
fn throughput(cfg: &Config, runner: &mut dyn Runner, name: &str, (warm, n): (usize, usize)) {
    let mut samples = Vec::with_capacity(n);
    let mut short = false;
    for i in 0..warm + n {
        let mut bytes = 0u64;
        let start = Instant::now();
        runner.run(&cfg.throughput_command, &mut |len| bytes += len as u64);
        let secs = start.elapsed().as_secs_f64();
        short |= bytes != cfg.throughput_bytes;
        if i >= warm {
            samples.push(bytes as f64 / secs / 1e6);
        }
    }
    let mut rec = Record::samples("throughput", name, "MB/s", &samples);
    if short {
        rec = rec.note("did not deliver every byte");
    }
    rec.print();
}

/// From `abort()` (another thread) to `run` returning, while `/bin/sleep 100` runs.
fn abort_conch(conch: &Conch, (warm, n): (usize, usize)) {
    let mut samples = Vec::with_capacity(n);
    for i in 0..warm + n {
        // A stop replaces the session: start the new one outside the measure.
        warm_up(conch);
        let shell = conch.0.clone();
        let runner = thread::spawn(move || {
            let result = shell.run(RunOptions::new("/bin/sleep 100"), |_| {});
            (Instant::now(), result.expect("conch run"))
        });
        thread::sleep(ABORT_AFTER);
        let start = Instant::now();
        conch.0.abort();
        let (ended, result) = runner.join().expect("runner thread");
        assert!(result.cancelled, "abort did not cancel the run");
        if i >= warm {
            samples.push(millis(ended - start));
        }
    }
    Record::samples("abort", "conch", "ms", &samples).print();
}

/// From `kill()` to `wait()` returning: SIGKILL of the one child.
fn abort_std((warm, n): (usize, usize)) {
    let std = StdSpawn { cwd: None };
    let mut samples = Vec::with_capacity(n);
    for i in 0..warm + n {
        let (mut cmd, _reader) = std.command("/bin/sleep 100");
        let mut child = cmd.spawn().expect("spawn bash");
        thread::sleep(ABORT_AFTER);
        let start = Instant::now();
        child.kill().expect("kill");
        child.wait().expect("wait");
        if i >= warm {
            samples.push(millis(start.elapsed()));
        }
    }
    Record::samples("abort", "std", "ms", &samples)
        .note("SIGKILL to bash only: a child that bash forked would survive")
        .print();
}

/// One quick run, so that a session replaced by the previous stop is
/// started again before the next measurement.
fn warm_up(conch: &Conch) {
    conch
        .0
        .run(RunOptions::new("true"), |_| {})
        .expect("conch run");
}

/// Elapsed minus the timeout, for `/bin/sleep 10` with a 500 ms timeout.
fn timeout_conch(conch: &mut Conch, (warm, n): (usize, usize)) {
    let mut samples = Vec::with_capacity(n);
    for i in 0..warm + n {
        warm_up(conch);
        let start = Instant::now();
        let result = conch
            .0
            .run(
                RunOptions {
                    timeout: Some(TIMEOUT),
                    cancel: Some(CancelToken::new()),
                    ..RunOptions::new("/bin/sleep 10")
                },
                |_| {},
            )
            .expect("conch run");
        assert!(result.timed_out, "the run did not time out");
        if i >= warm {
            samples.push(millis(start.elapsed() - TIMEOUT));
        }
    }
    Record::samples("timeout", "conch", "ms", &samples).print();
}

/// Total time for 100 sessions at once, each started afresh and running
/// [`SESSION_COMMANDS`], one thread per session.
fn concurrent(
    (warm, n): (usize, usize),
    name: &str,
    start_session: impl Fn() -> Box<dyn Runner> + Send + Sync + 'static,
) {
    let start_session = Arc::new(start_session);
    let mut samples = Vec::with_capacity(n);
    let mut failures = 0;
    for i in 0..warm + n {
        let start = Instant::now();
        let threads: Vec<_> = (0..SESSIONS)
            .map(|_| {
                let start_session = start_session.clone();
                thread::spawn(move || {
                    let mut session = start_session();
                    SESSION_COMMANDS
                        .iter()
                        .filter(|c| session.run(c, &mut |_| {}) != Some(0))
                        .count()
                })
            })
            .collect();
        for t in threads {
            failures += t.join().expect("session thread");
        }
        if i >= warm {
            samples.push(millis(start.elapsed()));
        }
    }
    let mut rec = Record::samples("concurrent", name, "ms", &samples);
    if failures > 0 {
        rec = rec.note(format!("{failures} commands did not exit 0"));
    }
    rec.print();
}

/// Peak RSS growth of this process while the flood goes through `runtime`.
pub fn flood(cfg: &Config, runtime: &str) {
    let mut runner: Box<dyn Runner> = match runtime {
        "conch" => Box::new(Conch::start(None)),
        _ => Box::new(StdSpawn { cwd: None }),
    };
    runner.run("true", &mut |_| {});
    let before = peak_rss_kib();
    let mut bytes = 0u64;
    runner.run(&cfg.flood_command, &mut |len| bytes += len as u64);
    let grown = (peak_rss_kib() - before) as f64 / 1024.0;
    let mut rec = Record::samples("flood_rss", runtime, "MiB", &[grown]);
    if bytes != cfg.flood_bytes {
        rec = rec.note(format!("delivered {bytes} of {} bytes", cfg.flood_bytes));
    }
    rec.print();
}

/// `VmHWM` of this process, in KiB.
fn peak_rss_kib() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// `n` runs of `command` through conch alone; prints the median in µs.
pub fn run_loop(n: usize, command: &str) {
    let mut conch = Conch::start(None);
    let mut samples: Vec<f64> = (0..n)
        .map(|_| {
            let start = Instant::now();
            conch.run(command, &mut |_| {});
            micros(start.elapsed())
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    if let Some(median) = samples.get(n / 2) {
        eprintln!("{n} runs of {command:?}: median {median:.1} us");
    }
}
