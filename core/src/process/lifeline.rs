//! Nothing conch started outlives the host.
//!
//! `PR_SET_PDEATHSIG` reaches only a direct child: kill the host, and bash
//! dies while what it started (background jobs, `setsid` and double-fork
//! escapes) goes on under init. So each process conch starts as the root
//! of a tree (a session's bash, a one-shot command's supervisor, a PTY
//! command) is only *frozen* by the host's death
//! (`HostDeath::Freeze` of `process::spawner`), its tree intact
//! with the root as the subreaper of every orphan, and one small process
//! per host, the *guard*, takes those trees down.
//!
//! The guard is a bash started once, on the first root, that outlives the
//! host. Its stdin is one end of a socket pair (the *lifeline*) whose other
//! end the host holds for its whole life. The host tells it each root it
//! starts (`+<pid>`) and each root it is about to reap (`-<pid>`, before
//! the pid can be reused); when the host dies by any means (a crash,
//! SIGKILL, `process.exit()`), the kernel closes the host's end, the guard
//! reads end-of-file, freezes every process below each root it knows of
//! (so nothing forks meanwhile), and kills them all with the roots. One
//! guard serves every session of the host: a session costs it one line,
//! not a process.
//!
//! A guard that dies (killed by hand) is started again with every live
//! root, at the next line the host sends it.
//!
//! Where the kernel has no parent-death signal (macOS, the BSDs), nothing
//! freezes the roots: every root is in the guard's care, which freezes
//! each root's process group itself before it walks the trees.

use std::collections::HashSet;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex, MutexGuard};

use super::bash::find_bash;
use super::child::Process;
use super::fork;
use super::io::{send_all, socketpair};
use super::spawner::{HostDeath, Launch, dev_null, spawn};
use super::tree::Pid;
use crate::sync::lock;

/// The guard: remember the roots the host names, and when the host is gone
/// (end of input) freeze and kill each root's tree, then the roots. A
/// root already dead by then (a PTY command dies of the hang-up of its
/// terminal, which also wakes it from its freeze) left its orphans to
/// init: they are found by its session id, which is the root's pid.
#[cfg(target_os = "linux")]
const GUARD_SCRIPT: &str = "declare -A r; while IFS= read -r l; do case $l in \
+*) r[${l:1}]=1;; -*) unset \"r[${l:1}]\";; esac; done; \
p=(); t() { local k c; for k in /proc/$1/task/*; do c=(); \
read -r -a c < \"$k/children\"; for c in \"${c[@]}\"; do \
kill -STOP \"$c\"; p+=(\"$c\"); t \"$c\"; done; done; }; \
for b in \"${!r[@]}\"; do kill -STOP \"$b\"; t \"$b\"; p+=(\"$b\"); done; \
for s in /proc/[0-9]*/stat; do IFS= read -r l < \"$s\" || continue; f=(${l##*) }); \
[[ -n ${r[${f[3]}]-} ]] || continue; q=${s#/proc/}; q=${q%/stat}; kill -STOP \"$q\"; p+=(\"$q\"); done; \
((${#p[@]})) && kill -KILL \"${p[@]}\"";

/// The guard without `/proc` and without a parent-death signal (macOS, the
/// BSDs): when the host is gone, freeze each root's process group (the
/// root is its leader; bash keeps its background jobs in it), then find
/// the rest from one `ps` listing: what is below a root by parent links,
/// and what is still in a root's process group though its parent died.
/// (An orphan that made a session of its own is out of reach here.)
/// Tested on Linux too, where `ps` takes the same options.
#[cfg(any(not(target_os = "linux"), test))]
const PS_GUARD_SCRIPT: &str = "declare -A r c g; while IFS= read -r l; do case $l in \
+*) r[${l:1}]=1;; -*) unset \"r[${l:1}]\";; esac; done; \
for b in \"${!r[@]}\"; do kill -STOP -- \"-$b\" \"$b\"; done; \
while read -r i q o; do c[$q]+=\" $i\"; g[$i]=$o; done < <(ps -A -o pid= -o ppid= -o pgid=); \
p=(); t() { local k; for k in ${c[$1]-}; do kill -STOP \"$k\"; p+=(\"$k\"); t \"$k\"; done; }; \
for b in \"${!r[@]}\"; do t \"$b\"; p+=(\"$b\"); done; \
for i in \"${!g[@]}\"; do [[ -n ${r[${g[$i]}]-} ]] && p+=(\"$i\"); done; \
((${#p[@]})) && kill -KILL \"${p[@]}\"";
#[cfg(not(target_os = "linux"))]
const GUARD_SCRIPT: &str = PS_GUARD_SCRIPT;

