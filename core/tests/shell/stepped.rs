//! A run driven in steps (`Run::drive`): until a deadline on one thread,
//! then handed over to another that drives it to its end.

use std::sync::Arc;
use std::sync::mpsc::channel;
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::common::HANG;
use conch_core::CancelToken;
use conch_core::shell::{Run, RunOptions, Shell};

fn shell() -> Arc<Shell> {
    Arc::new(crate::clean_shell())
}

fn soon(ms: u64) -> Option<Instant> {
    Some(Instant::now() + Duration::from_millis(ms))
}

#[test]
fn a_run_is_send_with_an_owned_shell() {
    fn send<T: Send + 'static>() {}
    send::<Run<Arc<Shell>>>();
}

#[test]
fn a_quick_command_ends_within_the_first_step() {
    let sh = shell();
    let mut out = String::new();
    let mut run = Run::new(&*sh, sh.reserve().unwrap(), RunOptions::new("echo hi"));
    let Poll::Ready(result) = run.drive(soon(HANG.as_millis() as u64), &mut |c| out.push_str(c))
    else {
        panic!("still running")
    };
    let result = result.unwrap();
    assert_eq!(
        (result.output.as_str(), result.exit_code),
        ("hi\n", Some(0))
    );
    assert_eq!(out, "hi\n");
    // Driven again after its end: an error, nothing runs.
    assert!(matches!(run.drive(None, &mut |_| {}), Poll::Ready(Err(_))));
}

#[test]
fn a_run_goes_on_on_another_thread_with_its_chunks_in_order() {
    let sh = shell();
    let mut first = String::new();
    let mut run = Run::new(
        sh.clone(),
        sh.reserve().unwrap(),
        RunOptions::new("echo a; sleep 0.3; echo b; cd /"),
    );
    let started = Instant::now();
    while first.is_empty() {
        assert!(run.drive(soon(20), &mut |c| first.push_str(c)).is_pending());
        assert!(started.elapsed() < HANG);
    }
    assert_eq!(first, "a\n");
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut rest = String::new();
        let result = loop {
            if let Poll::Ready(result) = run.drive(soon(20), &mut |c| rest.push_str(c)) {
                break result;
            }
        };
        tx.send((rest, result)).unwrap();
    });
    let (rest, result) = rx.recv_timeout(HANG).expect("the run hung");
    let result = result.unwrap();
    assert_eq!(rest, "b\n");
    assert_eq!(result.output, "a\nb\n");
    assert_eq!(result.exit_code, Some(0));
    assert_eq!(sh.cwd(), std::path::Path::new("/"));
}

#[test]
fn a_run_waiting_for_its_turn_keeps_its_place() {
    let sh = shell();
    let first_place = sh.reserve().unwrap();
    let mut second = Run::new(&*sh, sh.reserve().unwrap(), RunOptions::new("echo second"));
    assert!(second.drive(soon(30), &mut |_| {}).is_pending());
    let first = sh
        .run_in_place(first_place, RunOptions::new("echo first"), |_| {})
        .unwrap();
    assert_eq!(first.output, "first\n");
    let Poll::Ready(result) = second.drive(None, &mut |_| {}) else {
        unreachable!()
    };
    assert_eq!(result.unwrap().output, "second\n");
}

/// How a face cancels a run between steps (Ctrl-C in Python, a cancelled
/// task): the token fires while the run waits for its turn, and the next
/// step ends it at once, well within the 3 s the run ahead holds the
/// session.
#[test]
fn a_run_cancelled_while_waiting_for_its_turn_ends_at_its_next_step() {
    let sh = shell();
    let holder = crate::session::hold_for_3s(&sh);
    let cancel = CancelToken::new();
    let mut opts = RunOptions::new("echo never");
    opts.cancel = Some(cancel.clone());
    let mut run = Run::new(&*sh, sh.reserve().unwrap(), opts);
    assert!(run.drive(soon(30), &mut |_| {}).is_pending());
    cancel.cancel();
    let cancelled = Instant::now();
    let Poll::Ready(result) = run.drive(soon(HANG.as_millis() as u64), &mut |_| {}) else {
        panic!("a cancelled run still waits")
    };
    let took = cancelled.elapsed();
    assert!(took < Duration::from_secs(1), "ended after {took:?}");
    let result = result.unwrap();
    assert!(result.cancelled, "{result:?}");
    assert_eq!(result.output, "[Command cancelled]\n");
    assert_eq!(holder.join().unwrap().output, "holding\n");
    let next = sh.run(RunOptions::new("echo next"), |_| {}).unwrap();
    assert_eq!(next.output, "next\n");
}

#[test]
fn dropping_an_unfinished_run_stops_its_command_and_keeps_the_session() {
    let sh = shell();
    sh.run(RunOptions::new("cd /tmp; x=kept"), |_| {}).unwrap();
    let mut run = Run::new(&*sh, sh.reserve().unwrap(), RunOptions::new("sleep 100"));
    assert!(run.drive(soon(50), &mut |_| {}).is_pending());
    let dropped = Instant::now();
    drop(run);
    assert!(dropped.elapsed() < HANG);
    let after = sh.run(RunOptions::new("echo $x; pwd"), |_| {}).unwrap();
    assert_eq!(after.output, "kept\n/tmp\n");
    assert!(!after.session_reset);
}

#[test]
fn a_cancel_from_the_callback_of_a_quick_command_leaves_the_session_working() {
    let sh = shell();
    for _ in 0..20 {
        let token = CancelToken::new();
        let mut opts = RunOptions::new("echo hi");
        opts.cancel = Some(token.clone());
        sh.run(opts, |_| token.cancel()).unwrap();
        let after = sh.run(RunOptions::new("echo after"), |_| {}).unwrap();
        assert_eq!(
            (after.output.as_str(), after.exit_code),
            ("after\n", Some(0))
        );
    }
}
