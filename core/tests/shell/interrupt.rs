//! A timeout or an abort interrupts the command, not the shell: the rest of
//! the command line never runs, and the same bash takes the next command
//! with everything it had (a terminal's Ctrl-C). Only a bash that cannot be
//! brought back is replaced, and the result of that very command says so.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{
    ESCALATION, HANG, Seen, TempDir, alive, gone, procs_with, unique_sleep, wait_until,
};
use conch_core::shell::{BashResult, RunOptions, Shell};

fn shell() -> Arc<Shell> {
    Arc::new(crate::clean_shell())
}

fn run(sh: &Shell, command: &str) -> BashResult {
    sh.run(RunOptions::new(command), |_| {}).unwrap()
}

/// Runs `command` with a 1 s timeout.
fn timed_out(sh: &Shell, command: &str) -> BashResult {
    let mut opts = RunOptions::new(command);
    opts.timeout = Some(Duration::from_secs(1));
    let r = sh.run(opts, |_| {}).unwrap();
    assert!(r.timed_out, "{command}: {r:?}");
    r
}

/// Runs `command` and aborts it once it printed `started`.
fn aborted(sh: &Arc<Shell>, command: &str) -> BashResult {
    aborted_after(sh, command, "started", Duration::ZERO)
}

/// Runs `command` and aborts it `delay` after its output showed `shown`.
fn aborted_after(sh: &Arc<Shell>, command: &str, shown: &str, delay: Duration) -> BashResult {
    let seen = Seen::default();
    let runner = {
        let (sh, seen, command) = (sh.clone(), seen.clone(), command.to_string());
        std::thread::spawn(move || sh.run(RunOptions::new(command), |c| seen.push(c)).unwrap())
    };
    seen.wait_for(shown);
    std::thread::sleep(delay);
    sh.abort();
    let r = runner.join().unwrap();
    assert!(r.cancelled && !r.timed_out, "{command}: {r:?}");
    r
}

/// The state a session keeps, and nothing of the interrupt's own
/// machinery left in it (no variable or function of the session's).
const STATE: &str = "pwd; echo $A$B; f; g; ulimit -n; [[ -o noclobber ]] && echo nc; trap -p USR1; \
                     compgen -v -A function __conch || echo clean";

fn assert_state_kept(sh: &Shell, after: &str, r: &BashResult) {
    assert!(!r.session_ended && !r.session_reset, "{after}: {r:?}");
    let check = run(sh, STATE);
    assert_eq!(
        check.output, "/tmp\n12\nf\ng\n512\nnc\ntrap -- 'echo usr1' SIGUSR1\nclean\n",
        "after {after}"
    );
    assert!(!check.session_reset, "after {after}");
}

#[test]
fn state_survives_timeouts_and_aborts() {
    let sh = shell();
    run(
        &sh,
        "cd /tmp; export A=1; B=2; f(){ echo f; }; alias g='echo g'; shopt -s expand_aliases; \
         ulimit -n 512; set -o noclobber; trap 'echo usr1' USR1",
    );
    let r = timed_out(&sh, "/bin/sleep 30");
    assert_state_kept(&sh, "a timeout", &r);
    let r = aborted(&sh, "echo started; /bin/sleep 30");
    assert_state_kept(&sh, "an abort", &r);
    let r = timed_out(&sh, "trap '' INT; /bin/sleep 30");
    assert_state_kept(&sh, "a timeout of a command deaf to SIGINT", &r);
    let r = timed_out(&sh, "h() { while :; do :; done; }; h");
    assert_state_kept(&sh, "a builtin loop in a function", &r);
    // What the interrupted command had already changed stays, as in a
    // terminal.
    timed_out(&sh, "C=3; /bin/sleep 30");
    assert_eq!(run(&sh, "echo $C").output, "3\n");
}

