//! The one thread of the process that reads the output of every running
//! job, so that a job never blocks on a full pipe between polls, and the
//! status pipes of the jobs conch runs; it also notices a job's deadline,
//! and a job without a terminal that runs a full-screen program (see
//! [`crate::process::no_terminal`]).
//! It runs only while some job runs: it starts with the first and ends
//! with the last, so a host without background work has no such thread.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use super::{Job, JobStatus};
use crate::process::io::{Read, Waker, poll, pollin, read, ready};
use crate::sync::lock;

/// Output read from one job before the thread looks at the others.
const BUDGET: usize = 1 << 20;

struct Reader {
    state: Mutex<State>,
    /// Wakes the thread's `poll` when a job is added.
    waker: Waker,
}

/// One job being read: its output until the end, its status pipe (if
/// any) likewise, the end of a root that runs the command itself, and
/// whether its deadline was acted on.
struct Watched {
    output: Option<OwnedFd>,
    status: Option<OwnedFd>,
    /// Readable once the root has exited (a pidfd), for a root that runs
    /// the command itself: when its status pipe closes with no record of
    /// the command's end (the root was killed, or `exec`'d a program),
    /// the command ends with the root. Watched from then on; dropped
    /// when a record came.
    root_exit: Option<OwnedFd>,
    job: Arc<Job>,
    deadline: Option<Instant>,
}

impl Watched {
    fn done(&self) -> bool {
        self.output.is_none() && self.status.is_none() && self.root_exit.is_none()
    }

    /// Whether the root's exit is watched (not before its status pipe
    /// closed: a pidfd stays readable, and the record may still come).
    fn awaits_root(&self) -> bool {
        self.status.is_none() && self.root_exit.is_some()
    }
}

#[derive(Default)]
struct State {
    watched: Vec<Watched>,
    /// The thread is running (it clears this when it leaves, under the lock).
    running: bool,
}

fn reader() -> Option<&'static Reader> {
    static READER: OnceLock<Option<Reader>> = OnceLock::new();
    READER
        .get_or_init(|| {
            Waker::new().ok().map(|waker| Reader {
                state: Mutex::default(),
                waker,
            })
        })
        .as_ref()
}

/// Reads `output` (non-blocking) into `job` until every writer has closed
/// it, and `status` likewise; the job ends when both have, and, with a
/// `root_exit` (see [`Watched`]) and no record on `status`, when the root
/// has exited. Returns false when the thread cannot be had (no eventfd,
/// no thread): the caller then drops the descriptors, and the job's
/// writers get `EPIPE`.
pub(crate) fn watch(
    output: OwnedFd,
    status: Option<OwnedFd>,
    root_exit: Option<OwnedFd>,
    job: Arc<Job>,
) -> bool {
    let Some(reader) = reader() else {
        return false;
    };
    let mut state = lock(&reader.state);
    if !state.running {
        let spawned = std::thread::Builder::new()
            .name("conch-jobs".into())
            .spawn(move || run(reader));
        if spawned.is_err() {
            return false;
        }
        state.running = true;
    }
    state.watched.push(Watched {
        output: Some(output),
        status,
        root_exit,
        deadline: job.deadline,
        job,
    });
    drop(state);
    reader.waker.wake();
    true
}

/// Has the thread look at its jobs again (a job's looks changed).
pub(crate) fn wake() {
    if let Some(reader) = reader() {
        reader.waker.wake();
    }
}

fn run(reader: &'static Reader) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let mut fds = vec![pollin(reader.waker.raw())];
        let next_deadline;
        {
            let mut state = lock(&reader.state);
            if state.watched.is_empty() {
                state.running = false;
                return;
            }
            for w in &state.watched {
                let root_exit = w.root_exit.as_ref().filter(|_| w.awaits_root());
                for fd in [w.output.as_ref(), w.status.as_ref(), root_exit]
                    .into_iter()
                    .flatten()
                {
                    fds.push(pollin(fd.as_raw_fd()));
                }
            }
            next_deadline = state
                .watched
                .iter()
                .flat_map(|w| [w.deadline, w.job.terminal_look_due()])
                .flatten()
                .min();
        }
        if poll(&mut fds, next_deadline).is_err() {
            continue;
        }
        if ready(&fds[0]) {
            reader.waker.reset();
        }
        let mut state = lock(&reader.state);
        // Jobs are only added (at the end) while the thread polls, so the
        // polled descriptors are those of the first entries, in order.
        let mut slots = fds[1..].iter();
        for w in state.watched.iter_mut() {
            // As polled: the status pipe may close below.
            let awaited_root = w.awaits_root();
            if let Some(fd) = &w.output {
                let slot = slots.next();
                if slot.is_some_and(ready) && drain(fd.as_raw_fd(), &w.job, &mut buf, Job::push) {
                    w.output = None;
                }
            }
            if let Some(fd) = &w.status {
                let slot = slots.next();
                if slot.is_some_and(ready)
                    && drain(fd.as_raw_fd(), &w.job, &mut buf, Job::push_status)
                {
                    w.status = None;
                    if w.job.reported() {
                        w.root_exit = None;
                    }
                }
            }
            if awaited_root && slots.next().is_some_and(ready) {
                w.job.root_ended();
                w.root_exit = None;
            }
            if !w.done()
                && let Some(due) = w.job.terminal_look_due()
                && due <= Instant::now()
            {
                w.job.look_for_terminal(Instant::now());
            }
            if w.deadline.is_some_and(|t| t <= Instant::now()) && !w.done() {
                w.deadline = None;
                let job = w.job.clone();
                // The escalation takes its graces: not on this thread.
                let _ = std::thread::Builder::new()
                    .name("conch-job-timeout".into())
                    .spawn(move || job.kill(JobStatus::TimedOut));
            }
        }
        state.watched.retain(|w| {
            if w.done() {
                w.job.end();
            }
            !w.done()
        });
    }
}

/// Moves what `fd` holds into `job` with `take`, up to [`BUDGET`]; true
/// at its end.
fn drain(fd: i32, job: &Job, buf: &mut [u8], take: fn(&Job, &[u8])) -> bool {
    let mut taken = 0;
    while taken < BUDGET {
        match read(fd, buf) {
            Ok(Read::Data(n)) => {
                take(job, &buf[..n]);
                taken += n;
            }
            Ok(Read::WouldBlock) => return false,
            Ok(Read::Eof) | Err(_) => return true,
        }
    }
    false
}
