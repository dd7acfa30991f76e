//! The session's plumbing is invisible to commands: what a command runs,
//! from the session, a job, a one-shot run or a terminal, finds only its
//! stdin, stdout and stderr open (docs/behaviour.md, section 2, "Streams").
//! Descriptors are listed through `/proc`, so this is Linux's.
//!
//! A listing counts the descriptor it reads the directory with: `ls
//! /proc/self/fd` and a bash glob of it show 0, 1, 2 and 3 (their own,
//! the lowest one free), and any descriptor left open besides would show
//! as one more (their own then being 4).
#![cfg(target_os = "linux")]

use std::time::Duration;

use crate::common::{HANG, RELEASE, gated};
use conch_core::pty::{PtyOptions, PtySession};
use conch_core::shell::{BashResult, ExecuteOptions, RunOptions, Shell, execute_shell};
use conch_core::{JobOptions, JobStatus};

/// What a listing prints when nothing but 0, 1 and 2 is open: those and
/// the listing's own.
const ONLY_STDIO: &str = "0 1 2 3";

/// A bash glob of the shell's own descriptors, as one line: what a bash
/// subshell holds, close-on-exec copies included.
const GLOB: &str = "for f in /proc/self/fd/*; do printf '%s ' \"${f##*/}\"; done; echo";

fn run(sh: &Shell, command: &str) -> BashResult {
    sh.run(
        RunOptions {
            timeout: Some(HANG),
            ..RunOptions::new(command)
        },
        |_| {},
    )
    .unwrap()
}

/// The descriptor numbers a listing printed, in order, one line.
fn fds(listing: &str) -> String {
    let mut n: Vec<u32> = listing
        .split_whitespace()
        .map(|w| w.parse().unwrap_or_else(|_| panic!("{listing:?}")))
        .collect();
    n.sort_unstable();
    n.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
}

#[test]
fn an_external_command_finds_only_stdio() {
    let sh = crate::clean_shell();
    let r = run(&sh, "ls /proc/self/fd");
    assert_eq!(fds(&r.output), ONLY_STDIO);
    // The same from a subshell (`:` keeps bash from running `ls` in the
    // subshell's place), a command substitution and a pipeline.
    let r = run(&sh, "( ls /proc/self/fd; : )");
    assert_eq!(fds(&r.output), ONLY_STDIO);
    let r = run(&sh, "x=$(ls /proc/self/fd); echo $x");
    assert_eq!(fds(&r.output), ONLY_STDIO);
    let r = run(&sh, "ls /proc/self/fd | cat");
    assert_eq!(fds(&r.output), ONLY_STDIO);
    // A run given its own cwd and variables goes another way (a script).
    let r = sh
        .run(
            RunOptions {
                cwd: Some("/".into()),
                env: vec![("A".into(), "1".into())],
                ..RunOptions::new("ls /proc/self/fd")
            },
            |_| {},
        )
        .unwrap();
    assert_eq!(fds(&r.output), ONLY_STDIO);
}

/// While a command runs, what bash itself holds besides 0, 1 and 2 is its
/// own: close-on-exec (so that no program a command starts gets it), and
/// none of it on the session's numbers. bash's own subshells hold the
/// same until they run a program (documented in the protocol's module
/// doc: bash keeps no descriptor out of its subshells).
#[test]
fn what_bash_keeps_while_a_command_runs_is_close_on_exec() {
    let sh = crate::clean_shell();
    // Another bash lists its parent's descriptors with their flags: the
    // session's bash, then a subshell of the command.
    let inspect = "/bin/bash --norc -c 'for f in /proc/$PPID/fd/*; do n=${f##*/}; \
                   while read -r k v; do [[ $k == flags: ]] && echo \"$n $v\"; done \
                   < /proc/$PPID/fdinfo/$n; done'";
    for command in [inspect.to_string(), format!("( {inspect}; : )")] {
        let r = run(&sh, &command);
        let mut numbers = Vec::new();
        for line in r.output.lines() {
            let (n, flags) = line.split_once(' ').unwrap();
            let (n, flags): (u32, u32) =
                (n.parse().unwrap(), u32::from_str_radix(flags, 8).unwrap());
            numbers.push(n);
            if n > 2 {
                assert_ne!(
                    flags & libc::O_CLOEXEC as u32,
                    0,
                    "{command}: {n} in {:?}",
                    r.output
                );
            }
        }
        numbers.sort_unstable();
        assert!(numbers.starts_with(&[0, 1, 2]), "{command}: {:?}", r.output);
        for n in [60, 62, 63] {
            assert!(!numbers.contains(&n), "{command}: {n} in {:?}", r.output);
        }
    }
}