struct Guard {
    /// The host's end of the lifeline.
    line: OwnedFd,
    process: Process,
}

#[derive(Default)]
struct State {
    guard: Option<Guard>,
    /// The roots alive now, told to the guard.
    roots: HashSet<Pid>,
    /// The process whose guard and roots these are.
    host: u32,
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(Mutex::default);

/// The state of this process: in a child forked from the host (Python's
/// `multiprocessing`, a pre-forking server), the parent's guard and roots
/// are the parent's. The child forgets them (its copy of the lifeline
/// closed at the fork, see [`fork::close_in_child`]) and starts a guard of
/// its own with its first root.
fn state() -> MutexGuard<'static, State> {
    let mut state = lock(&STATE);
    let here = fork::current();
    if state.host != here {
        // Not killed, not waited for, its descriptor not closed again:
        // the parent's guard.
        std::mem::forget(state.guard.take());
        state.roots.clear();
        state.host = here;
    }
    state
}

/// The pid of the guard, a child of the host for the host's whole life
/// (started with the first root), for a host that counts its children.
pub fn guard_pid() -> Option<Pid> {
    state().guard.as_ref().map(|g| g.process.pid())
}

/// Puts the tree of `root` (just started, frozen on the host's death) in
/// the guard's care.
pub(crate) fn guard(root: Pid) {
    let mut state = state();
    state.roots.insert(root);
    tell(&mut state, &format!("+{root}\n"));
}

/// Takes `root` out of the guard's care, before it is reaped (after that,
/// its pid may be another process's).
pub(crate) fn release(root: Pid) {
    let mut state = state();
    if state.roots.remove(&root) {
        tell(&mut state, &format!("-{root}\n"));
    }
}

/// Sends `line` to the guard, starting one (told every live root) if there
/// is none or it died. Without a guard (bash cannot be started), roots
/// still die with the host, their escapes do not.
fn tell(state: &mut State, line: &str) {
    if let Some(guard) = &state.guard
        && send_all(&guard.line, line.as_bytes()).is_ok()
    {
        return;
    }
    fork::close_in_child(-1);
    if let Some(mut dead) = state.guard.take() {
        let _ = dead.process.kill();
        let _ = dead.process.wait();
    }
    state.guard = start();
    if let Some(guard) = &state.guard {
        let all: String = state.roots.iter().map(|p| format!("+{p}\n")).collect();
        if send_all(&guard.line, all.as_bytes()).is_err() {
            state.guard = None;
        }
    }
    fork::close_in_child(state.guard.as_ref().map_or(-1, |g| g.line.as_raw_fd()));
}

fn start() -> Option<Guard> {
    let (line, theirs) = socketpair().ok()?;
    let null = dev_null().ok()?;
    // The guard's script needs bash 4 (associative arrays), as a session does.
    let bash = find_bash(None).ok()?;
    let process = spawn(Launch {
        program: bash,
        args: vec![
            "--noprofile".into(),
            "--norc".into(),
            "-c".into(),
            GUARD_SCRIPT.into(),
        ],
        fds: vec![
            (theirs.as_raw_fd(), 0),
            (null.as_raw_fd(), 1),
            (null.as_raw_fd(), 2),
        ],
        cwd: Some(PathBuf::from("/")),
        on_host_death: HostDeath::Outlive,
        ..Launch::default()
    })
    .ok()?;
    Some(Guard { line, process })
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::process::{Command, Stdio};
    use std::time::Duration;

    use super::*;
    use crate::process::tree::{descendants, wait_gone};

    /// The guard of macOS and the BSDs, run here: it finds a root's tree
    /// through `ps` and kills it, the root with it.
    #[test]
    fn the_ps_guard_kills_a_roots_tree_when_the_host_is_gone() {
        let mut root = spawn(Launch {
            program: "bash".into(),
            args: vec![
                "-c".into(),
                "/bin/sleep 300 & bash -c '/bin/sleep 301 & wait' & wait".into(),
            ],
            on_host_death: HostDeath::Outlive,
            ..Launch::default()
        })
        .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let tree = loop {
            let tree = descendants(root.pid());
            if tree.len() >= 3 || std::time::Instant::now() > deadline {
                break tree;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(tree.len(), 3, "{tree:?}");
        let mut guard = Command::new("bash")
            .args(["--noprofile", "--norc", "-c", PS_GUARD_SCRIPT])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        // The host's end closes: the guard acts.
        let mut line = guard.stdin.take().unwrap();
        writeln!(line, "+{}", root.pid()).unwrap();
        drop(line);
        assert!(guard.wait().unwrap().success());
        assert!(wait_gone(&tree, Duration::from_secs(5)), "left: {tree:?}");
        assert!(!root.wait().unwrap().success());
    }
}
