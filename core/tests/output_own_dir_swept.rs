//! The process's own artifacts directory (`ArtifactStore::process_default`)
//! outlives a host killed outright (a Ray worker at `ray.kill`), and the
//! next conch host of the user removes it, while a live host's stays.
//! Alone in its binary: the removal happens at the process's first use of
//! conch's private directory, once per process, and the test runs this
//! binary again as the hosts it kills.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use conch_core::ArtifactStore;

/// Set in the copies of this binary that play the other hosts.
const HOST: &str = "CONCH_TEST_OWN_DIR_HOST";

/// In a copy of this binary (`HOST` set): spills into its own directory,
/// prints it, and waits to be killed.
#[test]
#[ignore = "a host process of the other test"]
fn a_host_that_spills_and_waits() {
    if std::env::var_os(HOST).is_none() {
        return;
    }
    let store = ArtifactStore::process_default();
    store.allocate("bash").unwrap();
    println!("dir={}", store.dir().display());
    std::thread::sleep(Duration::from_secs(60));
}

/// Another host: this binary, running the test above; its directory.
fn host() -> (Child, PathBuf) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "a_host_that_spills_and_waits",
            "--nocapture",
        ])
        .env(HOST, "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let dir = lines
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("dir=").map(PathBuf::from))
        .expect("the host names its directory");
    (child, dir)
}

#[test]
fn a_killed_host_s_own_directory_is_removed_by_the_next_host_and_a_live_one_s_stays() {
    let (mut killed, killed_dir) = host();
    let (mut live, live_dir) = host();
    assert!(
        killed_dir.join(".lock").is_file(),
        "{}",
        killed_dir.display()
    );
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(killed_dir.is_dir(), "a kill leaves it behind");

    // This process's first use of conch's private directory.
    let own = ArtifactStore::process_default();
    assert!(!killed_dir.exists(), "{} is left", killed_dir.display());
    assert!(live_dir.join("0.bash.log").is_file(), "a live host's stays");

    // The store takes its lock again when its directory was removed.
    own.allocate("bash").unwrap();
    std::fs::remove_dir_all(own.dir()).unwrap();
    own.allocate("bash").unwrap();
    assert!(own.dir().join(".lock").is_file());

    live.kill().unwrap();
    live.wait().unwrap();
    std::fs::remove_dir_all(&live_dir).unwrap();
}