#[test]
fn a_background_job_finds_only_stdio() {
    let sh = crate::clean_shell();
    // The subshell holds what bash held when it was made; `ls` runs after
    // the run has returned, while bash reads the next one.
    let r = run(&sh, &gated("ls /proc/self/fd"));
    assert_eq!(r.output, "");
    run(&sh, RELEASE);
    let job = sh.jobs().last().expect("a job").job;
    let p = crate::poll(&sh, job, HANG);
    assert_eq!(p.status, JobStatus::Exited);
    assert_eq!(fds(&p.output), ONLY_STDIO);
}

#[test]
fn a_job_started_beside_the_session_finds_only_stdio() {
    let sh = crate::clean_shell();
    // Its command runs in a bash subshell of the job's root: a glob there
    // sees everything that subshell holds.
    for command in ["ls /proc/self/fd", GLOB] {
        let job = sh.start(JobOptions::new(command)).unwrap();
        let p = crate::poll(&sh, job, HANG);
        assert_eq!(p.status, JobStatus::Exited);
        assert_eq!(fds(&p.output), ONLY_STDIO, "{command}");
    }
}

#[test]
fn a_one_shot_run_finds_only_stdio() {
    for command in ["ls /proc/self/fd", GLOB] {
        let r = execute_shell(
            ExecuteOptions {
                command: command.into(),
                ..ExecuteOptions::default()
            },
            |_| {},
        )
        .unwrap();
        assert_eq!(fds(&r.output), ONLY_STDIO, "{command}");
    }
}

#[test]
fn a_terminal_run_finds_only_stdio() {
    let pty = PtySession::new();
    for command in ["ls /proc/self/fd", GLOB] {
        let r = pty
            .start(
                PtyOptions {
                    timeout: Some(HANG),
                    ..PtyOptions::new(command)
                },
                |_| {},
            )
            .unwrap();
        assert_eq!(r.exit_code, Some(0), "{command}: {r:?}");
        assert_eq!(fds(&r.summary.output), ONLY_STDIO, "{command}");
    }
}

