//! The one thread of the process that reads the output of every running
//! job, so that a job never blocks on a full pipe between polls. It runs
//! only while some job runs: it starts with the first and ends with the
//! last, so a host without background work has no such thread.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, OnceLock};

use super::Job;
use crate::process::io::{Read, Waker, poll, pollin, read, ready};
use crate::sync::lock;

/// Output read from one job before the thread looks at the others.
const BUDGET: usize = 1 << 20;

struct Reader {
    state: Mutex<State>,
    /// Wakes the thread's `poll` when a job is added.
    waker: Waker,
}

#[derive(Default)]
struct State {
    pipes: Vec<(OwnedFd, Arc<Job>)>,
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

/// Reads `pipe` (non-blocking) into `job` until every writer has closed it.
/// Returns false when the thread cannot be had (no eventfd, no thread):
/// the caller then drops the pipe, and the job's writers get `EPIPE`.
pub(crate) fn watch(pipe: OwnedFd, job: Arc<Job>) -> bool {
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
    state.pipes.push((pipe, job));
    drop(state);
    reader.waker.wake();
    true
}

fn run(reader: &'static Reader) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let mut fds = vec![pollin(reader.waker.raw())];
        {
            let mut state = lock(&reader.state);
            if state.pipes.is_empty() {
                state.running = false;
                return;
            }
            fds.extend(state.pipes.iter().map(|(fd, _)| pollin(fd.as_raw_fd())));
        }
        if poll(&mut fds, None).is_err() {
            continue;
        }
        if ready(&fds[0]) {
            reader.waker.reset();
        }
        let mut ended = Vec::new();
        {
            let state = lock(&reader.state);
            // Jobs are only added (at the end) while the thread polls, so
            // the first `fds.len() - 1` entries are the polled ones.
            for (slot, (fd, job)) in fds[1..].iter().zip(state.pipes.iter()) {
                if ready(slot) && drain(fd.as_raw_fd(), job, &mut buf) {
                    ended.push(fd.as_raw_fd());
                }
            }
        }
        if !ended.is_empty() {
            let mut state = lock(&reader.state);
            state.pipes.retain(|(fd, job)| {
                let done = ended.contains(&fd.as_raw_fd());
                if done {
                    job.end();
                }
                !done
            });
        }
    }
}

/// Moves what `fd` holds into `job`, up to [`BUDGET`]; true at its end.
fn drain(fd: i32, job: &Job, buf: &mut [u8]) -> bool {
    let mut taken = 0;
    while taken < BUDGET {
        match read(fd, buf) {
            Ok(Read::Data(n)) => {
                job.push(&buf[..n]);
                taken += n;
            }
            Ok(Read::WouldBlock) => return false,
            Ok(Read::Eof) | Err(_) => return true,
        }
    }
    false
}
