//! Deciding when and how to stop a running command: its deadline, its
//! cancel token and a satisfied head limit, then the kill escalation.

use std::time::{Duration, Instant};

use super::no_terminal::Program;
use super::tree::{Escalating, Escalation, EscalationStep};
use crate::CancelToken;
use crate::sync::deadline_after;

/// Why a command was stopped before it ended by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Timeout,
    Cancel,
    /// The head limit was satisfied; the rest of the output is not wanted.
    Head,
    /// The session reached its process limit (the number) and stayed at
    /// it: forks were refused, and bash would retry them until the
    /// timeout (docs/behaviour.md, section 16).
    ProcessLimit(u64),
    /// bash stopped reporting after the command: it skips its own steps
    /// (a `DEBUG` trap that fails under `extdebug`). It cannot be brought
    /// back: the session ends (docs/behaviour.md, section 7).
    Unreported,
    /// The command ran a full-screen program without a terminal (the
    /// program named), which would wait for keys until the timeout
    /// (docs/behaviour.md, section 9). Stopped as a timeout stops it.
    NoTerminal(Program),
}

impl Stop {
    /// Whether the command was ended before it ended by itself (no exit
    /// status; the result is `cancelled`): all but a satisfied head limit.
    pub fn ends_command(self) -> bool {
        !matches!(self, Stop::Head)
    }
}

/// Watches the deadline, the cancel token and the head limit, and starts
/// the kill escalation once one of them fires.
pub struct Stopper {
    deadline: Option<Instant>,
    cancel: CancelToken,
    escalation: Escalation,
    escalating: Option<Escalating>,
    pub reason: Option<Stop>,
}

impl Stopper {
    /// The clock starts now: callers create the stopper when the command
    /// starts. A timeout too far away for the clock (the faces refuse
    /// those, a Rust caller may pass `Duration::MAX`) is no deadline.
    pub fn new(timeout: Option<Duration>, cancel: CancelToken, escalation: Escalation) -> Self {
        Stopper {
            deadline: timeout.and_then(deadline_after),
            cancel,
            escalation,
            escalating: None,
            reason: None,
        }
    }

    /// When the event loop must wake up at the latest.
    pub fn wake_at(&self) -> Option<Instant> {
        match &self.escalating {
            Some(c) => c.next_at(),
            None => self.deadline,
        }
    }

    /// Stops the command for `reason`, found by the caller: the kill
    /// escalation starts now. Nothing if it is being stopped already.
    pub fn stop(&mut self, reason: Stop) {
        if self.reason.is_none() {
            self.reason = Some(reason);
            self.escalating = Some(self.escalation.start());
        }
    }

    /// Records `reason` for a command the caller ends itself (by killing
    /// its bash): no escalation follows.
    pub fn ended(&mut self, reason: Stop) {
        if self.reason.is_none() {
            self.reason = Some(reason);
        }
    }

    /// Checks the triggers at `now`; returns the escalation step due, if any.
    pub fn check(&mut self, now: Instant, head_satisfied: bool) -> Option<EscalationStep> {
        if self.escalating.is_none() && self.reason.is_some() {
            // Ended by the caller ([`Stopper::ended`]).
            return None;
        }
        if self.escalating.is_none() {
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
            self.escalating = Some(self.escalation.start());
        }
        self.escalating.as_mut()?.due(now)
    }
}
