//! Threads that carry a blocking core call for a face whose caller must not
//! block on it: a Node promise, or a Python call that keeps checking for
//! Ctrl-C while the GIL is released.
//!
//! A thread start costs tens of microseconds, about as much as a whole
//! builtin command, and an agent's calls come one after another, so a thread
//! that finished a call waits for the next one. It waits asleep on a condition
//! variable, never spinning: a host that runs agents is a busy machine, and a
//! CPU burnt waiting is taken from bash and the commands it runs. A thread
//! idle for [`IDLE_EXIT`] ends, so a burst of parallel calls does not leave
//! its threads behind for the life of the process.
//!
//! A call never waits for a thread: each queued call is promised an idle
//! thread of its own (counted under the lock), else a new thread starts with
//! it. Calls that wait for each other (two runs of one shell, queued in
//! order) cannot deadlock the pool.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How long a thread with nothing to do waits for a call before it ends: an
/// agent's next command usually comes within seconds (a model's turn).
pub const IDLE_EXIT: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

struct Waiting {
    jobs: VecDeque<Job>,
    /// Threads asleep for a job (each job in `jobs` has one of them).
    idle: usize,
}

struct Pool {
    waiting: Mutex<Waiting>,
    job_queued: Condvar,
}

static POOL: Pool = Pool {
    waiting: Mutex::new(Waiting {
        jobs: VecDeque::new(),
        idle: 0,
    }),
    job_queued: Condvar::new(),
};

impl Pool {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        // A job runs outside the lock: a panic in it cannot poison this.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next job for a thread that just became idle; `None` once it
    /// waited [`IDLE_EXIT`] for nothing (the thread then ends).
    fn next_job(&self) -> Option<Job> {
        let mut waiting = self.lock();
        waiting.idle += 1;
        loop {
            if let Some(job) = waiting.jobs.pop_front() {
                waiting.idle -= 1;
                return Some(job);
            }
            let (guard, wait) = self
                .job_queued
                .wait_timeout(waiting, IDLE_EXIT)
                .unwrap_or_else(PoisonError::into_inner);
            waiting = guard;
            if wait.timed_out() && waiting.jobs.is_empty() {
                waiting.idle -= 1;
                return None;
            }
        }
    }
}

/// Runs `job` on a thread of the pool (an idle one, else a new one). Fails
/// only when no thread can be started.
pub fn run(job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let mut waiting = POOL.lock();
    if waiting.idle > waiting.jobs.len() {
        waiting.jobs.push_back(Box::new(job));
        drop(waiting);
        POOL.job_queued.notify_one();
        return Ok(());
    }
    drop(waiting);
    std::thread::Builder::new()
        .name("conch-call".into())
        .spawn(move || {
            let mut job: Job = Box::new(job);
            loop {
                job();
                match POOL.next_job() {
                    Some(next) => job = next,
                    None => return,
                }
            }
        })
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;
    use std::time::Instant;

    use super::*;

    fn idle() -> usize {
        POOL.lock().idle
    }

    /// Threads of this process named as the pool names its threads.
    fn pool_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter(|task| {
                let comm = task.as_ref().unwrap().path().join("comm");
                std::fs::read_to_string(comm).is_ok_and(|name| name.trim() == "conch-call")
            })
            .count()
    }

    /// Waits (10 s hang guard) until `idle()` is `n`.
    fn until_idle(n: usize) {
        let end = Instant::now() + Duration::from_secs(10);
        while idle() != n {
            assert!(
                Instant::now() < end,
                "idle threads: {}, expected {n}",
                idle()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    // One test for the module: the pool is process-wide, so the counts are
    // exact only while nothing else uses it.
    #[test]
    fn calls_never_wait_for_each_other_threads_are_kept_then_end() {
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
        assert_eq!(pool_threads(), 2);

        // Both threads go idle; the next call runs on one of them.
        until_idle(2);
        let (tx, rx) = channel();
        run(move || tx.send(std::thread::current().id()).unwrap()).unwrap();
        let third = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(third == first || third == second);

        // Idle long enough, they end (the guard: the idle time and 10 s).
        let end = Instant::now() + IDLE_EXIT + Duration::from_secs(10);
        until_idle(2);
        while pool_threads() > 0 {
            assert!(Instant::now() < end, "idle threads never ended");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(idle(), 0);
    }
}
