//! The sink at the end of real bash runs, a session's and a one-shot
//! `execute_shell`'s: head and tail limits of the complete stream, and when
//! a run has an artifact.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use conch_core::artifact::ArtifactStore;
use conch_core::shell::{
    BashResult, ExecuteOptions, RunOptions, Shell, ShellOptions, Snapshot, execute_shell,
};

/// A fresh directory path under the system temp dir (not created).
fn temp_dir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "conch-output-runs-{}-{name}-{n}",
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// Runs a command with line limits (head, tail).
type Runner = Box<dyn Fn(&str, Option<usize>, Option<usize>) -> BashResult>;

/// A persistent session's runs, and one-shot runs, spilling into `dir`.
fn runners(dir: &Path) -> [(&'static str, Runner); 2] {
    let shell = Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        artifacts: Some(ArtifactStore::new(dir)),
        ..ShellOptions::default()
    })
    .unwrap();
    let store = ArtifactStore::new(dir);
    [
        (
            "session",
            Box::new(move |command, head, tail| {
                let mut opts = RunOptions::new(command);
                (opts.head_lines, opts.tail_lines) = (head, tail);
                shell.run(opts, |_| {}).unwrap()
            }),
        ),
        (
            "execute_shell",
            Box::new(move |command, head, tail| {
                let opts = ExecuteOptions {
                    command: command.to_string(),
                    artifacts: Some(store.clone()),
                    head_lines: head,
                    tail_lines: tail,
                    ..ExecuteOptions::default()
                };
                execute_shell(opts, |_| {}).unwrap()
            }),
        ),
    ]
}

/// `head` and `tail` print what `cmd | head -n H | tail -n T` prints,
/// though the head is longer than the 50 KiB the sink keeps of it; when
/// those lines do not fit either, the last of them that fit.
#[test]
fn a_tail_of_a_head_longer_than_max_bytes_is_that_of_the_complete_stream() {
    let dir = temp_dir("head-tail");
    for (name, run) in runners(&dir) {
        let piped = run("seq 1 20000 | head -n 15000 | tail -n 2", None, None);
        assert_eq!(piped.output, "14999\n15000\n", "{name}");
        let r = run("seq 1 20000", Some(15000), Some(2));
        assert_eq!(r.output, piped.output, "{name}: {r:?}");
        assert_eq!((r.output_lines, r.output_bytes), (2, 12), "{name}");
        assert!(r.truncated, "{name}");
        assert_eq!(r.exit_code, Some(0), "{name}");
        let id = r.artifact_id.as_deref().expect("the stream spilled");
        let head_end = ArtifactStore::new(&dir).read(id, 14_998, Some(2)).unwrap();
        assert_eq!(
            head_end, r.output,
            "{name}: the artifact is the whole stream"
        );

        // 10000 lines of 5 and 6 bytes, more than the 51,200 bytes kept:
        // the last of them that fit, as the pipeline's own output is kept.
        let piped = run("seq 1 20000 | head -n 15000 | tail -n 10000", None, None);
        assert!(piped.truncated, "{name}");
        let r = run("seq 1 20000", Some(15000), Some(10000));
        assert_eq!(r.output, piped.output, "{name}");
        assert!(r.output.ends_with("\n14999\n15000\n"), "{name}");
        assert!(r.output.len() > 51_200 - 6, "{name}: {}", r.output.len());
        assert!(r.truncated, "{name}");
        assert_eq!(
            (r.output_lines, r.output_bytes),
            (piped.output_lines, piped.output_bytes),
            "{name}"
        );
    }
    let _ = fs::remove_dir_all(&dir);
}

/// A redrawn line alone opens no artifact: a progress bar whose output
/// fits leaves no file, like any output that fits.
#[test]
fn a_redrawn_line_that_fits_has_no_artifact() {
    let dir = temp_dir("redrawn");
    for (name, run) in runners(&dir) {
        let r = run(r"printf '10%%\r20%%\r30%%\n'", None, None);
        assert_eq!(r.output, "30%\n", "{name}");
        assert!(!r.truncated, "{name}");
        assert_eq!(r.artifact_id, None, "{name}");
    }
    let files = fs::read_dir(&dir).map_or(0, |entries| entries.count());
    assert_eq!(files, 0, "files in {dir:?}");
    let _ = fs::remove_dir_all(&dir);
}
