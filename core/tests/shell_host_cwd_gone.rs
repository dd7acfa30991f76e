//! A host whose current directory was removed (a test's scratch directory,
//! a checkout swept away) still runs commands in a directory named in full;
//! only a session or command that needs the host's directory gets an error,
//! and a clear one. Alone in its binary: it changes the process's current
//! directory.

use std::path::PathBuf;
use std::time::Duration;

use conch_core::{
    Error, ExecuteOptions, PtyOptions, PtySession, RunOptions, Shell, ShellOptions, Snapshot,
    execute_shell,
};

fn shell(cwd: Option<PathBuf>) -> conch_core::Result<Shell> {
    Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        cwd,
        ..ShellOptions::default()
    })
}

#[test]
fn a_host_without_a_current_directory_runs_in_one_named_in_full() {
    let gone = std::env::temp_dir().join(format!("conch-cwd-gone-{}", std::process::id()));
    std::fs::create_dir(&gone).unwrap();
    std::env::set_current_dir(&gone).unwrap();
    std::fs::remove_dir(&gone).unwrap();
    let tmp = std::env::temp_dir();

    let sh = shell(Some(tmp.clone())).unwrap();
    let r = sh.run(RunOptions::new("pwd"), |_| {}).unwrap();
    assert_eq!(r.output, format!("{}\n", tmp.display()));

    let r = execute_shell(
        ExecuteOptions {
            command: "pwd".into(),
            cwd: Some(tmp.clone()),
            ..ExecuteOptions::default()
        },
        |_| {},
    )
    .unwrap();
    assert_eq!(r.output, format!("{}\n", tmp.display()));

    let pty = PtySession::new();
    let r = pty
        .start(
            PtyOptions {
                cwd: Some(tmp.clone()),
                timeout: Some(Duration::from_secs(20)),
                ..PtyOptions::new("pwd")
            },
            |_| {},
        )
        .unwrap();
    assert_eq!(r.exit_code, Some(0), "{r:?}");

    // Without a directory, or with one relative to the host's: the error
    // says what is missing.
    for cwd in [None, Some(PathBuf::from("sub"))] {
        match shell(cwd.clone()) {
            Err(Error::Io { context, .. }) => {
                assert_eq!(context, "cannot read the current directory")
            }
            Err(other) => panic!("{cwd:?}: {other}"),
            Ok(_) => panic!("{cwd:?}: a session started in a removed directory"),
        }
    }
}
