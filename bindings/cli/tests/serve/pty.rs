//! A remote pty session (the local `PtySession`'s calls over the wire) and
//! artifact reads by range of a remote shell.

use std::sync::mpsc;
use std::time::Duration;

use conch_core::CancelToken;
use conch_core::pty::PtyResult;
use conch_remote::protocol::ErrorKind;
use conch_remote::{RemoteError, RemotePty};
use serde_json::{Value, json};

use super::{options, stdio, wait_sleeping};
use crate::common::unique_sleep;

/// How long a test waits for a prompt before it fails.
const HANG: Duration = Duration::from_secs(60);

/// Starts `command` on `pty` on a thread of its own, waits until its
/// output holds `prompt`, then does `then` while it runs; the run's result.
fn while_running(
    pty: &RemotePty,
    opts: Value,
    cancel: Option<CancelToken>,
    prompt: &str,
    then: impl FnOnce(),
) -> PtyResult {
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<String>();
        let run = scope.spawn(move || {
            pty.start(options(opts), cancel, |text| {
                let _ = tx.send(text.to_string());
            })
        });
        let mut seen = String::new();
        while !seen.contains(prompt) {
            match rx.recv_timeout(HANG) {
                Ok(text) => seen.push_str(&text),
                Err(e) => panic!("no {prompt:?} within {HANG:?} ({e}), saw {seen:?}"),
            }
        }
        then();
        run.join().unwrap().unwrap()
    })
}

#[test]
fn a_remote_terminal_reads_input_and_shows_its_screen() {
    let remote = stdio(&[]);
    let pty = remote.pty().unwrap();
    let result = while_running(
        &pty,
        json!({"command": "printf 'name? '; read -r line; echo \"got [$line]\"", "cols": 40}),
        None,
        "name? ",
        || {
            assert!(pty.is_running().unwrap());
            assert_eq!(pty.cursor_position().unwrap(), (0, 6));
            pty.write("héllo\r".as_bytes()).unwrap()
        },
    );
    assert!(!pty.is_running().unwrap());
    assert_eq!(pty.size().unwrap(), (40, 24));
    assert_eq!((result.exit_code, result.cancelled), (Some(0), false));
    assert!(result.summary.output.contains("got [héllo]"), "{result:?}");
    assert!(pty.screen_text().unwrap().contains("got [héllo]"));
    match pty.write(&[0xff, b'\n']) {
        Err(RemoteError::Core(conch_core::Error::InvalidArgument(m))) => {
            assert_eq!(m, "input for a remote terminal must be UTF-8 text")
        }
        other => panic!("non-UTF-8 input is refused: {other:?}"),
    }
    // As locally: nothing runs.
    match pty.write_key("enter") {
        Err(RemoteError::Core(conch_core::Error::InvalidArgument(m))) => {
            assert_eq!(m, "PTY session is not running")
        }
        other => panic!("InvalidArgument, as locally: {other:?}"),
    }
    pty.close().unwrap();
}

#[test]
fn a_key_interrupts_and_a_resize_is_seen_by_the_program() {
    let remote = stdio(&[]);
    let pty = remote.pty().unwrap();
    let nap = unique_sleep(1101);
    let result = while_running(
        &pty,
        json!({"command": format!("echo go; /bin/sleep {nap}")}),
        None,
        "go",
        || {
            wait_sleeping(&nap, true);
            pty.write_key("ctrl+c").unwrap()
        },
    );
    assert_eq!((result.exit_code, result.cancelled), (Some(130), false));
    wait_sleeping(&nap, false);

    let result = while_running(
        &pty,
        json!({"command": "echo go; read -r x; stty size"}),
        None,
        "go",
        || {
            pty.resize(100, 30).unwrap();
            pty.write(b"\r").unwrap();
        },
    );
    assert!(result.summary.output.contains("30 100"), "{result:?}");
    match pty.write_key("nope") {
        Err(RemoteError::Core(conch_core::Error::InvalidArgument(_))) => {}
        other => panic!("a bad key name is refused as locally: {other:?}"),
    }
}

