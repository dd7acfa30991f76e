//! Integration tests of the opt-in sandbox (`ShellOptions.sandbox`) with
//! real bash and real processes:
//!
//! - `filesystem`: writes only under the cwd, `$TMPDIR` and the listed
//!   paths (Landlock), whatever tool or trick makes them;
//! - `network`: no socket but `AF_UNIX` (seccomp), allowed TCP ports
//!   (Landlock), and the same commands working without the sandbox;
//! - `limits`: per-process rlimits and per-session cgroup caps, the session
//!   surviving each;
//! - `escape`: what a sandboxed command does to lift its sandbox fails;
//! - `faces`: `execute_shell`, `PtySession`, jobs, the tool's definition.
//! - `session`: the session's own pipes, opened again by path.
//! - `namespaces`: what Landlock cannot see: modes, owners and times
//!   outside, the host's processes, the secrets.
//!
//! The fail-closed path (a kernel without Landlock, simulated) sets an
//! environment variable of the whole process: `sandbox_old_kernel.rs`.
//!
//! Linux: the sandbox they test is Landlock, seccomp, namespaces and
//! cgroups (macOS's Seatbelt profile is tested as text, in the library).
#![cfg(target_os = "linux")]

#[path = "../common/mod.rs"]
mod common;

mod domains;
mod escape;
mod faces;
mod filesystem;
mod limits;
mod namespaces;
#[path = "../../../tests/net/servers.rs"]
mod net;
mod network;
mod session;

use std::path::{Path, PathBuf};

use conch_core::{BashResult, Sandbox, Shell, ShellOptions, Snapshot};

/// A fresh directory for one test (its cwd), removed by the caller or left
/// in the system temp dir.
pub fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("conch-sandbox-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// A shell in `cwd` with `sandbox`, no snapshot.
pub fn shell(cwd: &Path, sandbox: Option<Sandbox>) -> Shell {
    Shell::new(ShellOptions {
        cwd: Some(cwd.to_path_buf()),
        snapshot: Snapshot::None,
        sandbox,
        ..ShellOptions::default()
    })
    .unwrap()
}

/// Runs `command`; returns its result.
pub fn run(shell: &Shell, command: &str) -> BashResult {
    shell
        .run(conch_core::RunOptions::new(command), |_| {})
        .unwrap()
}

/// `command`'s exit code and output.
pub fn out(shell: &Shell, command: &str) -> (Option<i32>, String) {
    let r = run(shell, command);
    (r.exit_code, r.output.clone())
}
