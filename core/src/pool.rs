//! Threads for the bindings that turn a blocking core call into one the
//! caller does not block on (a Node promise, a Python call that keeps
//! checking for Ctrl-C). A thread start costs tens of microseconds, as much
//! as a whole builtin command, and calls come one after another, so threads
//! are kept.
//!
//! A call never waits for a thread: it takes an idle one (reserved under
//! the lock, so no two calls count on the same one) or starts a new one.
//! Idle threads stay for the next calls, so the pool is as large as the
//! most calls ever in flight at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvError, Sender, TryRecvError, channel};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use crate::sync::lock;

/// How long a thread that finished a call looks for the next one
/// before it sleeps.
const NEXT_JOB_SPIN: Duration = Duration::from_micros(200);

type Job = Box<dyn FnOnce() + Send>;

struct Pool {
    /// Threads waiting for a job and not yet promised one.
    idle: Mutex<usize>,
    jobs: Mutex<Sender<Job>>,
    queue: Arc<Mutex<Receiver<Job>>>,
}

static POOL: LazyLock<Pool> = LazyLock::new(|| {
    let (jobs, queue) = channel();
    Pool {
        idle: Mutex::new(0),
        jobs: Mutex::new(jobs),
        queue: Arc::new(Mutex::new(queue)),
    }
});

/// Waits for the next job, first without sleeping for up to
/// [`NEXT_JOB_SPIN`] (one thread at a time): calls usually come one
/// after another, and waking a sleeping thread on an idle CPU costs tens
/// of microseconds on a virtual machine, a good part of a whole run.
fn next_job(queue: &Mutex<Receiver<Job>>) -> Result<Job, RecvError> {
    static SPINNING: AtomicBool = AtomicBool::new(false);
    if !SPINNING.swap(true, Ordering::Acquire) {
        let until = Instant::now() + NEXT_JOB_SPIN;
        let mut found = None;
        while found.is_none() && Instant::now() < until {
            match queue.try_lock().map(|q| q.try_recv()) {
                Ok(Ok(job)) => found = Some(job),
                Ok(Err(TryRecvError::Disconnected)) => break,
                // Empty, or another idle thread waits on the queue.
                _ => std::thread::yield_now(),
            }
        }
        SPINNING.store(false, Ordering::Release);
        if let Some(job) = found {
            return Ok(job);
        }
    }
    lock(queue).recv()
}

/// Runs `job` on a pooled thread.
pub fn run(job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let pool = &*POOL;
    let mut idle = lock(&pool.idle);
    if *idle > 0 {
        *idle -= 1;
        drop(idle);
        return lock(&pool.jobs)
            .send(Box::new(job))
            .map_err(|_| std::io::Error::other("conch thread pool is gone"));
    }
    drop(idle);
    let queue = pool.queue.clone();
    std::thread::Builder::new()
        .name("conch-run".into())
        .spawn(move || {
            let mut job: Job = Box::new(job);
            loop {
                job();
                *lock(&POOL.idle) += 1;
                match next_job(&queue) {
                    Ok(next) => job = next,
                    Err(_) => return,
                }
            }
        })
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;
    use std::time::Duration;

    use super::*;

    #[test]
    fn calls_never_wait_for_each_other_and_threads_are_kept() {
        // Two calls in flight at once, each waiting for the other: on one
        // thread they would never end.
        let (a_tx, a_rx) = channel();
        let (b_tx, b_rx) = channel();
        let (done_tx, done_rx) = channel();
        let done = done_tx.clone();
        run(move || {
            a_tx.send(()).unwrap();
            b_rx.recv_timeout(Duration::from_secs(5)).unwrap();
            done.send(std::thread::current().id()).unwrap();
        })
        .unwrap();
        run(move || {
            a_rx.recv_timeout(Duration::from_secs(5)).unwrap();
            b_tx.send(()).unwrap();
            done_tx.send(std::thread::current().id()).unwrap();
        })
        .unwrap();
        let first = done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let second = done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_ne!(first, second);
        // Both threads go idle (a 10 s hang guard); the next call runs on
        // one of them.
        let end = Instant::now() + Duration::from_secs(10);
        while *lock(&POOL.idle) < 2 {
            assert!(Instant::now() < end, "the threads never went idle");
            std::thread::sleep(Duration::from_millis(1));
        }
        let (tx, rx) = channel();
        run(move || tx.send(std::thread::current().id()).unwrap()).unwrap();
        let third = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(third == first || third == second);
    }
}
