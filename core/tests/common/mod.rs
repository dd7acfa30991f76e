//! Helpers shared by the engine's integration tests: finding processes in
//! the real process table, waiting with a bound.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Pids of live `sleep` processes whose argument is exactly `marker` (a
/// unique duration), so shells that merely mention it do not count.
pub fn procs_with(marker: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline);
        let args: Vec<&str> = text.split('\0').filter(|a| !a.is_empty()).collect();
        let is_it = args.len() == 2 && args[0].ends_with("sleep") && args[1] == marker;
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .map(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if is_it && !zombie && pid != std::process::id() as i32 {
            out.push(pid);
        }
    }
    out
}

/// Polls `cond` every 10 ms until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

/// A unique `/bin/sleep` duration, so a test can find its own sleeps.
pub fn unique_sleep(base: u32) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(1);
    let n = N.fetch_add(1, Ordering::SeqCst);
    format!("{base}.{:03}{:05}", n, std::process::id() % 100000)
}

/// Zombie children of this process.
pub fn zombie_children() -> usize {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|s| {
            s.rsplit_once(')').is_some_and(|(_, r)| {
                let mut f = r.split_whitespace();
                f.next() == Some("Z") && f.next() == Some(me.as_str())
            })
        })
        .count()
}

/// Open descriptors of this process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}
