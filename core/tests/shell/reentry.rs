//! Calls made from inside a run's own chunk callback: a typed error at
//! once, never a wait for a turn the callback itself holds.

use std::sync::Arc;
use std::sync::mpsc::channel;

use crate::common::HANG;
use conch_core::Error;
use conch_core::shell::{RunOptions, Shell};

fn shell() -> Arc<Shell> {
    Arc::new(crate::clean_shell())
}

/// Runs `body` on a thread and waits for it at most [`HANG`].
fn within_hang_guard<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = channel();
    std::thread::spawn(move || tx.send(body()));
    rx.recv_timeout(HANG).expect("the call hung")
}

#[test]
fn a_run_from_its_own_callback_is_refused_and_the_outer_run_goes_on() {
    let sh = shell();
    let (outer, nested) = within_hang_guard({
        let sh = sh.clone();
        move || {
            let mut nested = Vec::new();
            let outer = sh
                .run(RunOptions::new("echo one; echo two"), |_| {
                    nested.push(sh.run(RunOptions::new("echo inner"), |_| {}));
                })
                .unwrap();
            (outer, nested)
        }
    });
    assert_eq!(outer.output, "one\ntwo\n");
    assert_eq!(outer.exit_code, Some(0));
    assert!(!nested.is_empty());
    for result in nested {
        let err = result.unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        assert!(
            err.to_string().starts_with(
                "a run was started from inside a callback of a run on the same shell:"
            ),
            "{err}"
        );
    }
    // The session is unharmed, and the mark is gone once the run returned.
    let after = sh.run(RunOptions::new("echo after"), |_| {}).unwrap();
    assert_eq!(after.output, "after\n");
}

#[test]
fn another_shell_runs_from_a_callback() {
    let (sh, other) = (shell(), shell());
    let inner = within_hang_guard(move || {
        let mut inner = None;
        sh.run(RunOptions::new("echo outer"), |_| {
            inner = Some(other.run(RunOptions::new("echo inner"), |_| {}).unwrap());
        })
        .unwrap();
        inner
    });
    assert_eq!(inner.unwrap().output, "inner\n");
}

#[test]
fn close_from_a_callback_cancels_the_run_and_ends_the_session() {
    let sh = shell();
    let marker = crate::common::unique_sleep(90);
    let outer = within_hang_guard({
        let sh = sh.clone();
        let command = format!("echo started; /bin/sleep {marker}; echo never");
        move || {
            sh.run(RunOptions::new(command), |chunk| {
                if chunk.contains("started") {
                    // Neither waits for the run this callback is in.
                    assert!(sh.cwd().is_absolute());
                    sh.close();
                }
            })
            .unwrap()
        }
    });
    assert!(outer.cancelled, "{outer:?}");
    assert!(!outer.output.contains("never"));
    assert!(
        crate::common::procs_with(&marker).is_empty(),
        "the sleep died"
    );
    assert!(matches!(
        sh.run(RunOptions::new("true"), |_| {}),
        Err(Error::Closed(_))
    ));
}
