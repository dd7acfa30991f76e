//! Nothing a command starts outlives what it should: background jobs do not
//! hold a call, and abort, timeout and close kill whole trees (checked in
//! the real process table).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{procs_with, unique_sleep, wait_until};
use conch_core::CancelToken;
use conch_core::process::tree::KillLadder;
use conch_core::shell::{RunOptions, Shell, ShellOptions, Snapshot};

fn shell() -> Shell {
    Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        ..ShellOptions::default()
    })
    .unwrap()
}

fn gone(marker: &str) -> bool {
    wait_until(Duration::from_secs(3), || procs_with(marker).is_empty())
}

#[test]
fn background_jobs_never_hold_a_call_and_die_at_close() {
    let sh = shell();
    let s = unique_sleep(300);
    let start = Instant::now();
    let r = sh
        .run(RunOptions::new(format!("/bin/sleep {s} & echo up")), |_| {})
        .unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!((r.exit_code, r.output.as_str()), (Some(0), "up\n"));

    let start = Instant::now();
    let r = sh
        .run(
            RunOptions::new("python3 -m http.server 0 --bind 127.0.0.1 >/dev/null 2>&1 & echo up"),
            |_| {},
        )
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(r.exit_code, Some(0));

    let jobs = sh.background_jobs();
    let sleeps = procs_with(&s);
    assert_eq!(sleeps.len(), 1);
    assert!(
        jobs.contains(&(sleeps[0] as u32)),
        "{jobs:?} lists the sleep"
    );
    assert_eq!(jobs.len(), 2, "sleep and the server: {jobs:?}");
    // A later run is not disturbed by the jobs.
    assert_eq!(
        sh.run(RunOptions::new("echo next"), |_| {}).unwrap().output,
        "next\n"
    );
    sh.close();
    assert!(gone(&s));
    assert!(
        jobs.iter()
            .all(|&p| !conch_core::process::tree::is_alive(p as i32))
    );
}

#[test]
fn escapes_do_not_survive_abort_timeout_or_close() {
    for how in ["abort", "timeout", "close"] {
        let sh = Arc::new(shell());
        let (a, b, c) = (unique_sleep(1000), unique_sleep(1000), unique_sleep(1000));
        let cmd = format!(
            "setsid /bin/sleep {a} & ( (/bin/sleep {b} &) ); nohup /bin/sleep {c} >/dev/null 2>&1 & disown; echo started; /bin/sleep 100"
        );
        let mut opts = RunOptions::new(cmd);
        if how == "timeout" {
            opts.timeout = Some(Duration::from_millis(500));
        }
        let runner = {
            let sh = sh.clone();
            std::thread::spawn(move || sh.run(opts, |_| {}))
        };
        assert!(wait_until(Duration::from_secs(5), || [&a, &b, &c]
            .iter()
            .all(|m| procs_with(m).len() == 1)));
        match how {
            "abort" => sh.abort(),
            "close" => sh.close(),
            _ => {}
        }
        let result = runner.join().unwrap();
        for m in [&a, &b, &c] {
            assert!(gone(m), "{how}: {m} survived");
        }
        if how != "close" {
            let r = result.unwrap();
            assert!(r.cancelled, "{how}");
            assert_eq!(r.timed_out, how == "timeout");
            assert_eq!(r.exit_code, None);
            assert!(
                r.output.contains("started"),
                "partial output kept: {:?}",
                r.output
            );
            let notice = if how == "timeout" {
                "[Command timed out after 1 seconds]\n"
            } else {
                "[Command cancelled]\n"
            };
            assert!(r.output.starts_with(notice), "{:?}", r.output);
            assert_eq!(
                sh.run(RunOptions::new("echo ok"), |_| {}).unwrap().output,
                "ok\n"
            );
        }
    }
}

#[test]
fn abort_kills_grandchildren_and_the_session_works_after() {
    let sh = Arc::new(shell());
    let (a, b) = (unique_sleep(1000), unique_sleep(1000));
    let runner = {
        let sh = sh.clone();
        let cmd = format!("echo begin; bash -c '/bin/sleep {a} & /bin/sleep {b} & wait'");
        std::thread::spawn(move || sh.run(RunOptions::new(cmd), |_| {}).unwrap())
    };
    assert!(wait_until(Duration::from_secs(5), || procs_with(&a).len()
        == 1
        && procs_with(&b).len() == 1));
    let t = Instant::now();
    sh.abort();
    let r = runner.join().unwrap();
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert!(r.cancelled && !r.timed_out);
    assert_eq!(r.output, "[Command cancelled]\nbegin\n");
    assert!(gone(&a) && gone(&b));
    let r = sh.run(RunOptions::new("echo alive"), |_| {}).unwrap();
    assert_eq!(r.output, "alive\n");
    assert!(r.session_reset, "an aborted command ends with its session");
}

