//! A remote session's jobs: the local job calls and results over the wire.

use std::time::{Duration, Instant};

use conch_core::{CancelToken, JobOptions, JobStatus, PollOptions};
use conch_remote::RemoteError;
use serde_json::json;

use super::{options, stdio, wait_sleeping};
use crate::common::unique_sleep;

#[test]
fn a_job_runs_beside_the_session_and_is_polled_to_its_end() {
    let remote = stdio(&[]);
    let sh = remote.shell(options(json!({"snapshot": "none"}))).unwrap();
    let job = sh
        .start(JobOptions::new(
            "for i in 1 2 3; do echo $i; /bin/sleep 0.05; done",
        ))
        .unwrap();
    let ended = sh.wait_any(&[job], Duration::from_secs(30), None).unwrap();
    assert_eq!(ended, Some(job));
    let poll = sh.poll(job, &PollOptions::default(), None).unwrap();
    assert_eq!(
        (poll.output.as_str(), poll.status, poll.exit_code),
        ("1\n2\n3\n", JobStatus::Exited, Some(0))
    );
    let listed = sh.jobs().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].command,
        "for i in 1 2 3; do echo $i; /bin/sleep 0.05; done"
    );
    assert!(listed[0].started.elapsed().unwrap() < Duration::from_secs(60));
    match sh.poll(99, &PollOptions::default(), None) {
        Err(RemoteError::Core(conch_core::Error::NotFound(m))) => {
            assert_eq!(m, "no job 99 in this session")
        }
        other => panic!("NotFound, as locally: {other:?}"),
    }
}

#[test]
fn input_keys_signals_and_kill_reach_the_job() {
    let remote = stdio(&[]);
    let sh = remote.shell(options(json!({"snapshot": "none"}))).unwrap();
    let mut opts = JobOptions::new("read line; echo \"got $line\"");
    opts.stdin = true;
    let reader = sh.start(opts).unwrap();
    sh.write(reader, b"hello\n").unwrap();
    let until = PollOptions {
        wait: Duration::from_secs(30),
        until: Some(regex::Regex::new("got").unwrap()),
        ..PollOptions::default()
    };
    assert_eq!(sh.poll(reader, &until, None).unwrap().output, "got hello\n");

    let mut opts = JobOptions::new("read -r line; echo \"line=[$line]\"");
    opts.pty = Some((80, 24));
    let typed = sh.start(opts).unwrap();
    sh.write(typed, b"abc").unwrap();
    sh.write_key(typed, "enter").unwrap();
    let until = PollOptions {
        wait: Duration::from_secs(30),
        until: Some(regex::Regex::new(r"line=\[abc\]").unwrap()),
        ..PollOptions::default()
    };
    assert!(
        sh.poll(typed, &until, None)
            .unwrap()
            .output
            .contains("line=[abc]")
    );

    let nap = unique_sleep(3075);
    let sleeper = sh
        .start(JobOptions::new(format!("/bin/sleep {nap}")))
        .unwrap();
    wait_sleeping(&nap, true);
    let killed = sh.kill(sleeper).unwrap();
    assert_eq!(killed.status, JobStatus::Killed);
    wait_sleeping(&nap, false);

    let trapped = sh
        .start(JobOptions::new(
            "trap 'echo usr1; exit 3' USR1; while :; do /bin/sleep 0.05; done",
        ))
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    sh.signal(trapped, "USR1").unwrap();
    assert_eq!(
        sh.wait_any(&[trapped], Duration::from_secs(30), None)
            .unwrap(),
        Some(trapped)
    );
    match sh.signal(trapped, "NOPE") {
        Err(RemoteError::Core(conch_core::Error::InvalidArgument(m))) => {
            assert!(m.starts_with("signal must be"), "{m}")
        }
        other => panic!("a bad signal name is refused, got {other:?}"),
    }
    match sh.write(trapped, &[0xff, 0xfe]) {
        Err(RemoteError::Core(conch_core::Error::InvalidArgument(m))) => {
            assert!(m.contains("UTF-8"), "{m}")
        }
        other => panic!("binary input is refused, got {other:?}"),
    }
}

#[test]
fn a_cancel_token_ends_a_remote_poll_not_the_job() {
    let remote = stdio(&[]);
    let sh = remote.shell(options(json!({"snapshot": "none"}))).unwrap();
    let nap = unique_sleep(3075);
    let job = sh
        .start(JobOptions::new(format!("/bin/sleep {nap}")))
        .unwrap();
    wait_sleeping(&nap, true);
    let token = CancelToken::new();
    let cancel = token.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        cancel.cancel();
    });
    let started = Instant::now();
    let long = PollOptions {
        wait: Duration::from_secs(120),
        ..PollOptions::default()
    };
    let poll = sh.poll(job, &long, Some(&token)).unwrap();
    assert_eq!(poll.status, JobStatus::Running);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let waited = sh
        .wait_any(&[job], Duration::from_millis(100), None)
        .unwrap();
    assert_eq!(waited, None);
    sh.close().unwrap();
    wait_sleeping(&nap, false);
}

#[test]
fn each_job_end_reaches_the_clients_hook() {
    let remote = stdio(&[]);
    let sh = remote.shell(options(json!({"snapshot": "none"}))).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    sh.on_job_exit(conch_core::JobExitHook::new(move |info| {
        let _ = tx.lock().unwrap().send(info);
    }));
    let quick = sh.start(JobOptions::new("exit 4")).unwrap();
    let nap = unique_sleep(3075);
    let slow = sh
        .start(JobOptions::new(format!("/bin/sleep {nap}")))
        .unwrap();
    let first = rx
        .recv_timeout(super::common::HANG_GUARD)
        .expect("the first end");
    assert_eq!(
        (first.job, first.status, first.exit_code),
        (quick, JobStatus::Exited, Some(4))
    );
    wait_sleeping(&nap, true);
    sh.kill(slow).unwrap();
    let second = rx
        .recv_timeout(super::common::HANG_GUARD)
        .expect("the killed job's end");
    assert_eq!((second.job, second.status), (slow, JobStatus::Killed));
}

#[test]
fn a_hook_may_call_the_session_whose_job_ended() {
    let remote = stdio(&[]);
    let sh = std::sync::Arc::new(remote.shell(options(json!({"snapshot": "none"}))).unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let weak = std::sync::Arc::downgrade(&sh);
    sh.on_job_exit(conch_core::JobExitHook::new(move |info| {
        // The rest of the job's output, read from inside the hook: the
        // reply comes while the hook runs.
        let polled = weak
            .upgrade()
            .map(|sh| sh.poll(info.job, &PollOptions::default(), None));
        let _ = tx.lock().unwrap().send(polled);
    }));
    let job = sh.start(JobOptions::new("echo from-the-job")).unwrap();
    let polled = rx
        .recv_timeout(super::common::HANG_GUARD)
        .expect("the hook returned")
        .expect("the session was there")
        .expect("the poll from the hook");
    assert_eq!(polled.job, job);
    assert_eq!(polled.output, "from-the-job\n");
}
