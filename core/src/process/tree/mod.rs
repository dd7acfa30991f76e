//! Containment: finding and killing every process a command started.
//!
//! A command's processes do not stay in one process group: `setsid` gives a
//! child its own session and group (so `killpg` misses it), and a double
//! fork re-parents a grandchild. The engines therefore make their bash a
//! child subreaper (orphans come back to it) and walk the parent links under
//! it, signalling each member. Processes whose ancestor already died are
//! found by session id instead ([`session_members`]).
//!
//! macOS has no subreaper: there an orphan goes to launchd, and is found by
//! its session (a command that both calls `setsid` and is orphaned escapes
//! the walk there; see docs/platforms.md).

use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Signal, kill_process};

#[cfg(target_os = "freebsd")]
mod kinfo;
#[cfg(target_vendor = "apple")]
mod libproc;
#[cfg(target_os = "linux")]
mod procfs;

// Where the system lists its processes.
#[cfg(target_os = "freebsd")]
use kinfo as platform;
#[cfg(target_vendor = "apple")]
use libproc as platform;
#[cfg(target_os = "linux")]
use procfs as platform;

pub use platform::children;
use platform::{holds_blocked, look, processes, program};
#[cfg(target_os = "linux")]
pub use procfs::ChildrenOf;

pub type Pid = i32;

/// One process as the system lists it.
struct Process {
    pid: Pid,
    /// Not needed where the system lists a process's children itself.
    #[cfg_attr(target_vendor = "apple", allow(dead_code))]
    ppid: Pid,
    sid: Pid,
    zombie: bool,
    /// Exiting and not yet a zombie: its children go to its (sub)reaper
    /// only once it is one.
    exiting: bool,
}

/// The direct children of a process with a single thread (bash), read as
/// often as asked: where the system lists a process's children by pid
/// alone, [`children`] each time.
#[cfg(not(target_os = "linux"))]
pub struct ChildrenOf(Pid);

#[cfg(not(target_os = "linux"))]
impl ChildrenOf {
    pub fn new(pid: Pid) -> ChildrenOf {
        ChildrenOf(pid)
    }

    pub fn read(&self) -> Vec<Pid> {
        children(self.0)
    }
}

/// `pid` as rustix takes it: a positive number (`EINVAL` otherwise).
pub fn rustix_pid(pid: Pid) -> rustix::io::Result<rustix::process::Pid> {
    match pid {
        1.. => rustix::process::Pid::from_raw(pid).ok_or(Errno::INVAL),
        _ => Err(Errno::INVAL),
    }
}

/// Every live process below `root` (not `root` itself), parents before children.
pub fn descendants(root: Pid) -> Vec<Pid> {
    descendants_except(root, &[])
}

/// Every live process below `root` except the subtrees of the children
/// listed in `spared` (a shell's earlier background jobs). Zombies are left
/// out: they are already dead, only not yet reaped.
pub fn descendants_except(root: Pid, spared: &[Pid]) -> Vec<Pid> {
    let mut out: Vec<Pid> = children(root)
        .into_iter()
        .filter(|p| !spared.contains(p))
        .collect();
    let mut i = 0;
    while i < out.len() {
        for pid in children(out[i]) {
            if !out.contains(&pid) {
                out.push(pid);
            }
        }
        i += 1;
    }
    out.retain(|&p| is_alive(p));
    out
}

/// Whether `pid` exists and is not a zombie.
pub fn is_alive(pid: Pid) -> bool {
    look(pid).is_some_and(|p| !p.zombie)
}

/// Every process whose session id is `sid` (including a leader still alive).
/// Finds the leftovers of a session whose leader is gone, since orphans keep
/// their session id when re-parented.
pub fn session_members(sid: Pid) -> Vec<Pid> {
    processes()
        .filter(|p| p.sid == sid && !p.zombie)
        .map(|p| p.pid)
        .collect()
}

/// Sends `signal` to each pid, ignoring ones that are already gone (and
/// init, which is never a command's).
pub fn signal_all(pids: &[Pid], signal: Signal) {
    for &pid in pids {
        if pid > 1
            && let Ok(pid) = rustix_pid(pid)
        {
            // ESRCH for a pid that is already gone: nothing left to stop.
            let _ = kill_process(pid, signal);
        }
    }
}

/// Sends a signal of the kill ladder or of a teardown to each of `pids`,
/// then SIGCONT, as systemd does: a stopped process (`kill -STOP`, a
/// program that stopped itself) takes SIGINT or SIGTERM only once it runs
/// again, and would otherwise sit out each grace until SIGKILL, which
/// needs no waking. Not for a signal a user sends (a job's `signal`): a
/// process stopped on purpose stays stopped there.
pub fn signal_to_end(pids: &[Pid], signal: Signal) {
    signal_all(pids, signal);
    if signal != Signal::KILL {
        signal_all(pids, Signal::CONT);
    }
}