#[test]
fn a_cancel_token_cancels_and_a_cancelled_token_never_starts() {
    let sh = shell();
    let token = CancelToken::new();
    token.cancel();
    let marker = unique_sleep(100);
    let mut opts = RunOptions::new(format!("/bin/sleep {marker}"));
    opts.cancel = Some(token);
    let r = sh.run(opts, |_| {}).unwrap();
    assert!(r.cancelled);
    assert!(procs_with(&marker).is_empty());

    let token = CancelToken::new();
    let t2 = token.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        t2.cancel();
    });
    let mut opts = RunOptions::new("/bin/sleep 100");
    opts.cancel = Some(token);
    let start = Instant::now();
    let r = sh.run(opts, |_| {}).unwrap();
    assert!(r.cancelled);
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[test]
fn ignored_signals_and_builtin_loops_end_at_timeout_plus_grace() {
    let sh = Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        kill_ladder: KillLadder {
            grace: Duration::from_millis(300),
        },
        ..ShellOptions::default()
    })
    .unwrap();
    let marker = unique_sleep(100);
    for cmd in [
        format!("trap '' INT TERM; /bin/sleep {marker}"),
        "while :; do :; done".to_string(),
    ] {
        let mut opts = RunOptions::new(cmd.clone());
        opts.timeout = Some(Duration::from_millis(500));
        let start = Instant::now();
        let r = sh.run(opts, |_| {}).unwrap();
        let took = start.elapsed();
        // timeout 0.5 s + at most three graces of 0.3 s, with slack for a loaded machine.
        assert!(took < Duration::from_millis(3000), "{cmd}: {took:?}");
        assert!(r.timed_out && r.cancelled, "{cmd}");
        let next = sh.run(RunOptions::new("echo next"), |_| {}).unwrap();
        assert_eq!(next.output, "next\n", "{cmd}");
        assert!(next.session_reset, "{cmd}");
    }
    assert!(gone(&marker));
}

#[test]
fn abort_from_another_thread_is_not_behind_the_run_lock() {
    let sh = Arc::new(shell());
    let runner = {
        let sh = sh.clone();
        std::thread::spawn(move || sh.run(RunOptions::new("/bin/sleep 100"), |_| {}).unwrap())
    };
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    sh.abort();
    let r = runner.join().unwrap();
    assert!(r.cancelled);
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn many_sessions_leak_no_fds_threads_or_zombies() {
    // Warm up process-wide state (spawner thread) before counting.
    drop(shell());
    let fds_before = common::open_fds();
    let shells: Vec<Shell> = (0..100).map(|_| shell()).collect();
    std::thread::scope(|s| {
        for sh in &shells {
            s.spawn(move || {
                let r = sh
                    .run(RunOptions::new("/bin/echo hi; /bin/true & wait"), |_| {})
                    .unwrap();
                assert_eq!(r.output, "hi\n");
            });
        }
    });
    drop(shells);
    assert!(wait_until(
        Duration::from_secs(5),
        || common::zombie_children() == 0
    ));
    // Other tests in this binary run concurrently; allow their descriptors.
    assert!(
        common::open_fds() <= fds_before + 40,
        "{} -> {}",
        fds_before,
        common::open_fds()
    );
}

#[test]
fn a_stopped_command_line_does_not_go_on_after_the_stop() {
    let sh = shell();
    let dir = std::env::temp_dir().join(format!("conch-rest-{}", std::process::id()));
    let flag = dir.join("ran");
    std::fs::create_dir_all(&dir).unwrap();
    let mut opts = RunOptions::new(format!(
        "echo before; /bin/sleep 5; echo after; touch {}",
        flag.display()
    ));
    opts.timeout = Some(Duration::from_millis(300));
    let r = sh.run(opts, |_| {}).unwrap();
    assert!(r.timed_out);
    assert_eq!(r.output, "[Command timed out after 0 seconds]\nbefore\n");
    std::thread::sleep(Duration::from_millis(200));
    assert!(!flag.exists(), "the rest of the line must not run");
    let _ = std::fs::remove_dir_all(&dir);
}
