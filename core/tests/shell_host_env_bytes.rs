//! A host's variable whose value is not UTF-8 (a path in a legacy
//! encoding, raw bytes a tool exported) reaches the commands as the host's
//! own children get it: in a session, after a command's `exit` put a fresh
//! bash in its place (which gets its variables as start-up text), in a
//! one-shot command and on a terminal. Alone in its binary: it sets a
//! variable in the process's environment.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use conch_core::{
    ExecuteOptions, PtyOptions, PtySession, RunOptions, Shell, ShellOptions, Snapshot,
    execute_shell,
};

const NAME: &str = "CONCH_TEST_BYTES";
/// Not UTF-8, with the bytes a quoting must take care of.
const VALUE: &[u8] = b"\xff\xfe'q\\ \x01a\xc3";
/// `VALUE` as `od -An -v -tx1` prints it, spaces dropped.
const HEX: &str = "fffe27715c200161c3";
const SHOW: &str = "printf %s \"$CONCH_TEST_BYTES\" | od -An -v -tx1 | tr -d ' \\n'";

#[test]
fn a_host_variable_that_is_not_utf8_reaches_every_command() {
    // SAFETY: the only test of this binary, before it starts any thread.
    unsafe { std::env::set_var(NAME, OsStr::from_bytes(VALUE)) };

    let sh = Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        ..ShellOptions::default()
    })
    .unwrap();
    assert_eq!(sh.run(RunOptions::new(SHOW), |_| {}).unwrap().output, HEX);
    let exited = sh.run(RunOptions::new("exit 3"), |_| {}).unwrap();
    assert!(exited.session_ended, "{exited:?}");
    let r = sh.run(RunOptions::new(SHOW), |_| {}).unwrap();
    assert_eq!(r.output, HEX, "after `exit`: {r:?}");
    // A bash that died: the next starts with the session's state, which
    // carries the variables.
    let killed = sh.run(RunOptions::new("kill -9 $$"), |_| {}).unwrap();
    assert!(killed.session_ended, "{killed:?}");
    let r = sh.run(RunOptions::new(SHOW), |_| {}).unwrap();
    assert!(r.session_reset, "{r:?}");
    assert_eq!(r.output, HEX, "after bash was killed: {r:?}");

    let r = execute_shell(
        ExecuteOptions {
            command: SHOW.into(),
            ..ExecuteOptions::default()
        },
        |_| {},
    )
    .unwrap();
    assert_eq!(r.output, HEX);

    let r = PtySession::new()
        .start(
            PtyOptions {
                timeout: Some(Duration::from_secs(20)),
                ..PtyOptions::new(SHOW)
            },
            |_| {},
        )
        .unwrap();
    assert_eq!(r.summary.output.trim_end(), HEX, "{r:?}");
}
