//! Many PTY runs in a row: no output lost at exit, exit codes exact, and no
//! descriptor or child process left behind (the host's guard aside, started
//! by the warm-up run). Alone in its binary, so the
//! descriptor count is not disturbed by other tests.

use std::time::Instant;

use conch_core::pty::{PtyOptions, PtySession};

const RUNS: usize = 1_000;
const BYTES: usize = 20_000;
const THREADS: usize = 8;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Children of this process, but for the host's guard, which lives as
/// long as the host (`process::lifeline`).
fn child_processes() -> Vec<String> {
    let guard = conch_core::process::lifeline::guard_pid().map(|p| p.to_string());
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        out.extend(children.split_whitespace().map(str::to_string));
    }
    out.retain(|p| Some(p) != guard.as_ref());
    out
}

#[test]
fn every_byte_and_exit_code_over_many_runs() {
    let pty = PtySession::new();
    let command = format!("head -c {BYTES} /dev/zero | tr '\\0' x; exit 7");
    // Warm up (first-use allocations, lazily opened descriptors).
    pty.start(PtyOptions::new(command.as_str()), |_| {})
        .unwrap();
    let fds_before = open_fds();
    let started = Instant::now();
    for i in 0..RUNS {
        let mut streamed = 0;
        let r = pty
            .start(PtyOptions::new(command.as_str()), |c| {
                streamed += c.bytes().filter(|&b| b == b'x').count()
            })
            .unwrap();
        assert_eq!(r.exit_code, Some(7), "run {i}: {r:?}");
        assert_eq!(streamed, BYTES, "run {i}: chunks");
        assert_eq!(r.summary.total_bytes, BYTES as u64, "run {i}: sink total");
        assert_eq!(
            r.summary.output.bytes().filter(|&b| b == b'x').count(),
            BYTES,
            "run {i}: sink output"
        );
    }
    let elapsed = started.elapsed();
    eprintln!(
        "{RUNS} PTY runs in {elapsed:?} ({:?} per run)",
        elapsed / RUNS as u32
    );

    // The same from several threads at once, one session each.
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let command = &command;
            s.spawn(move || {
                let pty = PtySession::new();
                for i in 0..RUNS / THREADS / 4 {
                    let r = pty
                        .start(PtyOptions::new(command.as_str()), |_| {})
                        .unwrap();
                    assert_eq!(r.exit_code, Some(7), "thread {t} run {i}: {r:?}");
                    assert_eq!(r.summary.total_bytes, BYTES as u64, "thread {t} run {i}");
                }
            });
        }
    });
    assert_eq!(open_fds(), fds_before, "descriptors leaked");
    assert_eq!(child_processes(), Vec::<String>::new(), "children left");
}
