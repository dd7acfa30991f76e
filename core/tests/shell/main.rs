//! Integration tests of `conch_core::shell` with real bash: the persistent
//! `Shell`, one-shot `execute_shell`, containment of what commands start,
//! and fidelity to `bash -c`. A new test of them goes in a module here:
//!
//! - `session`: state, framing, death and respawn, per-run scope;
//! - `artifacts`: where runs spill their full output (across processes too);
//! - `oneshot`: `execute_shell`;
//! - `containment`: background jobs, and kills of whole trees on abort,
//!   timeout and close;
//! - `fidelity`: the corpus of `tests/fidelity/` against `bash -c`;
//! - `hangs`: commands that would hold a run until its timeout, ended
//!   early with a notice;
//! - `interrupt`: timeouts and aborts that keep the shell and its state;
//! - `jobs`: what commands leave writing in the background, read as jobs;
//! - `no_terminal`: full-screen programs run without a terminal (stopped
//!   with a notice), and jobs on a terminal that wait for input;
//! - `mask`: secrets of the env given, masked in results, artifacts and jobs;
//! - `env`: the variables given to a session, a run and a one-shot command:
//!   a run's for that run only (POSIX mode too), and none that changes how
//!   bash starts;
//! - `plumbing`: what a command finds open (0, 1 and 2, none of the
//!   session's descriptors), from the session, a job, a one-shot run and a
//!   terminal;
//! - `reentry`: calls made from inside a run's own callback.
//!
//! The modules run in parallel threads of one process, so they find their
//! own processes by a unique marker (`common::unique_sleep`), never by
//! counting the process's children. Kept apart, each in a binary of its own
//! because it measures or owns something of the whole process:
//!
//! - `shell_leaks.rs` counts the process's descriptors, threads and zombie
//!   children;
//! - `shell_flood.rs` measures the process's memory (RSS high-water mark);
//! - `shell_registry.rs` uses the process-wide session registry, closing
//!   every session and counting them (`BashTool` goes through it too).

#[path = "../common/mod.rs"]
mod common;

mod artifacts;
mod containment;
mod env;
mod fidelity;
mod hangs;
mod interrupt;
mod job_steps;
mod jobs;
mod mask;
mod no_terminal;
mod oneshot;
mod plumbing;
mod reentry;
mod session;
mod started;
mod stepped;

/// A session without the user's rc snapshot: every test starts from a clean
/// bash.
fn clean_shell() -> conch_core::shell::Shell {
    use conch_core::shell::{Shell, ShellOptions, Snapshot};
    Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        ..ShellOptions::default()
    })
    .unwrap()
}

/// Whether `sh` runs the loop builtin rather than the eval loop (the test
/// command runs this suite under each: `CONCH_ENGINE`). Where the two
/// differ on purpose (the builtin runs a command as `bash -c` does, the
/// eval loop as `eval` inside its loop), a test checks each its own way.
fn runs_builtin(sh: &conch_core::shell::Shell) -> bool {
    sh.engine().unwrap() == conch_core::Engine::Builtin
}

/// Polls `job` of `sh`, waiting at most `wait` for its output or its end.
fn poll(
    sh: &conch_core::shell::Shell,
    job: conch_core::JobId,
    wait: std::time::Duration,
) -> conch_core::JobPoll {
    let opts = conch_core::PollOptions {
        wait,
        ..conch_core::PollOptions::default()
    };
    sh.poll(job, &opts, None).unwrap()
}

/// Polls `job` of `sh` until it has ended and its output is read whole, or
/// `deadline` has passed; returns the output read and the last poll.
fn poll_to_end(
    sh: &conch_core::shell::Shell,
    job: conch_core::JobId,
    deadline: std::time::Instant,
) -> (String, conch_core::JobPoll) {
    let mut output = String::new();
    loop {
        let p = poll(sh, job, common::HANG);
        output.push_str(&p.output);
        let ended = p.status != conch_core::JobStatus::Running && p.next_cursor >= p.total_bytes;
        if ended || std::time::Instant::now() > deadline {
            return (output, p);
        }
    }
}
