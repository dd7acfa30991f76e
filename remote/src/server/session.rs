//! One session of a server: what it hosts ([`Hosted`]), the frames it sent (numbered,
//! the newest kept for a client that reconnects), the connection it sends
//! them on while one is attached, and the requests it answered (so a retry
//! is answered once).
//!
//! Frames go out in order and one at a time: a session's sender waits for
//! room on its connection, so a client that stops reading holds back the
//! command's output as a full pipe would, and the server holds at most the
//! connection's queue and this session's [`KEPT_BYTES`]. With no connection
//! attached (the client dropped and has not come back), frames are only
//! kept: the command runs on, its whole output in its artifact.

use conch_core::sync::{deadline_after, lock, passed, wait_until};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use conch_core::{CancelToken, JobId, JobInfo};
use serde_json::{Value, json};

use super::answers::{Answers, Seen};
use super::conn::Outgoing;
use super::hosted::Hosted;

/// Bytes of a session's newest frames kept for a reconnecting client.
/// Older ones are dropped; a client that asks for them is told how many
/// it missed, and a run's result names the artifact with its whole output.
pub const KEPT_BYTES: usize = 1 << 20;

pub(crate) struct RemoteSession {
    pub id: String,
    pub hosted: Hosted,
    out: Mutex<Outbox>,
    answers: Answers,
    /// The cancel tokens of the runs asked for and not answered, by their
    /// request's id: an `abort` cancels them.
    runs: Mutex<HashMap<String, CancelToken>>,
    /// Counts the times the session lost its connection; a grace timer
    /// closes the session only if no client came back since it started.
    detaches: AtomicU64,
    /// The jobs whose end was sent as a `job_exit` event, so that a
    /// `close` is answered after the ends of the jobs it killed.
    ended: Mutex<HashSet<JobId>>,
    told: Condvar,
}

struct Outbox {
    /// The number of the last frame sent.
    seq: u64,
    /// The newest frames, oldest first, and their bytes.
    kept: VecDeque<(u64, Arc<str>)>,
    kept_bytes: usize,
    /// Where frames go, while a client is attached.
    conn: Option<Outgoing>,
}

impl RemoteSession {
    pub fn new(id: String, hosted: Hosted) -> Self {
        RemoteSession {
            id,
            hosted,
            out: Mutex::new(Outbox {
                seq: 0,
                kept: VecDeque::new(),
                kept_bytes: 0,
                conn: None,
            }),
            answers: Answers::default(),
            runs: Mutex::new(HashMap::new()),
            detaches: AtomicU64::new(0),
            ended: Mutex::new(HashSet::new()),
            told: Condvar::new(),
        }
    }

    fn outbox(&self) -> MutexGuard<'_, Outbox> {
        lock(&self.out)
    }

    /// Numbers `frame` (an object) as this session's next, keeps it, and
    /// sends it to the attached client, waiting for room. Called from a
    /// blocking thread, never from the runtime.
    pub fn send(&self, mut frame: Value) {
        let mut out = self.outbox();
        out.seq += 1;
        frame["session"] = json!(self.id);
        frame["seq"] = json!(out.seq);
        let text: Arc<str> = frame.to_string().into();
        let seq = out.seq;
        out.kept_bytes += text.len();
        out.kept.push_back((seq, text.clone()));
        while out.kept_bytes > KEPT_BYTES && out.kept.len() > 1 {
            if let Some((_, old)) = out.kept.pop_front() {
                out.kept_bytes -= old.len();
            }
        }
        if let Some(conn) = &out.conn
            && !conn.send(text)
        {
            out.conn = None;
        }
    }

    /// Makes `conn` the session's connection: first the frames kept after
    /// `after` (a gap event first, when some of them are no longer kept),
    /// then every new one. Returns the number of the last frame sent.
    pub fn attach(&self, conn: Outgoing, after: u64) -> u64 {
        let mut out = self.outbox();
        let oldest = out.kept.front().map_or(out.seq + 1, |(seq, _)| *seq);
        if after + 1 < oldest && after < out.seq {
            let gap = json!({"event": "gap", "session": self.id, "after": after,
                             "missed": oldest - after - 1});
            conn.send(gap.to_string().into());
        }
        for (_, text) in out.kept.iter().filter(|(seq, _)| *seq > after) {
            if !conn.send(text.clone()) {
                break;
            }
        }
        out.conn = Some(conn);
        out.seq
    }

    /// Forgets the connection if it is `conn` (it ended). Returns the
    /// detach's number when it was, for the grace timer.
    pub fn detach(&self, conn: &Outgoing) -> Option<u64> {
        let mut out = self.outbox();
        if out.conn.as_ref().is_some_and(|c| c.same(conn)) {
            out.conn = None;
            return Some(self.detaches.fetch_add(1, Ordering::SeqCst) + 1);
        }
        None
    }

    /// Whether the session is still without a client since detach `n`.
    pub fn still_detached(&self, n: u64) -> bool {
        let out = self.outbox();
        out.conn.is_none() && self.detaches.load(Ordering::SeqCst) == n
    }

    /// Keeps the cancel token of the run asked for by request `id`.
    pub fn register_run(&self, id: &Value, cancel: CancelToken) {
        let mut runs = lock(&self.runs);
        runs.entry(id.to_string()).or_insert(cancel);
    }

    pub fn forget_run(&self, id: &Value) {
        let mut runs = lock(&self.runs);
        runs.remove(&id.to_string());
    }

    /// Cancels the run asked for by request `id`, or every run of the
    /// session when `id` is `None`; returns how many it cancelled.
    pub fn cancel_runs(&self, id: Option<&Value>) -> usize {
        let runs = lock(&self.runs);
        let wanted = id.map(Value::to_string);
        let mut n = 0;
        for (key, token) in runs.iter() {
            if wanted.as_ref().is_none_or(|w| w == key) {
                token.cancel();
                n += 1;
            }
        }
        n
    }

    /// Sends the end of a job as a `job_exit` event.
    pub fn job_ended(&self, info: &JobInfo) {
        self.send(json!({"event": "job_exit", "job": info}));
        let mut ended = lock(&self.ended);
        ended.insert(info.job);
        self.told.notify_all();
    }

    /// Waits (at most `wait`) until the end of each of `jobs` was sent.
    pub fn wait_ended(&self, jobs: &[JobId], wait: Duration) {
        let deadline = deadline_after(wait);
        let mut ended = lock(&self.ended);
        while !jobs.iter().all(|job| ended.contains(job)) {
            let now = Instant::now();
            if passed(deadline, now) {
                return;
            }
            ended = wait_until(&self.told, ended, deadline, now);
        }
    }

    /// What the request `id` is to this session; a new one is marked
    /// running.
    pub fn seen(&self, id: &Value) -> Seen {
        self.answers.seen(id)
    }

    /// Sends the reply of request `id` and keeps it for a retry.
    pub fn answer(&self, id: &Value, reply: Value) {
        self.answers.keep(id, &reply);
        self.send(reply);
    }
}
