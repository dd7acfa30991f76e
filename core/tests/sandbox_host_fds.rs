//! A sandboxed session starts, and its sandbox holds, whatever descriptor
//! numbers the host has taken: the host opens the sandbox's own (the
//! Landlock ruleset, each cgroup's `cgroup.procs`) where numbers are free,
//! which may be numbers the child is given (its protocol descriptors).
//! Alone in its binary: it fills the process's descriptor table.
#![cfg(target_os = "linux")]

use std::fs::File;

use conch_core::{Limits, RunOptions, Sandbox, Shell, ShellOptions, Snapshot};

#[test]
fn a_sandbox_holds_whichever_descriptors_the_host_has_open() {
    let null = File::open("/dev/null").unwrap();
    let mut held = Vec::new();
    // One more descriptor each round moves the sandbox's own across every
    // number the child is given (0 to 2, the protocol's 60 to 63).
    for taken in 0..72 {
        let sh = Shell::new(ShellOptions {
            snapshot: Snapshot::None,
            cwd: Some(std::env::temp_dir()),
            sandbox: Some(Sandbox {
                limits: Limits {
                    processes: Some(64),
                    ..Limits::default()
                },
                ..Sandbox::default()
            }),
            ..ShellOptions::default()
        })
        .unwrap_or_else(|e| panic!("with {taken} more descriptors open: {e}"));
        let r = sh
            .run(
                RunOptions::new("grep pids /proc/self/cgroup | cut -d: -f3"),
                |_| {},
            )
            .unwrap_or_else(|e| panic!("with {taken} more descriptors open: {e}"));
        assert!(
            r.output.contains("sandbox-"),
            "with {taken} more descriptors open, bash is not in the session's cgroup: {:?}",
            r.output
        );
        drop(sh);
        held.push(null.try_clone().unwrap());
    }
}
