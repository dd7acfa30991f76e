//! What a run's event loop looks for, besides its deadline, in a run that
//! goes on for a while: the three ways a run would otherwise hang until its
//! timeout (docs/behaviour.md, sections 7 and 16).
//!
//! - **bash stopped itself.** `kill -STOP $$` or `suspend -f` stops bash
//!   until a `SIGCONT` that no job control will send: bash's state in
//!   `/proc/<bash>/stat` is `T`, and the loop sends it (a process traced
//!   by a debugger, `t`, is left alone). The command goes on.
//!
//! - **bash stopped reporting.** A `DEBUG` trap that returns non-zero
//!   under `shopt -s extdebug` makes bash skip every command that follows,
//!   the protocol's own too: after the command, bash spins through the
//!   loop (`protocol::LOOP_TEMPLATE`) without reading the trailer or
//!   writing the record. Nothing of the protocol can run past such a trap
//!   (it runs before every command at top level, and, with `extdebug`, in
//!   functions and subshells too), so the host tells it from outside:
//!   bash holds the status pipe on its descriptor 62 again (it is closed
//!   in the command and everything it starts, `protocol::COMMAND_FDS`,
//!   so bash is in the protocol's steps), for [`UNREPORTED_AFTER`] at
//!   every look, busy on the CPU (not waiting for a slow trap's child,
//!   not starved on a loaded machine), and no record came. The steps
//!   take a millisecond when they run.
//! - **the session's process limit.** bash retries a fork the `pids`
//!   cgroup refused, sleeping 1, 2, 4 and 8 s, and `wait` for what it did
//!   start: the run would sit there. The `max` count of the cgroup's
//!   `pids.events` says a fork was refused; if, [`PROCESS_LIMIT_GRACE`]
//!   after the first refusal seen, the session still holds as many
//!   processes as its limit, the run is stopped. A command that touched
//!   the limit and came back below it (its processes ended, bash's retry
//!   succeeded) goes on.
//!
//! The looks are a read of `/proc/<bash>/stat`, a `stat` of
//! `/proc/<bash>/fd/62`, and two small reads of the cgroup's files: the
//! first a second into the run, then every second (every quarter second
//! while one of them is suspect). A run that ends within the second costs
//! nothing.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::process::sandbox::PidsCgroup;
use crate::process::tree::Pid;
use crate::run_result::PROCESS_LIMIT_GRACE;

/// How long bash must be seen in the protocol's steps, busy, without a
/// record, before the run is ended.
pub(super) const UNREPORTED_AFTER: Duration = Duration::from_secs(2);

/// The first look, a second into the run, and the looks after it.
const EVERY: Duration = Duration::from_secs(1);
/// The looks while something is suspect.
const SUSPECT_EVERY: Duration = Duration::from_millis(250);

/// What a look found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hang {
    /// bash stopped itself: it goes on once sent `SIGCONT`.
    Stopped,
    /// bash skips its own steps: no record will come.
    Unreported,
    /// The session stayed at its process limit (the number).
    ProcessLimit(u64),
}

/// The looks of one run.
pub(super) struct Watchdog {
    next: Instant,
    /// When bash was first seen in the protocol's steps and its CPU time
    /// then (clock ticks).
    in_steps: Option<(Instant, u64)>,
    pids: Option<Arc<PidsCgroup>>,
    /// The refusals counted when the run started (or the last recovery).
    refused: u64,
    /// When a refusal was first seen.
    refused_at: Option<Instant>,
}

impl Watchdog {
    /// The looks of a run starting now, in a session whose `pids` cgroup,
    /// if it has a process limit, is `pids`.
    pub(super) fn new(pids: Option<Arc<PidsCgroup>>) -> Watchdog {
        let refused = pids.as_ref().and_then(|p| p.refused()).unwrap_or(0);
        Watchdog {
            next: Instant::now() + EVERY,
            in_steps: None,
            pids,
            refused,
            refused_at: None,
        }
    }

    /// When the next look is due.
    pub(super) fn wake_at(&self) -> Instant {
        self.next
    }

    /// Looks at bash (`pid`, whose status pipe's read end the host holds as
    /// `status`) if a look is due.
    pub(super) fn look(&mut self, now: Instant, pid: Pid, status: BorrowedFd<'_>) -> Option<Hang> {
        if now < self.next {
            return None;
        }
        let mut suspect = false;
        if let Some(hang) = self.look_at_pids(now, &mut suspect) {
            return Some(hang);
        }
        let (state, cpu) = state_and_cpu(pid).unwrap_or((' ', 0));
        if state == 'T' {
            // Looked at again soon: the look after the `SIGCONT` sees it run.
            self.next = now + SUSPECT_EVERY;
            return Some(Hang::Stopped);
        }
        if holds_status_pipe(pid, status) {
            match self.in_steps {
                None => self.in_steps = Some((now, cpu)),
                Some((since, before)) if now - since >= UNREPORTED_AFTER => {
                    // Busy at least a tenth of the time: spinning, not
                    // waiting for a child nor starved.
                    let busy = cpu.saturating_sub(before) * 1000 / ticks_per_second();
                    if busy as u128 >= (now - since).as_millis() / 10 {
                        return Some(Hang::Unreported);
                    }
                    self.in_steps = Some((now, cpu));
                }
                Some(_) => {}
            }
            suspect = true;
        } else {
            self.in_steps = None;
        }
        self.next = now + if suspect { SUSPECT_EVERY } else { EVERY };
        if let Some(at) = self.refused_at {
            self.next = self.next.min(at + PROCESS_LIMIT_GRACE);
        }
        None
    }

    fn look_at_pids(&mut self, now: Instant, suspect: &mut bool) -> Option<Hang> {
        let pids = self.pids.as_ref()?;
        let refused = pids.refused()?;
        match self.refused_at {
            None if refused > self.refused => self.refused_at = Some(now),
            Some(at) if now - at >= PROCESS_LIMIT_GRACE => {
                if pids.at_limit() {
                    return Some(Hang::ProcessLimit(pids.limit()));
                }
                // Below the limit again: it recovered.
                self.refused = refused;
                self.refused_at = None;
            }
            _ => {}
        }
        *suspect |= self.refused_at.is_some();
        None
    }
}

/// Whether bash's descriptor 62 is the status pipe (the one whose read
/// end is `status`): bash is between commands, in the protocol's steps.
fn holds_status_pipe(pid: Pid, status: BorrowedFd<'_>) -> bool {
    let file = |path: String| std::fs::metadata(path).map(|m| (m.dev(), m.ino()));
    let ours = file(format!("/proc/self/fd/{}", status.as_raw_fd()));
    let theirs = file(format!("/proc/{pid}/fd/{}", crate::protocol::STATUS_FD));
    matches!((ours, theirs), (Ok(a), Ok(b)) if a == b)
}

/// The state of `pid` (`T`: stopped by a signal) and the CPU time it used
/// (user and system), in clock ticks.
fn state_and_cpu(pid: Pid) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (which may hold anything): state is field 3,
    // utime and stime are fields 14 and 15.
    let mut fields = stat.get(stat.rfind(')')? + 2..)?.split(' ');
    let state = fields.next()?.chars().next()?;
    let utime: u64 = fields.nth(10)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((state, utime + stime))
}

fn ticks_per_second() -> u64 {
    // SAFETY: sysconf only reads a constant of the system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(ticks).unwrap_or(100).max(1)
}
