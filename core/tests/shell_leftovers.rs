//! Nothing holding a session's variables outlives the moment it is needed
//! in conch's private directory: the state a job or a backgrounded run's
//! successor starts from is gone once started, and the files a killed host
//! could not remove are removed by the next host's first use of the
//! directory. Alone in its binary: that sweep runs once a process.

mod common;

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::wait_until;
use conch_core::{JobOptions, RunOptions, Shell, ShellOptions};

/// The private directory, as conch names it.
fn private_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("conch-{}", rustix::process::getuid().as_raw()));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    dir
}

/// The files of this process in `dir` (their names carry its pid).
fn ours(dir: &Path) -> Vec<String> {
    let tag = format!("-{}-", std::process::id());
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(&tag) && !name.starts_with("sandbox-"))
        .collect()
}

#[test]
fn state_files_go_once_started_and_a_gone_hosts_files_are_swept() {
    let dir = private_dir();
    // A pid that names no process (reaped), one that names a live one.
    let gone = Command::new("/bin/true").spawn().unwrap();
    let gone_pid = gone.id();
    assert!(Command::new("/bin/true").status().unwrap().success());
    let mut gone = gone;
    gone.wait().unwrap();
    let mut live = Command::new("/bin/sleep").arg("60").spawn().unwrap();
    let left = [
        format!("job-{gone_pid}-0"),
        format!("session-{gone_pid}-3"),
        format!("cmd-{gone_pid}-99.sh"),
    ];
    let kept = format!("job-{}-0", live.id());
    for name in left.iter().chain([&kept]) {
        std::fs::write(dir.join(name), "declare -x SECRET=1\n").unwrap();
    }
    let kept_dir = dir.join(format!("sandbox-{gone_pid}-0"));
    let _ = std::fs::create_dir(&kept_dir);

    // The first use of the directory (the rc snapshot) sweeps it.
    let sh = Shell::new(ShellOptions::default()).unwrap();
    sh.run(RunOptions::new("true"), |_| {}).unwrap();
    for name in &left {
        assert!(!dir.join(name).exists(), "{name} outlived its host");
    }
    assert!(dir.join(&kept).exists(), "a live host's file was removed");
    assert!(kept_dir.is_dir(), "a directory was removed");

    // A run moved to the background: the new bash got the session's
    // state in its start-up text, not in a file.
    let r = sh
        .run(
            RunOptions {
                yield_after: Some(Duration::from_millis(100)),
                ..RunOptions::new("/bin/sleep 30")
            },
            |_| {},
        )
        .unwrap();
    assert!(r.backgrounded.is_some(), "{}", r.output);
    assert_eq!(ours(&dir), Vec::<String>::new());
    // A job: its state file is gone once it has started, not at its end.
    sh.run(RunOptions::new("export CARRIED=yes"), |_| {})
        .unwrap();
    let job = sh
        .start(JobOptions::new("echo $CARRIED; /bin/sleep 30"))
        .unwrap();
    assert_eq!(ours(&dir), Vec::<String>::new());
    // The state reached both.
    let out = sh.run(RunOptions::new("echo $CARRIED"), |_| {}).unwrap();
    assert_eq!(out.output, "yes\n");
    assert!(wait_until(Duration::from_secs(10), || {
        sh.poll(job, &Default::default(), None)
            .is_ok_and(|p| p.output.contains("yes"))
    }));

    drop(sh);
    let _ = live.kill();
    let _ = live.wait();
    let _ = std::fs::remove_file(dir.join(&kept));
    let _ = std::fs::remove_dir(&kept_dir);
}