/// What the rc snapshot starts holds nothing of the session's either.
#[test]
fn the_snapshot_runs_without_the_sessions_descriptors() {
    use conch_core::shell::{ShellOptions, Snapshot};
    let dir = std::env::temp_dir().join(format!("conch-plumbing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (snapshot, seen) = (dir.join("snapshot.sh"), dir.join("seen"));
    std::fs::write(
        &snapshot,
        format!("ls /proc/self/fd > '{}'\n", seen.display()),
    )
    .unwrap();
    let sh = Shell::new(ShellOptions {
        snapshot: Snapshot::Path(snapshot),
        ..ShellOptions::default()
    })
    .unwrap();
    assert_eq!(run(&sh, "echo ready").output, "ready\n");
    let listed = std::fs::read_to_string(&seen).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    // stdin, stdout and stderr are `/dev/null` there.
    assert_eq!(fds(&listed), ONLY_STDIO);
}

#[test]
fn closing_the_protocols_descriptor_ends_nothing() {
    let sh = crate::clean_shell();
    let r = run(&sh, "exec 63>&- 62>&- 60>&-; echo next");
    assert_eq!((r.output.as_str(), r.exit_code), ("next\n", Some(0)));
    assert!(!r.session_ended);
    let r = run(&sh, "echo again; echo $?");
    assert_eq!(r.output, "again\n0\n");
    assert!(!r.session_reset);
}

/// The session's descriptors are closed in the command: reading or
/// writing them fails at once, where `cat <&63` used to take the
/// session's input (and the run waited for its timeout).
#[test]
fn the_sessions_descriptors_are_bad_descriptors_in_a_command() {
    let sh = crate::clean_shell();
    for (command, what) in [
        ("cat <&63", "bash: line 1: 63: Bad file descriptor\n1\n"),
        (
            "read -r -u 63 x",
            "bash: line 1: read: 63: invalid file descriptor: Bad file descriptor\n1\n",
        ),
        (
            "echo forged >&62",
            "bash: line 1: 62: Bad file descriptor\n1\n",
        ),
        ("cat <&60", "bash: line 1: 60: Bad file descriptor\n1\n"),
    ] {
        let started = std::time::Instant::now();
        let r = run(&sh, &format!("{command}; echo $?"));
        assert_eq!(r.output, what, "{command}");
        assert!(started.elapsed() < Duration::from_secs(5), "{command}");
        assert_eq!(run(&sh, "echo alive").output, "alive\n", "after {command}");
    }
}

#[test]
fn a_commands_own_descriptors_persist_and_the_sessions_numbers_are_lent() {
    let sh = crate::clean_shell();
    let dir = std::env::temp_dir().join(format!("conch-plumbing-fd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (x, y) = (dir.join("x"), dir.join("y"));
    // `exec 3>file` stays for the next commands, as in a terminal.
    run(&sh, &format!("exec 3>'{}'", x.display()));
    run(&sh, "echo one >&3");
    let r = run(&sh, "echo two >&3; ls /proc/self/fd");
    assert_eq!(fds(&r.output), "0 1 2 3 4", "3 is the command's own");
    assert_eq!(std::fs::read_to_string(&x).unwrap(), "one\ntwo\n");
    // `exec 63>file` works for the command that does it, and lasts until
    // its end: the session takes its number back, and lives on.
    let r = run(
        &sh,
        &format!("exec 63>'{}'; echo mine >&63; echo $?", y.display()),
    );
    assert_eq!(r.output, "0\n");
    assert_eq!(std::fs::read_to_string(&y).unwrap(), "mine\n");
    let r = run(&sh, "echo later >&63; echo $?");
    assert!(!r.session_reset);
    if crate::runs_builtin(&sh) {
        // The session keeps none of its own at 63: the command's stays, as
        // its `exec 3>file` does.
        assert_eq!(r.output, "0\n");
        assert_eq!(std::fs::read_to_string(&y).unwrap(), "mine\nlater\n");
        run(&sh, "exec 63>&-");
    } else {
        assert_eq!(r.output, "bash: line 1: 63: Bad file descriptor\n1\n");
        assert_eq!(std::fs::read_to_string(&y).unwrap(), "mine\n");
    }
    run(&sh, "exec 3>&-");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A signal that ends bash inside a command (`kill $$`) runs the
/// session's `EXIT` trap where the command stood, without the protocol's
/// descriptor: the trap reports nothing, and the process ends with the
/// signal's status, as docs/behaviour.md ("When bash ends") says.
#[test]
fn a_signal_that_ends_bash_ends_its_process() {
    let sh = crate::clean_shell();
    for (command, code) in [("kill $$", 143), ("kill -HUP $$", 129)] {
        let pid = run(&sh, "echo $$").output.clone();
        let r = run(&sh, command);
        assert_eq!(r.exit_code, Some(code), "{command}: {r:?}");
        assert!(r.session_ended, "{command}: {r:?}");
        let next = run(&sh, "echo $$");
        assert!(next.session_reset, "{command}: {next:?}");
        assert_ne!(next.output, pid, "{command}: a new process");
    }
}
