//! The scenarios, each measured for conch (with each of its session loops)
//! and for the std baseline.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use conch_core::{CancelToken, RunOptions};

use crate::config::Config;
use crate::record::Record;
use crate::runtime::{CONCH_ENGINES, Conch, RawPipe, Runner, StdSpawn};

/// Time between starting `/bin/sleep 100` and aborting it.
const ABORT_AFTER: Duration = Duration::from_millis(300);
const TIMEOUT: Duration = Duration::from_millis(500);
const SESSIONS: usize = 100;
/// What each of the concurrent sessions runs.
const SESSION_COMMANDS: [&str; 4] = ["cd /tmp", "echo $((6 * 7))", "/bin/true", "pwd"];
/// Commands per `bash -c` in [`bash_floor`]: bash's own start-up then adds
/// about a microsecond to each.
const FLOOR_LOOP: usize = 1000;

/// One repetition of a scenario for one runtime: its sample, and what went
/// wrong if something did.
type Outcome = (f64, Option<String>);

/// A runtime's name and its trial.
type Trial<'a> = (&'a str, Box<dyn FnMut() -> Outcome + 'a>);

pub fn suite(cfg: &Config) {
    let conchs: Vec<Conch> = CONCH_ENGINES
        .iter()
        .map(|(name, ..)| Conch::start(name))
        .collect();
    let std = StdSpawn { cwd: None };
    let std_in_repo = StdSpawn {
        cwd: Some(cfg.repo.clone()),
    };

    if cfg.wants("builtin") {
        let reps = plan(cfg, (50, 500), (5, 30), 50);
        let mut trials = each_conch(&conchs, |c| latency(c.clone(), "true"));
        trials.push(("std", latency(std.clone(), "true")));
        interleave("builtin", "us", reps, trials, &[]);
    }
    if cfg.wants("external") {
        let reps = plan(cfg, (20, 300), (5, 30), 50);
        let mut trials = each_conch(&conchs, |c| latency(c.clone(), "/bin/true"));
        trials.push(("std", latency(std.clone(), "/bin/true")));
        interleave("external", "us", reps, trials, &[]);
        let reps = plan(cfg, (1, 10), (0, 3), 1);
        interleave(
            "external",
            "us",
            reps,
            vec![("bash-loop", bash_floor("/bin/true"))],
            &[],
        );
    }
    if cfg.wants("sequence") {
        let reps = plan(cfg, (1, 10), (1, 3), 1);
        let mut trials = each_conch(&conchs, |c| sequence(cfg, c.clone()));
        // A process per command keeps no `cd`: it runs every command in the repo.
        trials.push(("std", sequence(cfg, std_in_repo.clone())));
        interleave("sequence", "ms", reps, trials, &[]);
    }
    if cfg.wants("throughput") {
        let reps = plan(cfg, (0, 3), (0, 1), 1);
        let mut trials = each_conch(&conchs, |c| throughput(cfg, c.clone()));
        trials.push(("std", throughput(cfg, std.clone())));
        trials.push(("raw-pipe", throughput(cfg, RawPipe)));
        interleave("throughput", "MB/s", reps, trials, &[]);
    }
    if cfg.wants("abort") {
        let reps = plan(cfg, (1, 10), (0, 3), 1);
        let mut trials = each_conch(&conchs, |c| Box::new(|| abort_conch(c)));
        trials.push(("std", Box::new(|| abort_std(&std))));
        interleave(
            "abort",
            "ms",
            reps,
            trials,
            &[(
                "std",
                "SIGKILL to bash only: a child that bash forked would survive",
            )],
        );
    }
    if cfg.wants("timeout") {
        let reps = plan(cfg, (0, 5), (0, 2), 1);
        let trials = each_conch(&conchs, |c| Box::new(|| timeout_conch(c)));
        interleave("timeout", "ms", reps, trials, &[]);
        Record::unavailable(
            "timeout",
            "std",
            "std::process has no timeout (a host adds its own timer thread)",
        )
        .print();
    }
    if cfg.wants("concurrent") {
        let reps = plan(cfg, (0, 3), (0, 1), 1);
        let mut trials = each_conch(&conchs, |c| {
            let name = c.name;
            concurrent(move || Box::new(Conch::session(name)))
        });
        trials.push(("std", concurrent(|| Box::new(StdSpawn { cwd: None }))));
        interleave("concurrent", "ms", reps, trials, &[]);
    }
}