#[test]
fn kill_cancel_and_close_stop_the_remote_command() {
    let remote = stdio(&[]);
    let pty = remote.pty().unwrap();
    let nap = unique_sleep(1102);
    let result = while_running(
        &pty,
        json!({"command": format!("echo go; /bin/sleep {nap}")}),
        None,
        "go",
        || {
            wait_sleeping(&nap, true);
            pty.kill().unwrap()
        },
    );
    assert_eq!((result.exit_code, result.cancelled), (None, true));
    assert!(result.summary.output.starts_with("[Command cancelled]"));
    wait_sleeping(&nap, false);

    let token = CancelToken::new();
    let nap = unique_sleep(1103);
    let result = while_running(
        &pty,
        json!({"command": format!("echo go; /bin/sleep {nap}")}),
        Some(token.clone()),
        "go",
        || {
            wait_sleeping(&nap, true);
            token.cancel()
        },
    );
    assert_eq!((result.exit_code, result.cancelled), (None, true));
    wait_sleeping(&nap, false);

    let nap = unique_sleep(1104);
    let command = json!({"command": format!("/bin/sleep {nap}")});
    std::thread::scope(|scope| {
        let run = scope.spawn(|| pty.start(options(command), None, |_| {}));
        wait_sleeping(&nap, true);
        pty.close().unwrap();
        wait_sleeping(&nap, false);
        // Its reply came before the session closed, or the session is gone.
        match run.join().unwrap() {
            Ok(result) => assert!(result.cancelled),
            Err(RemoteError::SessionLost(_)) => {}
            Err(other) => panic!("the start ends with the session: {other:?}"),
        }
    });
}

#[test]
fn start_options_are_read_on_the_server() {
    let remote = stdio(&[]);
    let pty = remote.pty().unwrap();
    match pty.start(
        options(json!({"command": "true", "cols": "wide"})),
        None,
        |_| {},
    ) {
        Err(RemoteError::Refused {
            kind: ErrorKind::WrongType,
            message,
        }) => assert!(message.starts_with("cols"), "{message}"),
        other => panic!("a wrong type is refused by the core's reader: {other:?}"),
    }
    let result = pty
        .start(options(json!({"command": "exit 3"})), None, |_| {})
        .unwrap();
    assert_eq!(result.exit_code, Some(3));
}

#[test]
fn a_spilled_output_is_read_back_by_range_on_the_server() {
    let dir = std::env::temp_dir().join(format!("conch-serve-artifacts-{}", std::process::id()));
    let remote = stdio(&[]);
    let sh = remote
        .shell(options(json!({"snapshot": "none", "max_bytes": 100,
                              "artifacts_dir": dir.to_str().unwrap()})))
        .unwrap();
    let result = sh
        .run(conch_core::RunOptions::new("seq 1 5000"), |_| {})
        .unwrap();
    let id = result
        .summary
        .artifact_id
        .clone()
        .expect("the output spilled");
    let store = sh.artifacts();
    assert_eq!(store.read(&id, 10, Some(3)).unwrap(), "11\n12\n13\n");
    let url = format!("artifact://{id}");
    assert_eq!(store.read(&url, 4998, None).unwrap(), "4999\n5000\n");
    let whole: String = (1..=5000).map(|n| format!("{n}\n")).collect();
    assert_eq!(store.resolve(&url).unwrap(), whole);
    match store.read("999", 0, None) {
        Err(RemoteError::Core(conch_core::Error::NotFound(m))) => assert!(m.contains("999"), "{m}"),
        other => panic!("NotFound, as locally: {other:?}"),
    }
    match store.read(&id, 6000, None) {
        Err(RemoteError::Core(conch_core::Error::InvalidArgument(m))) => {
            assert!(m.contains("5000"), "the line count is told: {m}")
        }
        other => panic!("InvalidArgument, as locally: {other:?}"),
    }
    // Another session reads its own store (the server's default: `null`).
    let other = remote
        .shell(options(json!({"snapshot": "none", "artifacts_dir": null})))
        .unwrap();
    match other.artifacts().read(&format!("{id}999"), 0, None) {
        Err(RemoteError::Core(conch_core::Error::NotFound(_))) => {}
        other => panic!("NotFound in the other session's store: {other:?}"),
    }
    sh.close().unwrap();
    match store.read(&id, 0, None) {
        Err(RemoteError::SessionLost(_)) => {}
        other => panic!("a closed session's store reads nothing: {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
