//! The process's own artifacts directory (`ArtifactStore::process_default`)
//! outlives a host killed outright (a Ray worker at `ray.kill`), and the
//! next conch host of the user removes it, while a live host's stays.
//! Alone in its binary: the removal happens at the process's first use of
//! conch's private directory, once per process, and the test runs this
//! binary again as the hosts it kills and as the next host. They share a
//! temporary directory of their own (`TMPDIR`): any other conch process on
//! the machine (another test suite running at once) sweeps the shared one,
//! and would remove the killed host's directory before the next host does.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use conch_core::ArtifactStore;

/// Set in the copies of this binary that play the other hosts: `wait` (a
/// host that spills and waits to be killed) or `next` (the next host).
const HOST: &str = "CONCH_TEST_OWN_DIR_HOST";

/// In a copy of this binary (`HOST` set): spills into its own directory,
/// prints it, and (`wait`) waits to be killed or (`next`) exits.
#[test]
#[ignore = "a host process of the other test"]
fn a_host_that_spills() {
    let Some(role) = std::env::var_os(HOST) else {
        return;
    };
    let store = ArtifactStore::process_default();
    store.allocate("bash").unwrap();
    println!("dir={}", store.dir().display());
    if role == "wait" {
        std::thread::sleep(Duration::from_secs(60));
    }
}

/// Another host: this binary, running the test above in `role` with `tmp`
/// as its temporary directory; its directory.
fn host(role: &str, tmp: &Path) -> (Child, PathBuf) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "a_host_that_spills", "--nocapture"])
        .env(HOST, role)
        .env("TMPDIR", tmp)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let dir = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("dir=").map(PathBuf::from))
        .expect("the host names its directory");
    // The rest of what it prints (the test harness's lines as it ends).
    std::thread::spawn(move || lines.for_each(drop));
    (child, dir)
}

#[test]
fn a_killed_host_s_own_directory_is_removed_by_the_next_host_and_a_live_one_s_stays() {
    let tmp = std::env::temp_dir().join(format!("conch-own-dir-swept-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let (mut killed, killed_dir) = host("wait", &tmp);
    let (mut live, live_dir) = host("wait", &tmp);
    assert!(
        killed_dir.join(".lock").is_file(),
        "{}",
        killed_dir.display()
    );
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(killed_dir.is_dir(), "a kill leaves it behind");

    // The next host's first use of conch's private directory.
    let (mut next, next_dir) = host("next", &tmp);
    assert!(next.wait().unwrap().success());
    assert!(!killed_dir.exists(), "{} is left", killed_dir.display());
    assert!(live_dir.join("0.bash.log").is_file(), "a live host's stays");
    assert!(!next_dir.exists(), "a normal exit removes its own");

    live.kill().unwrap();
    live.wait().unwrap();
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn the_store_takes_its_lock_again_when_its_directory_was_removed() {
    let own = ArtifactStore::process_default();
    own.allocate("bash").unwrap();
    std::fs::remove_dir_all(own.dir()).unwrap();
    own.allocate("bash").unwrap();
    assert!(own.dir().join(".lock").is_file());
}
