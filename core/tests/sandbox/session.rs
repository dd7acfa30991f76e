//! The session's own plumbing inside a sandbox: bash opens the host's pipe
//! ends again by path (a new output pipe after a run leaves a process
//! holding the old one, the pipes of the bash a command's `exit` starts in
//! its place), which a sandboxed bash cannot do through the host's `/proc`;
//! a reset starts a bash in the sandbox again.

use super::*;

#[test]
fn what_a_background_process_prints_later_stays_out_of_later_runs() {
    let dir = scratch("session-switch");
    let shell = shell(&dir, Some(Sandbox::default()));
    let r = run(&shell, "(/bin/sleep 1; echo late) & echo started");
    assert_eq!(r.output, "started\n");
    // The second run outlasts the background process's `echo`.
    let r = run(&shell, "echo hi; /bin/sleep 2; echo bye");
    assert_eq!(r.output, "hi\nbye\n", "{r:?}");
    assert_eq!(out(&shell, "echo next"), (Some(0), "next\n".into()));
    shell.close();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exit_starts_bash_again_in_place_with_the_sandbox() {
    let dir = scratch("session-exit");
    let shell = shell(&dir, Some(Sandbox::default()));
    let (_, before) = out(&shell, "echo $$");
    let r = run(&shell, "echo bye; exit 3");
    assert_eq!((r.exit_code, r.output.as_str()), (Some(3), "bye\n"));
    // The same process: bash was started again in place, not from the host.
    assert_eq!(out(&shell, "echo $$").1, before);
    let (code, text) = out(&shell, "touch /etc/conch-sandbox-exit; echo rc=$?");
    assert_eq!(
        (code, text.lines().last()),
        (Some(0), Some("rc=1")),
        "{text}"
    );
    assert!(!Path::new("/etc/conch-sandbox-exit").exists());
    shell.close();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_reset_starts_a_fresh_bash_in_the_same_sandbox() {
    let dir = scratch("session-reset");
    let shell = shell(&dir, Some(Sandbox::default()));
    let marker = crate::common::unique_sleep(902);
    run(&shell, &format!("X=1; cd /; /bin/sleep {marker} &"));
    assert!(crate::common::wait_until(crate::common::HANG, || {
        crate::common::procs_with(&marker).len() == 1
    }));
    for _ in 0..2 {
        // A sandboxed session forks no spare: each reset starts a bash.
        shell.reset().unwrap();
        assert!(crate::common::procs_with(&marker).is_empty());
        let (code, text) = out(
            &shell,
            "echo ${X-unset} $PWD; touch /etc/conch-sandbox-reset; echo rc=$?",
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(code, Some(0), "{text}");
        assert_eq!(lines[0], format!("unset {}", dir.display()));
        assert_eq!(lines.last(), Some(&"rc=1"), "the sandbox holds: {text}");
        run(&shell, "X=1");
    }
    assert!(!Path::new("/etc/conch-sandbox-reset").exists());
    shell.close();
    let _ = std::fs::remove_dir_all(&dir);
}
