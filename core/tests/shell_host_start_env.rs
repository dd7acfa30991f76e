//! The host's `BASH_ENV`, `SHELLOPTS` and `BASHOPTS` reach no bash's
//! start-up: not the rc snapshot's capture (under the host's `noexec` it
//! would run nothing, and no snapshot would come), nor a session's or a
//! one-shot command's bash. Alone in its binary: it sets them in the
//! process's environment.

use std::path::Path;

use conch_core::shell::snapshot;
use conch_core::{ExecuteOptions, RunOptions, Shell, ShellOptions, Snapshot, execute_shell};

#[test]
fn the_host_s_start_up_variables_reach_no_bash() {
    let dir = std::env::temp_dir().join(format!("conch-host-start-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sourced = dir.join("sourced.sh");
    std::fs::write(&sourced, "echo sourced\n").unwrap();
    let rc = dir.join(".bashrc");
    std::fs::write(&rc, "alias hi='echo hi'\n").unwrap();
    // SAFETY: the only test of this binary, before it starts any thread.
    unsafe {
        std::env::set_var("BASH_ENV", &sourced);
        std::env::set_var("SHELLOPTS", "noexec");
        std::env::set_var("BASHOPTS", "xpg_echo");
    }

    let snap = snapshot::for_rc(Path::new("/bin/bash"), &rc).expect("a snapshot");
    let sh = Shell::new(ShellOptions {
        snapshot: Snapshot::Path(snap),
        ..ShellOptions::default()
    })
    .unwrap();
    let show = "hi; echo ${BASH_ENV-unset}; shopt -q xpg_echo || echo no-xpg_echo";
    let r = sh.run(RunOptions::new(show), |_| {}).unwrap();
    assert_eq!(r.output, "hi\nunset\nno-xpg_echo\n");

    let r = execute_shell(
        ExecuteOptions {
            command: "echo ok ${BASH_ENV-unset}".into(),
            ..ExecuteOptions::default()
        },
        |_| {},
    )
    .unwrap();
    assert_eq!(r.output, "ok unset\n");
    let _ = std::fs::remove_dir_all(&dir);
}
