//! Commands that would hold a run until its timeout, ended early with a
//! notice (docs/behaviour.md, section 7: a `DEBUG` trap that skips the
//! session's own steps) or let go on (a bash that stopped itself). The
//! process limit's case is in the sandbox tests.

use std::time::{Duration, Instant};

use conch_core::shell::{BashResult, RunOptions, Shell};

/// The timeout a hang would run to; a run that ends well before it was
/// ended early.
const TIMEOUT: Duration = Duration::from_secs(60);
/// Well past the detection (about 3 s), well before [`TIMEOUT`].
const EARLY: Duration = Duration::from_secs(10);

fn run(sh: &Shell, cmd: &str) -> (BashResult, Duration) {
    let mut opts = RunOptions::new(cmd);
    opts.timeout = Some(TIMEOUT);
    let started = Instant::now();
    let r = sh.run(opts, |_| {}).unwrap();
    (r, started.elapsed())
}

const NOTICE: &str = "[Command ended, but the shell stopped reporting after it: a DEBUG trap \
that returns non-zero under `shopt -s extdebug` makes bash skip every command, the shell's own \
included. Its exit status is unknown]\n";

/// The run that skipped the session's steps ends early with the notice and
/// ends the session; the next run gets a fresh bash, without the trap.
fn ends_early_and_resets(sh: &Shell, r: &BashResult, took: Duration) {
    assert!(took < EARLY, "took {took:?}, not ended early: {r:?}");
    assert!(!r.timed_out, "{r:?}");
    assert!(r.cancelled && r.session_ended, "{r:?}");
    assert_eq!(r.exit_code, None);
    assert!(r.output.starts_with(NOTICE), "{:?}", r.output);
    let (next, took) = run(
        sh,
        "echo next; trap -p DEBUG; shopt -q extdebug || echo off",
    );
    assert!(took < EARLY, "{took:?}");
    assert_eq!(next.output, "next\noff\n");
    assert_eq!(next.exit_code, Some(0));
    assert!(next.session_reset, "{next:?}");
}

#[test]
fn a_failing_debug_trap_under_extdebug_ends_the_run_not_at_its_timeout() {
    let sh = crate::clean_shell();
    run(&sh, "X=1");
    let (r, took) = run(&sh, "echo before; shopt -s extdebug; trap 'false' DEBUG");
    if builtin_goes_on(&sh, &r, took) {
        return;
    }
    ends_early_and_resets(&sh, &r, took);
    assert!(r.output.ends_with("before\n"), "{:?}", r.output);
    // The state went with the bash.
    assert_eq!(run(&sh, "echo \"[${X-}]\"").0.output, "[]\n");
}

/// With the loop builtin the session has no steps of its own for the trap
/// to skip: the run ends with its status, as under `bash -c`, and the
/// trap, still set, skips the next command's own commands as it would the
/// rest of a script. False with the eval loop.
fn builtin_goes_on(sh: &Shell, r: &BashResult, took: Duration) -> bool {
    if !crate::runs_builtin(sh) {
        return false;
    }
    assert!(took < EARLY, "{took:?}");
    assert!(!r.session_ended && !r.cancelled, "{r:?}");
    assert_eq!(r.exit_code, Some(0));
    let (next, took) = run(sh, "echo skipped");
    assert!(took < EARLY, "{took:?}");
    assert_eq!((next.output.as_str(), next.session_reset), ("", false));
    true
}

#[test]
fn the_trap_set_after_extdebug_in_another_call_ends_that_call() {
    let sh = crate::clean_shell();
    let (r, _) = run(&sh, "shopt -s extdebug");
    assert_eq!(r.exit_code, Some(0));
    // With a per-run directory too: the session's steps around the command
    // are skipped as well.
    let mut opts = RunOptions::new("trap 'false' DEBUG");
    opts.timeout = Some(TIMEOUT);
    opts.cwd = Some("/".into());
    let started = Instant::now();
    let r = sh.run(opts, |_| {}).unwrap();
    if !builtin_goes_on(&sh, &r, started.elapsed()) {
        ends_early_and_resets(&sh, &r, started.elapsed());
    }
}

#[test]
fn a_debug_trap_that_skips_only_some_commands_works_as_in_bash() {
    let sh = crate::clean_shell();
    run(
        &sh,
        "shopt -s extdebug; trap '[[ $BASH_COMMAND != *skipme* ]]' DEBUG",
    );
    let (r, _) = run(&sh, "echo a; echo skipme; echo b");
    assert_eq!(r.output, "a\nb\n");
    assert_eq!(r.exit_code, Some(0));
    assert!(!r.session_ended && !r.cancelled, "{r:?}");
}

/// A command busy in bash itself for longer than the detection takes is
/// not mistaken for the session's steps: it runs with the status
/// descriptor closed.
#[test]
fn a_long_builtin_loop_is_not_a_hang() {
    let sh = crate::clean_shell();
    let (r, _) = run(
        &sh,
        "SECONDS=0; while ((SECONDS < 4)); do :; done; echo done",
    );
    assert_eq!(r.output, "done\n");
    assert_eq!(r.exit_code, Some(0));
    assert!(!r.session_ended && !r.cancelled, "{r:?}");
}

/// A `DEBUG` trap that makes the session's steps slow (it runs a program
/// before each) is not ended: bash waits for it, it does not spin.
#[test]
fn a_slow_debug_trap_is_not_a_hang() {
    let sh = crate::clean_shell();
    let (r, _) = run(&sh, "trap '/bin/sleep 0.1' DEBUG");
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    let (r, _) = run(&sh, "trap - DEBUG; echo ok");
    assert_eq!(r.output, "ok\n");
    assert!(!r.session_ended && !r.cancelled, "{r:?}");
}

#[test]
fn a_command_that_stops_bash_goes_on_within_seconds_not_at_its_timeout() {
    let sh = crate::clean_shell();
    for cmd in [
        "kill -STOP $$; echo after",
        "suspend -f; echo after",
        "(kill -STOP $$); echo after",
    ] {
        let (r, took) = run(&sh, cmd);
        assert!(took < EARLY, "{cmd}: took {took:?}: {r:?}");
        assert_eq!(r.output, "after\n", "{cmd}: {r:?}");
        assert_eq!(r.exit_code, Some(0), "{cmd}");
        assert!(
            !r.cancelled && !r.timed_out && !r.session_ended,
            "{cmd}: {r:?}"
        );
    }
    let (next, _) = run(&sh, "echo next");
    assert_eq!(next.output, "next\n");
    assert!(!next.session_reset);
}
