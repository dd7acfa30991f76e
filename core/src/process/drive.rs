//! Driving a running command: moving its output into the sink and deciding
//! when and how to stop it.

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use super::io::{Read, read};
use super::tree::{Climb, KillLadder, Rung};
use crate::CancelToken;
use crate::output::sink::OutputSink;

/// Read size: large enough that a flood costs few system calls.
const READ_SIZE: usize = 256 * 1024;
/// Output read per wake-up before an event loop looks at its other sources.
pub const READ_BUDGET: usize = 4 << 20;
/// Output drained after the command ended: what is already in the pipe,
/// bounded so a background job that never stops writing cannot hold a call.
pub const DRAIN_BUDGET: usize = 8 << 20;

/// A failed read of a command's output or status pipe, as a conch error.
pub fn read_error(e: io::Error) -> crate::Error {
    crate::Error::io("cannot read command output", e)
}

/// Moves bytes from an output descriptor into an [`OutputSink`], handing
/// each sanitized piece to the caller's chunk callback.
pub struct Pump<'a> {
    pub sink: OutputSink,
    on_chunk: &'a mut dyn FnMut(&str),
    buf: Vec<u8>,
}

impl<'a> Pump<'a> {
    pub fn new(sink: OutputSink, on_chunk: &'a mut dyn FnMut(&str)) -> Self {
        Pump {
            sink,
            on_chunk,
            buf: vec![0; READ_SIZE],
        }
    }

    /// Reads what `fd` has now, up to `budget` bytes. `Ok(true)` at EOF.
    pub fn read_available(&mut self, fd: RawFd, budget: usize) -> io::Result<bool> {
        let mut taken = 0;
        while taken < budget {
            match read(fd, &mut self.buf)? {
                Read::Data(n) => {
                    taken += n;
                    let text = self.sink.push(&self.buf[..n]);
                    if !text.is_empty() {
                        (self.on_chunk)(text);
                    }
                }
                Read::WouldBlock => return Ok(false),
                Read::Eof => return Ok(true),
            }
        }
        Ok(false)
    }

    /// Flushes the sanitizer's pending state at the end of the stream.
    pub fn finish(&mut self) {
        let text = self.sink.finish();
        if !text.is_empty() {
            (self.on_chunk)(text);
        }
    }
}

/// Why a command was stopped before it ended by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Timeout,
    Cancel,
    /// The head limit was satisfied; the rest of the output is not wanted.
    Head,
}

/// Watches the deadline, the cancel token and the head limit, and climbs
/// the kill ladder once one of them fires.
pub struct Stopper {
    deadline: Option<Instant>,
    cancel: CancelToken,
    ladder: KillLadder,
    climb: Option<Climb>,
    pub reason: Option<Stop>,
}

impl Stopper {
    /// The clock starts now: callers create the stopper when the command starts.
    pub fn new(timeout: Option<Duration>, cancel: CancelToken, ladder: KillLadder) -> Self {
        Stopper {
            deadline: timeout.map(|t| Instant::now() + t),
            cancel,
            ladder,
            climb: None,
            reason: None,
        }
    }

    /// When the event loop must wake up at the latest.
    pub fn wake_at(&self) -> Option<Instant> {
        match &self.climb {
            Some(c) => c.next_at(),
            None => self.deadline,
        }
    }

    /// Checks the triggers at `now`; returns the ladder rung due, if any.
    pub fn check(&mut self, now: Instant, head_satisfied: bool) -> Option<Rung> {
        if self.climb.is_none() {
            self.reason = if self.cancel.is_cancelled() {
                Some(Stop::Cancel)
            } else if self.deadline.is_some_and(|d| now >= d) {
                Some(Stop::Timeout)
            } else if head_satisfied {
                Some(Stop::Head)
            } else {
                None
            };
            self.reason?;
            self.climb = Some(self.ladder.climb());
        }
        self.climb.as_mut()?.due(now)
    }
}
