//! Helpers shared by the engine's integration tests: finding processes and
//! threads in the real process table, waiting for output, waiting with a
//! bound, directories of a test's own. An area binary includes them with
//! `#[path = "../common/mod.rs"] mod common;` in its `main.rs`, a
//! single-file binary with `mod common;`.
#![allow(dead_code)]

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a test waits for something that takes milliseconds before it
/// calls it a hang: generous, so a busy machine never trips it.
pub const HANG: Duration = Duration::from_secs(10);

/// A timeout meant to cut a command: long enough that what the command
/// prints first (and what the test checks while it runs) has long happened
/// when it fires, even on a busy machine.
pub const CUT: Duration = Duration::from_secs(3);

/// The longest the default kill escalation takes once it starts: SIGINT, a
/// 500 ms grace, SIGTERM, a 500 ms grace, SIGKILL.
pub const ESCALATION: Duration = Duration::from_secs(1);

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

/// A background command whose `body` runs once the session's next run is
/// [`RELEASE`]: it is still running when the run that starts it returns,
/// however loaded the machine (what it printed before would be that
/// run's output). It waits while the file its run made is there; `$$` is
/// the session's bash, in the subshell too.
pub fn gated(body: &str) -> String {
    format!(
        ": > /tmp/conch-gate-$$; (while [ -e /tmp/conch-gate-$$ ]; do /bin/sleep 0.02; done; {body}) &"
    )
}

/// The run that lets a [`gated`] command go on: it removes the file.
pub const RELEASE: &str = "rm /tmp/conch-gate-$$";

/// Whether a process exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().to_string())
        })
        .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
}

/// Waits (up to [`HANG`]) for `pid` to be gone. A kill check asserts
/// [`alive`] before the kill, then this.
pub fn gone(pid: i32) -> bool {
    wait_until(HANG, || !alive(pid))
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

/// Threads of this process.
pub fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// The calling thread's id, as `/proc/self/task` names it.
#[cfg(target_os = "linux")]
pub fn thread_id() -> i32 {
    // SAFETY: gettid(2) has no preconditions.
    unsafe { libc::gettid() }
}

/// The system call thread `tid` of this process is blocked in: its number
/// and its six arguments. `None` while the thread runs (or is gone).
#[cfg(target_os = "linux")]
pub fn blocked_in(tid: i32) -> Option<(i64, [u64; 6])> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")).ok()?;
    let mut fields = text.split_whitespace();
    let nr = fields.next()?.parse().ok()?;
    let mut args = [0u64; 6];
    for arg in &mut args {
        *arg = u64::from_str_radix(fields.next()?.trim_start_matches("0x"), 16).ok()?;
    }
    Some((nr, args))
}

/// The number right after the first `label` in `text`.
pub fn number_after(text: &str, label: &str) -> i32 {
    let rest = &text[text
        .find(label)
        .unwrap_or_else(|| panic!("{label} in {text:?}"))
        + label.len()..];
    rest.trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Output seen so far through a chunk callback, with a way to wait for
/// text: what a test waits for instead of sleeping.
#[derive(Clone, Default)]
pub struct Seen(Arc<(Mutex<String>, Condvar)>);

impl Seen {
    pub fn push(&self, chunk: &str) {
        let (text, cond) = &*self.0;
        text.lock().unwrap().push_str(chunk);
        cond.notify_all();
    }

    /// Waits until the output contains `needle` (panics after [`HANG`]).
    pub fn wait_for(&self, needle: &str) {
        let (text, cond) = &*self.0;
        let deadline = Instant::now() + HANG;
        let mut guard = text.lock().unwrap();
        while !guard.contains(needle) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting for {needle:?} in {guard:?}"
            );
            guard = cond.wait_timeout(guard, left).unwrap().0;
        }
    }

    pub fn text(&self) -> String {
        self.0.0.lock().unwrap().clone()
    }
}

/// A new directory of a test's own in the temp directory (its real path, as
/// bash's `$PWD` names it), removed with all in it when dropped; reads as
/// that path (`format!("{dir}/x")`, `&dir` for a `&str`).
pub struct TempDir(String);

impl TempDir {
    /// `<temp>/conch-test-<pid>-<name>-<n>`.
    pub fn new(name: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "conch-test-{}-{name}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir.canonicalize().unwrap().to_string_lossy().into_owned())
    }

    pub fn path(&self) -> &Path {
        Path::new(&self.0)
    }
}

impl std::ops::Deref for TempDir {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for TempDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