#[test]
fn the_rest_of_the_command_line_never_runs() {
    let sh = shell();
    let dir = std::env::temp_dir().join(format!("conch-interrupt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    run(&sh, &format!("cd {}", dir.display()));
    for command in [
        "touch a; /bin/sleep 30; rm a",
        "for i in 1 2 3; do /bin/sleep 30; done; echo after; rm a",
        "while :; do /bin/sleep 30; done; rm a",
        "w() { /bin/sleep 30; rm a; }; w; rm a",
        "v() { for i in 1 2; do w; done; rm a; }; v; rm a",
        "while :; do :; done; rm a",
        "if true; then /bin/sleep 30; rm a; fi; rm a",
        "/bin/sleep 30 && rm a || rm a; rm a",
        "eval '/bin/sleep 30; rm a'; rm a",
        "x=$(/bin/sleep 30); rm a",
        "/bin/sleep 30 | cat; rm a",
    ] {
        run(&sh, "touch a");
        let r = timed_out(&sh, command);
        assert!(!r.output.contains("\nafter"), "{command}: {r:?}");
        assert!(!r.session_ended, "{command}: {r:?}");
        assert!(
            dir.join("a").exists(),
            "{command}: the rest of the line ran"
        );
        // The loop is out of the unwinding: the next command runs whole.
        assert_eq!(
            run(&sh, "echo next; echo $((1+1))").output,
            "next\n2\n",
            "{command}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn extdebug_is_as_it_was_and_a_top_level_debug_trap_stays() {
    let sh = shell();
    run(&sh, "k() { /bin/sleep 30; }");
    timed_out(&sh, "k");
    let r = run(&sh, "trap -p DEBUG; shopt -q extdebug && echo on; true");
    assert_eq!(r.output, "", "nothing of the unwinding is left");
    run(&sh, "shopt -s extdebug");
    timed_out(&sh, "k");
    assert_eq!(run(&sh, "shopt -q extdebug && echo on").output, "on\n");
    // An interrupt at the top level needs no DEBUG trap: the user's stays.
    run(&sh, "shopt -u extdebug; n=0; trap 'n=$((n+1))' DEBUG");
    timed_out(&sh, "/bin/sleep 30");
    let r = run(&sh, "trap -p DEBUG");
    assert_eq!(r.output, "trap -- 'n=$((n+1))' DEBUG\n");
}

/// The eval loop cannot interrupt a builtin that never runs a trap; the
/// loop builtin can, where bash itself checks for interrupts.
#[test]
fn a_shell_that_cannot_come_back_ends_and_says_so() {
    let sh = shell();
    run(&sh, "cd /tmp; export KEPT=1");
    // A builtin that never returns to a point where bash runs a trap.
    let start = Instant::now();
    let r = timed_out(&sh, "read -r x < /dev/zero");
    assert!(
        start.elapsed() < Duration::from_secs(1) + ESCALATION * 2 + HANG,
        "{:?}",
        start.elapsed()
    );
    let next = run(&sh, "pwd; echo \"[$KEPT]\"");
    if crate::runs_builtin(&sh) {
        // The loop builtin ends `read` where bash checks for an interrupt,
        // between two bytes: the state is kept.
        assert!(!r.session_ended, "{r:?}");
        assert_eq!(next.output, "/tmp\n[1]\n");
        assert!(!next.session_reset && !next.session_ended);
    } else {
        assert!(r.session_ended, "{r:?}");
        assert_eq!(next.output, "/tmp\n[]\n");
        assert!(next.session_reset && !next.session_ended);
    }
}

/// bash traps the unwind signal, not SIGINT or SIGTERM: a command deaf to
/// those is still interrupted, its state kept. Only one deaf to the unwind
/// signal too cannot come back.
#[test]
fn deaf_to_int_and_term_is_interrupted_deaf_to_every_signal_ends_the_session() {
    let sh = shell();
    run(&sh, "cd /tmp; export KEPT=1");
    let r = timed_out(&sh, "trap '' INT TERM; while :; do :; done");
    assert!(!r.session_ended && !r.session_reset, "{r:?}");
    assert_eq!(run(&sh, "echo \"[$KEPT]\"").output, "[1]\n");
    let start = Instant::now();
    let r = timed_out(&sh, "trap '' INT TERM RTMAX RTMAX-1; while :; do :; done");
    assert!(
        start.elapsed() < Duration::from_secs(1) + ESCALATION * 2 + HANG,
        "{:?}",
        start.elapsed()
    );
    assert!(r.session_ended, "{r:?}");
    let next = run(&sh, "pwd; echo \"[$KEPT]\"");
    assert_eq!(next.output, "/tmp\n[]\n");
    assert!(next.session_reset);
}

/// A process that is stopped when the ladder reaches it (`kill -STOP`, or
/// one that stopped itself) takes its SIGINT, or its SIGTERM, as a running
/// one does, rather than waiting for SIGKILL: each is followed by SIGCONT.
#[test]
fn a_stopped_process_takes_the_ladder_s_sigint_and_sigterm() {
    let sh = shell();
    let dir = TempDir::new("stopped");
    for (signal, deaf) in [("INT", ""), ("TERM", "trap \"\" INT;")] {
        let file = format!("{dir}/{signal}");
        let r = timed_out(
            &sh,
            &format!(
                "bash -c '{deaf} trap \"echo got > {file}; exit 0\" {signal}; \
                 kill -STOP $$; /bin/sleep 30'"
            ),
        );
        assert!(!r.session_ended, "{signal}: {r:?}");
        let got = std::fs::read_to_string(&file).unwrap_or_default();
        assert_eq!(got, "got\n", "{signal}: the stopped process never took it");
    }
}

#[test]
fn exit_and_exec_end_the_session_in_their_own_result() {
    let sh = shell();
    for command in ["exit 3", "exec /bin/true", "kill -9 $$"] {
        let r = run(&sh, command);
        assert!(r.session_ended, "{command}: {r:?}");
        let next = run(&sh, "echo next");
        assert!(next.session_reset && !next.session_ended, "{command}");
    }
    let ok = run(&sh, "echo fine");
    assert!(!ok.session_ended && !ok.session_reset);
}

#[test]
fn earlier_background_jobs_survive_timeouts_aborts_and_exit() {
    let sh = shell();
    let markers: Vec<String> = (0..3).map(|_| unique_sleep(1000)).collect();
    run(
        &sh,
        &format!(
            "nohup /bin/sleep {} >/dev/null 2>&1 & setsid /bin/sleep {} & ( (/bin/sleep {} &) )",
            markers[0], markers[1], markers[2]
        ),
    );
    assert!(wait_until(HANG, || markers
        .iter()
        .all(|m| procs_with(m).len() == 1)));
    let pids: Vec<i32> = markers.iter().map(|m| procs_with(m)[0]).collect();
    let all_kept = |after: &str| {
        let listed = sh.background_jobs();
        for &pid in &pids {
            assert!(alive(pid), "{pid} killed by {after}");
            assert!(
                listed.contains(&(pid as u32)),
                "{pid} not listed after {after}: {listed:?}"
            );
        }
    };
    timed_out(&sh, "/bin/sleep 30");
    all_kept("a timeout");
    aborted(&sh, "echo started; /bin/sleep 30");
    all_kept("an abort");
    // A command's own EXIT trap runs as the command ends and gives the
    // session's back: the `exit` below still keeps the jobs.
    let r = run(&sh, "trap 'echo \"bye $?\"' EXIT; echo hi; (exit 4)");
    assert_eq!((r.output.as_str(), r.exit_code), ("hi\nbye 4\n", Some(4)));
    all_kept("a command's EXIT trap");
    let r = run(&sh, "export GONE=1; exit 3");
    assert_eq!(r.exit_code, Some(3));
    assert!(r.session_ended && !r.session_reset, "{r:?}");
    all_kept("exit");
    let next = run(&sh, "echo \"[$GONE]\"; /bin/sleep 0.01 && echo ok");
    assert_eq!(next.output, "[]\nok\n");
    assert!(next.session_reset && !next.session_ended, "{next:?}");
    all_kept("the run after exit");
    sh.close();
    for pid in pids {
        assert!(gone(pid), "{pid} outlived close");
    }
}

/// An abort that reaches bash while it is still reading the command (sent
/// right behind it) skips the command and leaves the protocol in step: the
/// next run answers at once.
#[test]
fn an_abort_before_the_command_starts_leaves_the_session_in_step() {
    let sh = shell();
    for i in 0..30 {
        let runner = {
            let sh = sh.clone();
            std::thread::spawn(move || sh.run(RunOptions::new("/bin/sleep 100"), |_| {}).unwrap())
        };
        // From at once to a little later: bash is reading the header, the
        // payload, or already running the command.
        let t = Instant::now();
        while t.elapsed() < Duration::from_micros(50 * (i % 10)) {
            std::hint::spin_loop();
        }
        while !runner.is_finished() {
            sh.abort();
            std::thread::sleep(Duration::from_millis(1));
        }
        let r = runner.join().unwrap();
        assert!(r.cancelled, "attempt {i}: {r:?}");
        let mut opts = RunOptions::new("echo next");
        opts.timeout = Some(HANG);
        let next = sh.run(opts, |_| {}).unwrap();
        assert_eq!(next.output, "next\n", "attempt {i}: {next:?}");
        assert!(!next.session_reset, "attempt {i}: {next:?}");
    }
}

/// A builtin cut short mid-line (`echo` checks for an interrupt between
/// its words, before its newline and its flush) leaves nothing for the
/// next command: what it had printed is its own run's output, never the
/// start of the next.
#[test]
fn a_builtin_cut_short_mid_line_leaves_nothing_for_the_next_command() {
    let sh = shell();
    // Long words, each unescaped by `echo -e` a character at a time: bash
    // spends much of its time inside `echo`, between its checks.
    let command = "printf -v w %01000d 0; a=(); for i in {1..100}; do a+=(\"$w\"); done; \
                   echo started; while :; do echo -e \"${a[@]}\"; done";
    timed_out(&sh, command);
    for i in 0..30 {
        // Once the loop prints, at a different point of it each time.
        aborted_after(&sh, command, "started\n0000", Duration::from_millis(7 * i));
        let next = run(&sh, "echo next");
        assert_eq!(next.output, "next\n", "attempt {i}");
    }
}