/// How long [`signal_with_forks`] follows a process that holds the signal
/// blocked: far beyond the microseconds bash blocks it around a fork, even
/// on a loaded machine, and short enough for a program that blocks it for
/// good.
const DEFERRED_WAIT: Duration = Duration::from_millis(500);

/// Sends `signal` to each of `pids` (the processes of a command at one
/// moment, under `subreaper`), and to the children those of them fork as
/// the signal reaches them. bash blocks signals around each fork: one
/// that comes then is taken after the fork, in the parent alone, and the
/// child starts with nothing pending and would go on running. A signal to
/// a process group does not help: one that comes before the fork is
/// pending in the parent alone.
///
/// So each of `pids` is followed, at looks a millisecond apart, while it
/// holds `signal` blocked (for at most [`DEFERRED_WAIT`]) or is exiting:
/// one that dies of the signal hands its children to `subreaper` only
/// once it is a zombie, which on a loaded machine comes well after it
/// took the signal, perhaps after a fork made as it came. Its children
/// that were not among `pids`, and new children of `subreaper`, except
/// those in `spared`, are sent `signal` too, with what they started. One
/// seen alive, neither holding the signal nor exiting, at two looks in a
/// row is let go (it caught or ignored the signal, or has not run since
/// it came; the second look covers the instant between taking a signal
/// and starting to exit).
pub fn signal_with_forks(pids: &[Pid], subreaper: Pid, spared: &[Pid], signal: Signal) {
    signal_all(pids, signal);
    // Each with the looks in a row that saw it settled.
    let mut following: Vec<(Pid, u8)> = pids.iter().map(|&p| (p, 0)).collect();
    let mut known: Vec<Pid> = pids.iter().chain(spared).copied().collect();
    let deadline = Instant::now() + DEFERRED_WAIT;
    loop {
        // Looked at before the children are read: a child forked before
        // its parent became a zombie is among them, or the subreaper's.
        following.retain_mut(|(p, settled)| {
            // The status first: a process that holds the signal is
            // followed without a look at its state.
            if holds_blocked(*p, signal) {
                *settled = 0;
                return true;
            }
            let now = look(*p);
            if now.as_ref().is_some_and(|n| n.exiting) {
                *settled = 0;
                return true;
            }
            *settled += 1;
            *settled < 2 && now.is_some_and(|n| !n.zombie)
        });
        for &parent in following.iter().map(|(p, _)| p).chain(&[subreaper]) {
            for child in children(parent) {
                if !known.contains(&child) {
                    let mut born = vec![child];
                    born.extend(descendants(child));
                    signal_all(&born, signal);
                    known.extend(born);
                }
            }
        }
        if following.is_empty() || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The processes a SIGINT was sent to, each with the program it ran then.
///
/// A process between fork and exec still runs its parent's signal
/// handlers: a child of a bash that traps SIGINT takes the signal and then
/// execs its program, which never learns of it. A process that has exec'd
/// another program since its SIGINT is sent one again (a program that got
/// it and is shutting down is not).
#[derive(Debug, Default)]
pub struct Interrupts {
    sent: std::collections::HashMap<Pid, Option<std::path::PathBuf>>,
}

impl Interrupts {
    /// Sends SIGINT to each of `pids` that did not get one since its last
    /// exec (all of them, the first time).
    pub fn send(&mut self, pids: &[Pid]) {
        for &pid in pids {
            let program = program(pid);
            if self.sent.get(&pid) != Some(&program) {
                signal_to_end(&[pid], Signal::INT);
                self.sent.insert(pid, program);
            }
        }
    }
}

/// Waits until none of `pids` is alive or `limit` passes; true if all gone.
pub fn wait_gone(pids: &[Pid], limit: Duration) -> bool {
    let end = Instant::now() + limit;
    loop {
        if !pids.iter().any(|&p| is_alive(p)) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// SIGTERM, up to `grace` for them to go, SIGKILL: for teardown (close),
/// where the command's own chance to finish cleanly is already over.
pub fn terminate(pids: &[Pid], grace: Duration) {
    signal_to_end(pids, Signal::TERM);
    if !wait_gone(pids, grace) {
        signal_all(pids, Signal::KILL);
    }
}

/// The kill escalation run on this thread, for a caller with no output to
/// drain meanwhile (a job, whose output its reader thread takes): each
/// step's signal to what `targets` gives at that moment, then up to
/// `grace` for it to go; done as soon as nothing is left.
pub fn escalate_blocking(targets: impl Fn() -> Vec<Pid>, grace: Duration) {
    for signal in SIGNALS {
        let pids = targets();
        if pids.is_empty() {
            return;
        }
        signal_to_end(&pids, signal);
        wait_gone(&pids, grace);
    }
}

/// The escalation applied on timeout and abort: SIGINT, grace, SIGTERM,
/// grace, SIGKILL, grace. Driven by the caller's event loop (which must keep
/// draining output meanwhile, or a dying process may block on a full pipe).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Escalation {
    /// Time given after each signal before the next, stronger one.
    pub grace: Duration,
}

impl Default for Escalation {
    fn default() -> Self {
        Escalation {
            grace: Duration::from_millis(500),
        }
    }
}

/// What the escalation asks for at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EscalationStep {
    /// Send this signal to the targets now.
    Signal(Signal),
    /// Every signal was sent and its grace passed: the target is wedged.
    Exhausted,
}

/// One [`Escalation`] in progress, started at the moment of the abort.
#[derive(Debug, Clone)]
pub struct Escalating {
    grace: Duration,
    step: usize,
    next_at: Instant,
}

const SIGNALS: [Signal; 3] = [Signal::INT, Signal::TERM, Signal::KILL];

impl Escalation {
    /// Starts escalating: the first step is due at once.
    pub fn start(&self) -> Escalating {
        Escalating {
            grace: self.grace,
            step: 0,
            next_at: Instant::now(),
        }
    }
}

impl Escalating {
    /// The step due at `now`, if any; advances past it.
    pub fn due(&mut self, now: Instant) -> Option<EscalationStep> {
        if now < self.next_at || self.step > SIGNALS.len() {
            return None;
        }
        let step = match SIGNALS.get(self.step) {
            Some(&sig) => EscalationStep::Signal(sig),
            None => EscalationStep::Exhausted,
        };
        self.step += 1;
        self.next_at = now + self.grace;
        Some(step)
    }

    /// When the next step is due (`None` once exhausted).
    pub fn next_at(&self) -> Option<Instant> {
        (self.step <= SIGNALS.len()).then_some(self.next_at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn finds_and_kills_a_grandchild() {
        let mut child = Command::new("bash")
            .args(["-c", "/bin/sleep 30 & /bin/sleep 30 & wait"])
            .spawn()
            .unwrap();
        let root = child.id() as Pid;
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut found = Vec::new();
        while found.len() < 2 && Instant::now() < deadline {
            found = descendants(root);
        }
        assert_eq!(found.len(), 2, "two sleeps under bash");
        assert!(found.iter().all(|&p| is_alive(p)));
        terminate(&found, Duration::from_secs(2));
        child.wait().unwrap();
        assert!(found.iter().all(|&p| !is_alive(p)));
    }

    /// A process that holds SIGTERM blocked when it comes, and forks
    /// before it takes it (as bash does around each fork), signalled from
    /// a walk made before the fork: the child, which starts with nothing
    /// pending, is sent it too.
    #[test]
    fn a_signal_held_blocked_reaches_what_is_forked_before_it_is_taken() {
        use std::io::{BufRead, BufReader, Write};
        use std::os::unix::process::ExitStatusExt;
        use std::process::Stdio;
        const HOLDER: &str = "import os, signal, sys\n\
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])\n\
            print('ready', flush=True)\n\
            sys.stdin.read(1)\n\
            if os.fork() == 0:\n    \
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])\n    \
                os.execv('/bin/sleep', ['sleep', '30'])\n\
            sys.stdin.read(1)\n\
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])\n";
        let within = |what: &dyn Fn() -> bool| {
            let end = Instant::now() + Duration::from_secs(5);
            while !what() && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(1));
            }
            what()
        };
        let mut holder = Command::new("python3")
            .args(["-c", HOLDER])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = holder.id() as Pid;
        let mut ready = String::new();
        BufReader::new(holder.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        assert_eq!(ready, "ready\n");
        let mut input = holder.stdin.take().unwrap();
        input.write_all(b"f").unwrap();
        assert!(within(&|| !children(pid).is_empty()));
        let forked = children(pid)[0];
        let follower = std::thread::spawn(move || {
            signal_with_forks(&[pid], pid, &[], Signal::TERM);
        });
        // Gone (a zombie, as the holder reaps nothing) while the holder
        // still holds its own SIGTERM, not at the end of its 30 s.
        assert!(within(&|| !is_alive(forked)));
        assert!(holds_blocked(pid, Signal::TERM));
        input.write_all(b"u").unwrap();
        let status = holder.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGTERM));
        follower.join().unwrap();
    }

    #[test]
    fn escalation_steps_in_order() {
        let escalation = Escalation {
            grace: Duration::from_millis(10),
        };
        let mut c = escalation.start();
        let t0 = Instant::now();
        assert_eq!(c.due(t0), Some(EscalationStep::Signal(Signal::INT)));
        assert_eq!(c.due(t0), None);
        let t1 = t0 + Duration::from_millis(10);
        assert_eq!(c.due(t1), Some(EscalationStep::Signal(Signal::TERM)));
        let t2 = t1 + Duration::from_millis(10);
        assert_eq!(c.due(t2), Some(EscalationStep::Signal(Signal::KILL)));
        let t3 = t2 + Duration::from_millis(10);
        assert_eq!(c.due(t3), Some(EscalationStep::Exhausted));
        assert_eq!(c.next_at(), None);
        assert_eq!(c.due(t3 + Duration::from_secs(1)), None);
    }
}
