//! Per-process limits (hard rlimits) and per-session caps (cgroups); the
//! session survives each. Every stress is bounded by count and time.

use std::time::{Duration, Instant};

use conch_core::{Engine, Limits, RunOptions};

use super::*;

fn limited(name: &str, limits: Limits) -> (PathBuf, Shell) {
    let dir = scratch(name);
    let sh = shell(
        &dir,
        Some(Sandbox {
            limits,
            ..Sandbox::default()
        }),
    );
    (dir, sh)
}

/// Runs `command` with a safety timeout; returns its result.
fn bounded(sh: &Shell, command: &str, secs: u64) -> BashResult {
    let mut opts = RunOptions::new(command);
    opts.timeout = Some(Duration::from_secs(secs));
    sh.run(opts, |_| {}).unwrap()
}

#[test]
fn the_applied_limits_are_the_ones_asked() {
    let (dir, sh) = limited("none", Limits::default());
    let applied = sh.sandbox_applied().unwrap();
    assert!(!applied.limits && !applied.processes && !applied.session_memory);
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cpu_cap_ends_a_busy_loop_and_the_session_goes_on() {
    let (dir, sh) = limited(
        "cpu",
        Limits {
            cpu_seconds: Some(1),
            ..Limits::default()
        },
    );
    assert!(sh.sandbox_applied().unwrap().limits);
    let started = Instant::now();
    let r = bounded(&sh, "bash -c 'while :; do :; done'", 30);
    assert!(!r.timed_out, "the CPU cap did not end the loop");
    // SIGXCPU (24) at the soft limit, SIGKILL at the hard one: the same.
    assert!(
        matches!(r.exit_code, Some(152) | Some(137)),
        "{:?} {}",
        r.exit_code,
        r.output
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(out(&sh, "echo next"), (Some(0), "next\n".to_string()));
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_memory_cap_fails_a_big_allocation_and_a_file_size_cap_a_big_file() {
    let (dir, sh) = limited(
        "mem",
        Limits {
            memory_bytes: Some(512 << 20),
            file_size_bytes: Some(1 << 20),
            ..Limits::default()
        },
    );
    let r = bounded(&sh, "python3 -c \"b=bytearray(1<<30)\"", 30);
    assert_ne!(r.exit_code, Some(0), "{}", r.output);
    assert!(r.output.contains("MemoryError"), "{}", r.output);
    let r = bounded(&sh, "head -c 2000000 /dev/zero > big", 30);
    // SIGXFSZ (25): 128 + 25.
    assert_eq!(r.exit_code, Some(153), "{}", r.output);
    assert!(std::fs::metadata(dir.join("big")).unwrap().len() <= 1 << 20);
    assert_eq!(out(&sh, "echo next"), (Some(0), "next\n".to_string()));
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_process_cap_stops_a_fork_loop_and_the_session_goes_on() {
    let (dir, sh) = limited(
        "pids",
        Limits {
            processes: Some(50),
            ..Limits::default()
        },
    );
    assert!(sh.sandbox_applied().unwrap().processes);
    // 200 forks at most, each child sleeping 5 s: the parent counts the
    // ones refused, kills the rest and waits for them.
    let script = "python3 -c \"
import os, signal, time
kids, refused = [], 0
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        refused += 1
        continue
    if pid == 0:
        time.sleep(5); os._exit(0)
    kids.append(pid)
for pid in kids:
    os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
print('started', len(kids), 'refused', refused)
\"";
    let started = Instant::now();
    let r = bounded(&sh, script, 60);
    assert_eq!(r.exit_code, Some(0), "{}", r.output);
    let words: Vec<&str> = r.output.split_whitespace().collect();
    let forked: usize = words[1].parse().unwrap();
    let refused: usize = words[3].parse().unwrap();
    assert!(forked < 50, "{}", r.output);
    assert!(refused > 150, "{}", r.output);
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(out(&sh, "echo next"), (Some(0), "next\n".to_string()));
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}

/// bash retries a fork the limit refused (1, 2, 4, 8 s) and `wait`s for
/// what it started: the run is stopped once the session stays at its
/// limit, not at its timeout, its processes killed, the session kept (or,
/// under the eval loop, ended and said so).
#[test]
fn a_run_stuck_at_the_process_limit_is_stopped_with_a_notice() {
    let (dir, sh) = limited(
        "pids-stuck",
        Limits {
            processes: Some(20),
            ..Limits::default()
        },
    );
    assert_eq!(out(&sh, "X=kept; echo set"), (Some(0), "set\n".to_string()));
    let marker = crate::common::unique_sleep(100);
    let started = Instant::now();
    let r = bounded(
        &sh,
        &format!("for i in $(seq 30); do /bin/sleep {marker} & done; wait"),
        60,
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}, not stopped early: {r:?}",
        started.elapsed()
    );
    assert!(!r.timed_out && r.cancelled, "{r:?}");
    assert_eq!(r.exit_code, None);
    assert!(
        r.output.starts_with(
            "[Command stopped: the session's process limit (20) was reached and new processes \
             were refused for 2 seconds; its processes were killed. Start fewer processes at once]\n"
        ),
        "{}",
        r.output
    );
    assert!(r.output.contains("fork: retry"), "{}", r.output);
    assert!(
        crate::common::wait_until(crate::common::HANG, || crate::common::procs_with(&marker)
            .is_empty()),
        "its processes are left"
    );
    if r.session_ended {
        // Only the eval loop, and only when the stop cut bash's wait
        // before a retry short: bash gives that fork up, which ends a
        // `bash -c` (docs/behaviour.md, section 16). The result says so,
        // and the next run is a fresh bash.
        assert_eq!(sh.engine().unwrap(), Engine::Eval, "{r:?}");
        assert!(
            r.output.contains("bash: fork: Interrupted system call\n"),
            "{r:?}"
        );
        let next = run(&sh, "echo ${X-unset}");
        assert_eq!(
            (next.output.as_str(), next.session_reset),
            ("unset\n", true)
        );
    } else {
        // The state is kept. Under the eval loop bash may first tell of a
        // killed background sleep, as it does of any job a signal killed
        // (docs/behaviour.md, section 16); nothing else comes before.
        let (code, text) = out(&sh, "echo $X");
        let mut lines: Vec<&str> = text.lines().collect();
        assert_eq!((code, lines.pop()), (Some(0), Some("kept")), "{text}");
        let killed = |line: &&str| {
            line.starts_with("bash: line ")
                && line.contains(" Killed ")
                && line.ends_with(&format!("/bin/sleep {marker}"))
        };
        assert!(lines.iter().all(killed), "{text}");
    }
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A command that touches the limit and comes back below it (its
/// processes end before bash's retry) goes on.
#[test]
fn a_run_that_touches_the_process_limit_and_recovers_goes_on() {
    let (dir, sh) = limited(
        "pids-touch",
        Limits {
            processes: Some(20),
            ..Limits::default()
        },
    );
    // Past the 2 s grace after the refusals, below the limit by then. The
    // forks are a subshell's: bash gives a fork up when a child ends
    // during its retry's sleep (`fork: Interrupted system call`, and that
    // bash exits), which is bash's doing, not the limit's.
    let r = bounded(
        &sh,
        "(for i in $(seq 25); do /bin/sleep 0.3 & done; wait); /bin/sleep 4; echo done",
        60,
    );
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert!(!r.cancelled, "{r:?}");
    assert!(r.output.ends_with("done\n"), "{}", r.output);
    assert!(
        r.output.contains("fork: retry"),
        "it never touched the limit: {}",
        r.output
    );
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_session_memory_cap_ends_what_goes_over_it_and_the_session_goes_on() {
    let (dir, sh) = limited(
        "session-mem",
        Limits {
            session_memory_bytes: Some(64 << 20),
            ..Limits::default()
        },
    );
    assert!(sh.sandbox_applied().unwrap().session_memory);
    // 256 MiB touched: the cgroup's OOM killer ends it (SIGKILL).
    let r = bounded(
        &sh,
        "python3 -c \"b=bytearray(256<<20); print('surv' + 'ived')\"",
        60,
    );
    assert_ne!(r.exit_code, Some(0), "{}", r.output);
    assert!(!r.output.contains("survived"), "{}", r.output);
    assert_eq!(out(&sh, "echo next").1, "next\n");
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_cgroups_go_when_the_session_closes() {
    let (dir, sh) = limited(
        "cgroup-gone",
        Limits {
            processes: Some(20),
            ..Limits::default()
        },
    );
    let (_, cgroup) = out(&sh, "grep pids /proc/self/cgroup | cut -d: -f3");
    let cgroup = cgroup.trim().to_string();
    assert!(cgroup.contains("sandbox-"), "{cgroup}");
    let path = Path::new("/sys/fs/cgroup/pids").join(cgroup.trim_start_matches('/'));
    assert!(path.is_dir(), "{}", path.display());
    // Left running (setsid: out of bash's tree, not out of the cgroup).
    out(&sh, "setsid sleep 300 &");
    sh.close();
    assert!(!path.exists(), "the cgroup is left: {}", path.display());
    let _ = std::fs::remove_dir_all(&dir);
}