/// One trial per conch runtime, named after it, made by `trial`.
fn each_conch<'a>(
    conchs: &'a [Conch],
    trial: impl Fn(&'a Conch) -> Box<dyn FnMut() -> Outcome + 'a>,
) -> Vec<Trial<'a>> {
    conchs.iter().map(|c| (c.name, trial(c))).collect()
}

/// How a scenario's repetitions are spread over the runtimes.
#[derive(Clone, Copy)]
struct Plan {
    warm: usize,
    n: usize,
    /// Repetitions of one runtime in a row before the next one's turn.
    block: usize,
}

/// `(warm-up, measured)` repetitions from the settings, in turns of `block`.
fn plan(cfg: &Config, full: (usize, usize), quick: (usize, usize), block: usize) -> Plan {
    let (warm, n) = cfg.reps(full, quick);
    Plan { warm, n, block }
}

/// Measures every runtime's trial in turns of `block` repetitions (after
/// `warm` unmeasured ones each), so that a slow moment of the machine falls
/// on all of them alike. Each turn starts with block/10 unmeasured
/// repetitions: the runtime before leaves the machine in another state.
/// Prints one record per runtime; what went wrong is counted and noted (in
/// place of the runtime's entry in `notes`).
fn interleave(
    scenario: &str,
    unit: &str,
    plan: Plan,
    mut trials: Vec<Trial<'_>>,
    notes: &[(&str, &str)],
) {
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(plan.n); trials.len()];
    let mut problems: Vec<Vec<(String, usize)>> = vec![Vec::new(); trials.len()];
    let mut once = |k: usize, trial: &mut Box<dyn FnMut() -> Outcome + '_>, keep: bool| {
        let (sample, problem) = trial();
        if let Some(p) = problem {
            match problems[k].iter_mut().find(|(q, _)| *q == p) {
                Some((_, count)) => *count += 1,
                None => problems[k].push((p, 1)),
            }
        }
        if keep {
            samples[k].push(sample);
        }
    };
    for (k, (_, trial)) in trials.iter_mut().enumerate() {
        for _ in 0..plan.warm {
            once(k, trial, false);
        }
    }
    let mut done = 0;
    while done < plan.n {
        for (k, (_, trial)) in trials.iter_mut().enumerate() {
            for _ in 0..plan.block / 10 {
                once(k, trial, false);
            }
            for _ in 0..plan.block.min(plan.n - done) {
                once(k, trial, true);
            }
        }
        done += plan.block;
    }
    for (k, (name, _)) in trials.iter().enumerate() {
        let mut rec = Record::samples(scenario, name, unit, &samples[k]);
        if let Some((_, note)) = notes.iter().find(|(who, _)| who == name) {
            rec = rec.note(*note);
        }
        if !problems[k].is_empty() {
            let seen: Vec<String> = problems[k]
                .iter()
                .map(|(p, c)| format!("{p} ({c}×)"))
                .collect();
            rec = rec.note(seen.join("; "));
        }
        rec.print();
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Time of one run of a quick command.
fn latency<'a>(mut runner: impl Runner + 'a, command: &'a str) -> Box<dyn FnMut() -> Outcome + 'a> {
    Box::new(move || {
        let start = Instant::now();
        let code = runner.run(command, &mut |_| {});
        let took = micros(start.elapsed());
        (
            took,
            (code != Some(0)).then(|| "did not exit 0".to_string()),
        )
    })
}

/// What one `command` costs bash itself, per command of a `for` loop in
/// one `bash -c`: no runtime that hands commands to bash goes below it.
fn bash_floor(command: &str) -> Box<dyn FnMut() -> Outcome + '_> {
    let script = format!("for ((i = 0; i < {FLOOR_LOOP}; i++)); do {command}; done");
    let mut std = StdSpawn { cwd: None };
    Box::new(move || {
        let start = Instant::now();
        let code = std.run(&script, &mut |_| {});
        (
            micros(start.elapsed()) / FLOOR_LOOP as f64,
            (code != Some(0)).then(|| "did not exit 0".to_string()),
        )
    })
}

/// Time for the 20 commands of the agent-like sequence; every one must exit 0.
fn sequence<'a>(cfg: &'a Config, mut runner: impl Runner + 'a) -> Box<dyn FnMut() -> Outcome + 'a> {
    Box::new(move || {
        let start = Instant::now();
        let failed: Vec<&str> = cfg
            .sequence
            .iter()
            .filter(|c| runner.run(c, &mut |_| {}) != Some(0))
            .map(String::as_str)
            .collect();
        let took = millis(start.elapsed());
        (
            took,
            (!failed.is_empty()).then(|| format!("non-zero exit: {}", failed.join("; "))),
        )
    })
}

