//! The mechanics both bash engines share while a command runs: one `poll`
//! over its output, its status pipe, its pidfd and the waker of a cancel;
//! the output moved into the sink as it comes, the status bytes handed back.
//! The thread sleeps in `poll` until one of them is ready: a busy machine
//! (a host running agents) gives the CPU to bash and its commands meanwhile.
//! What to make of the status and when to stop is each engine's own.

use std::os::fd::RawFd;
use std::time::Instant;

use super::io::{Read, Waker, poll, pollin, read, ready};
use super::pump::{DRAIN_BUDGET, Pump, READ_BUDGET, read_error};
use crate::Result;

const OUT: usize = 0;
const STATUS: usize = 1;
const EXIT: usize = 2;
const WAKER: usize = 3;

/// The descriptors of one running command, polled together.
pub struct Watch<'w> {
    fds: [libc::pollfd; 4],
    waker: &'w Waker,
    status_buf: [u8; 512],
}

/// What one [`Watch::turn`] saw.
pub struct Seen<'a> {
    /// What the status pipe gave in this turn (often nothing).
    pub status: &'a [u8],
    /// The process has exited (its pidfd is readable).
    pub exited: bool,
}

impl<'w> Watch<'w> {
    pub fn new(out: RawFd, status: RawFd, pidfd: RawFd, waker: &'w Waker) -> Watch<'w> {
        Watch {
            fds: [
                pollin(out),
                pollin(status),
                pollin(pidfd),
                pollin(waker.raw()),
            ],
            waker,
            status_buf: [0; 512],
        }
    }

    /// Waits until something happens or `until` (`None`: no limit), then
    /// moves the output into `pump` and reads the status pipe.
    pub fn turn(&mut self, pump: &mut Pump<'_>, until: Option<Instant>) -> Result<Seen<'_>> {
        poll(&mut self.fds, until)?;
        let fds = &mut self.fds;
        if ready(&fds[OUT])
            && pump
                .read_available(fds[OUT].fd, READ_BUDGET)
                .map_err(read_error)?
        {
            fds[OUT].fd = -1;
        }
        let mut got = 0;
        if ready(&fds[STATUS]) {
            match read(fds[STATUS].fd, &mut self.status_buf).map_err(read_error)? {
                Read::Data(n) => got = n,
                Read::Eof => fds[STATUS].fd = -1,
                Read::WouldBlock => {}
            }
        }
        if ready(&fds[WAKER]) {
            self.waker.reset();
        }
        Ok(Seen {
            status: &self.status_buf[..got],
            exited: ready(&fds[EXIT]),
        })
    }

    /// Marks the output and status pipes as closed, as an earlier
    /// [`Watch`] of the same run found them ([`Watch::output_open`],
    /// [`Watch::status_open`]): a run driven in steps.
    pub fn resume(mut self, output_open: bool, status_open: bool) -> Self {
        if !output_open {
            self.fds[OUT].fd = -1;
        }
        if !status_open {
            self.fds[STATUS].fd = -1;
        }
        self
    }

    /// Whether the output pipe is still open (not at its end).
    pub fn output_open(&self) -> bool {
        self.fds[OUT].fd >= 0
    }

    /// Whether the status pipe is still open (the process may still write
    /// a status; closed also when it `exec`ed away).
    pub fn status_open(&self) -> bool {
        self.fds[STATUS].fd >= 0
    }

    /// After the end: what the output pipe already holds, bounded so a
    /// background job that never stops writing cannot hold the call.
    pub fn drain(&mut self, pump: &mut Pump<'_>) -> Result<()> {
        if self.fds[OUT].fd >= 0 {
            pump.read_available(self.fds[OUT].fd, DRAIN_BUDGET)
                .map_err(read_error)?;
        }
        Ok(())
    }
}
