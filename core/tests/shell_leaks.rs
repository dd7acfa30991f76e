//! Many sessions leave no descriptor, thread or zombie behind. Alone in its
//! binary, so no other test opens descriptors or starts threads meanwhile.

mod common;

use common::{HANG, open_fds, threads, wait_until, zombie_children};
use conch_core::shell::{RunOptions, Shell, ShellOptions, Snapshot};

/// What may differ by chance (a descriptor or thread the test harness opens
/// on its own); a leak per session would be a hundred.
const SLACK: usize = 2;

fn shell() -> Shell {
    Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        ..ShellOptions::default()
    })
    .unwrap()
}

#[test]
fn many_sessions_leak_no_fds_threads_or_zombies() {
    // Warm up process-wide state (the spawner thread) before counting.
    drop(shell());
    let (fds_before, threads_before) = (open_fds(), threads());
    let shells: Vec<Shell> = (0..100).map(|_| shell()).collect();
    std::thread::scope(|s| {
        for sh in &shells {
            s.spawn(move || {
                let r = sh
                    .run(RunOptions::new("/bin/echo hi; /bin/true & wait"), |_| {})
                    .unwrap();
                assert_eq!(r.output, "hi\n");
            });
        }
    });
    drop(shells);
    assert!(
        wait_until(HANG, || zombie_children() == 0),
        "{} zombies",
        zombie_children()
    );
    // A joined thread may linger in /proc for a moment.
    assert!(
        wait_until(HANG, || threads() <= threads_before + SLACK),
        "threads: {threads_before} -> {}",
        threads()
    );
    assert!(
        open_fds() <= fds_before + SLACK,
        "descriptors: {fds_before} -> {}",
        open_fds()
    );
}
