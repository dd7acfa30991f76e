//! Where runs spill their full output: every run its own artifact, even
//! with two processes writing into one directory, and a private directory
//! per process when the host names none.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common::HANG;
use conch_core::artifact::ArtifactStore;
use conch_core::shell::{RunOptions, Shell, ShellOptions, Snapshot};

/// Commands each worker process runs.
const RUNS: usize = 100;
/// Lines each command prints: far more than the sink keeps, so each spills.
const LINES: usize = 40;

fn spilling_shell(artifacts: Option<ArtifactStore>) -> Shell {
    Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        max_bytes: 64,
        artifacts,
        ..ShellOptions::default()
    })
    .unwrap()
}

/// The text command `i` of worker `tag` prints (and its artifact holds).
fn expected(tag: &str, i: usize) -> String {
    (0..LINES)
        .map(|l| format!("{tag} run {i} line {l}\n"))
        .collect()
}

/// Not a test of its own: the worker process of
/// `two_processes_spilling_into_one_dir_never_share_an_artifact`, started
/// as this test binary with `--ignored --exact`. Prints `id` per run.
#[test]
#[ignore = "a worker process of another test"]
fn spill_worker() {
    let (Ok(dir), Ok(tag)) = (
        std::env::var("CONCH_TEST_SPILL_DIR"),
        std::env::var("CONCH_TEST_SPILL_TAG"),
    ) else {
        return;
    };
    let sh = spilling_shell(Some(ArtifactStore::open(dir).unwrap()));
    for i in 0..RUNS {
        let command = format!(
            "for l in $(seq 0 {}); do echo \"{tag} run {i} line $l\"; done",
            LINES - 1
        );
        let r = sh.run(RunOptions::new(command), |_| {}).unwrap();
        println!(
            "ARTIFACT {tag} {i} {}",
            r.artifact_id.clone().expect("spilled")
        );
    }
}

#[test]
fn two_processes_spilling_into_one_dir_never_share_an_artifact() {
    let dir = std::env::temp_dir().join(format!("conch-shared-spill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let workers: Vec<_> = ["a", "b"]
        .map(|tag| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--ignored",
                    "--exact",
                    "artifacts::spill_worker",
                    "--nocapture",
                ])
                .env("CONCH_TEST_SPILL_DIR", &dir)
                .env("CONCH_TEST_SPILL_TAG", tag)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .into();
    let mut ids = HashSet::new();
    let mut seen = 0;
    for worker in workers {
        let out = worker.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let Some(rest) = line.strip_prefix("ARTIFACT ") else {
                continue;
            };
            let [tag, i, id] = rest.split(' ').collect::<Vec<_>>()[..] else {
                panic!("bad line {line}");
            };
            assert!(ids.insert(id.to_string()), "artifact {id} handed out twice");
            let text = std::fs::read_to_string(dir.join(format!("{id}.bash.log"))).unwrap();
            assert_eq!(text, expected(tag, i.parse().unwrap()), "artifact {id}");
            seen += 1;
        }
    }
    assert_eq!(seen, 2 * RUNS);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Not a test of its own: the worker of
/// `without_a_named_directory_runs_spill_into_a_private_one`. Prints the
/// directory its run spilled into, then exits normally; a child it forks
/// (as a prefork server does) exits normally first and leaves the
/// directory to its parent.
#[test]
#[ignore = "a worker process of another test"]
fn default_spill_worker() {
    if std::env::var_os("CONCH_TEST_DEFAULT_SPILL").is_none() {
        return;
    }
    let sh = spilling_shell(ShellOptions::default().artifacts);
    let r = sh.run(RunOptions::new("seq 1 1000"), |_| {}).unwrap();
    let id = r.artifact_id.clone().expect("spilled by default");
    let dir = ArtifactStore::process_default().dir().to_path_buf();
    assert_eq!(
        std::fs::read_to_string(dir.join(format!("{id}.bash.log"))).unwrap(),
        (1..=1000).map(|n| format!("{n}\n")).collect::<String>()
    );
    // SAFETY: the child only calls `exit`, which runs the exit handlers.
    let child = unsafe { libc::fork() };
    if child == 0 {
        unsafe { libc::exit(0) };
    }
    let mut status = 0;
    assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
    assert!(
        dir.is_dir(),
        "a forked child's exit took its parent's directory"
    );
    println!("DIR {}", dir.display());
}

#[test]
fn without_a_named_directory_runs_spill_into_a_private_one() {
    let mut worker = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "artifacts::default_spill_worker",
            "--nocapture",
        ])
        .env("CONCH_TEST_DEFAULT_SPILL", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let done = crate::common::wait_until(HANG, || worker.try_wait().unwrap().is_some());
    assert!(done, "the worker hung");
    let out = worker.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let dir: PathBuf = stdout
        .lines()
        .find_map(|l| l.strip_prefix("DIR "))
        .expect("the worker names its directory")
        .into();
    assert!(dir.starts_with(std::env::temp_dir()), "{}", dir.display());
    assert!(
        !dir.exists(),
        "removed when the process exited: {}",
        dir.display()
    );
}

#[test]
fn runs_that_never_spill_touch_no_file_and_a_spill_reserves_the_next_id() {
    let dir = std::env::temp_dir().join(format!("conch-lazy-spill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sh = spilling_shell(Some(ArtifactStore::new(&dir)));
    for _ in 0..3 {
        let r = sh.run(RunOptions::new("echo short"), |_| {}).unwrap();
        assert_eq!(
            (r.output.as_str(), r.artifact_id.as_deref()),
            ("short\n", None)
        );
    }
    assert!(
        !dir.exists(),
        "no run spilled, so nothing was reserved: not even the directory"
    );
    let r = sh.run(RunOptions::new("seq 1 100"), |_| {}).unwrap();
    assert!(r.truncated);
    assert_eq!(r.artifact_id.as_deref(), Some("0"));
    assert_eq!(
        std::fs::read_to_string(dir.join("0.bash.log")).unwrap(),
        (1..=100).map(|n| format!("{n}\n")).collect::<String>()
    );
    let r = sh.run(RunOptions::new("echo short"), |_| {}).unwrap();
    assert_eq!(r.artifact_id, None);
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["0.bash.log"], "only the spilled stream has a file");
    std::fs::remove_dir_all(&dir).unwrap();
}