/// MB/s of output delivered to the chunk callback.
fn throughput<'a>(
    cfg: &'a Config,
    mut runner: impl Runner + 'a,
) -> Box<dyn FnMut() -> Outcome + 'a> {
    Box::new(move || {
        let mut bytes = 0u64;
        let start = Instant::now();
        runner.run(&cfg.throughput_command, &mut |len| bytes += len as u64);
        let secs = start.elapsed().as_secs_f64();
        let short = bytes != cfg.throughput_bytes;
        (
            bytes as f64 / secs / 1e6,
            short.then(|| "did not deliver every byte".to_string()),
        )
    })
}

/// One quick run before a stop is measured, so that the session is known
/// to answer (a stop keeps the shell; one that could not be brought back
/// would be started again here, outside the measure).
fn warm_up(conch: &Conch) {
    conch
        .shell
        .run(RunOptions::new("true"), |_| {})
        .expect("conch run");
}

/// From `abort()` (another thread) to `run` returning, while `/bin/sleep 100` runs.
fn abort_conch(conch: &Conch) -> Outcome {
    warm_up(conch);
    let shell = conch.shell.clone();
    let runner = thread::spawn(move || {
        let result = shell.run(RunOptions::new("/bin/sleep 100"), |_| {});
        (Instant::now(), result.expect("conch run"))
    });
    thread::sleep(ABORT_AFTER);
    let start = Instant::now();
    conch.shell.abort();
    let (ended, result) = runner.join().expect("runner thread");
    let problem = if !result.cancelled {
        Some("not reported as cancelled".to_string())
    } else if result.session_ended {
        Some("the stop ended the session".to_string())
    } else {
        None
    };
    (millis(ended - start), problem)
}

/// From `kill()` to `wait()` returning: SIGKILL of the one child.
fn abort_std(std: &StdSpawn) -> Outcome {
    let (mut cmd, _reader) = std.command("/bin/sleep 100");
    let mut child = cmd.spawn().expect("spawn bash");
    thread::sleep(ABORT_AFTER);
    let start = Instant::now();
    child.kill().expect("kill");
    child.wait().expect("wait");
    (millis(start.elapsed()), None)
}

/// Elapsed minus the timeout, for `/bin/sleep 10` with a 500 ms timeout.
fn timeout_conch(conch: &Conch) -> Outcome {
    warm_up(conch);
    let start = Instant::now();
    let result = conch
        .shell
        .run(
            RunOptions {
                timeout: Some(TIMEOUT),
                cancel: Some(CancelToken::new()),
                ..RunOptions::new("/bin/sleep 10")
            },
            |_| {},
        )
        .expect("conch run");
    let problem = (!result.timed_out).then(|| "did not time out".to_string());
    (millis(start.elapsed() - TIMEOUT), problem)
}

/// Total time for 100 sessions at once, each started afresh and running
/// [`SESSION_COMMANDS`], one thread per session.
fn concurrent<'a>(
    start_session: impl Fn() -> Box<dyn Runner> + Send + Sync + 'static,
) -> Box<dyn FnMut() -> Outcome + 'a> {
    let start_session = Arc::new(start_session);
    Box::new(move || {
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
        let failures: usize = threads
            .into_iter()
            .map(|t| t.join().expect("session thread"))
            .sum();
        let took = millis(start.elapsed());
        (
            took,
            (failures > 0).then(|| format!("{failures} commands did not exit 0")),
        )
    })
}

/// Peak RSS growth of this process while the flood goes through `runtime`.
pub fn flood(cfg: &Config, runtime: &str) {
    let mut runner: Box<dyn Runner> = match runtime {
        "std" => Box::new(StdSpawn { cwd: None }),
        conch => Box::new(Conch::start(conch)),
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

/// `n` runs of `command` through conch alone (the runtime `name`); prints
/// the median in µs.
pub fn run_loop(name: &str, n: usize, command: &str) {
    let mut conch = Conch::start(name);
    let mut samples: Vec<f64> = (0..n)
        .map(|_| {
            let start = Instant::now();
            conch.run(command, &mut |_| {});
            micros(start.elapsed())
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    if let Some(median) = samples.get(n / 2) {
        eprintln!("{n} runs of {command:?} ({name}): median {median:.1} us");
    }
}
