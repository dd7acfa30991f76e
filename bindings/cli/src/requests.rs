//! The lines a server reads on stdin, or the signal that stops it,
//! whichever comes first.
//!
//! A server blocked in `read` on stdin cannot see SIGTERM or SIGHUP: the
//! default action kills it with no final reply, and a handler that only
//! sets a flag leaves the read blocked. So the read waits in one `poll` on
//! stdin and on a socket that signal-hook writes a byte to when a stop
//! signal arrives (the only async-signal-safe thing a handler does), and
//! the server ends as at the client's goodbye: what is in flight is
//! cancelled and answered.

use std::io;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

use rustix::event::{PollFd, PollFlags, poll};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// What [`Requests::next`] found.
pub enum Next {
    /// A line (its newline removed), in the caller's buffer.
    Line,
    /// The end of stdin.
    End,
    /// SIGTERM, SIGHUP or SIGINT.
    Stopped,
}

/// stdin as lines, with the stop signals watched.
pub struct Requests {
    stdin: io::Stdin,
    stop: UnixStream,
    /// Read from stdin and not yet handed out as a line.
    pending: Vec<u8>,
    /// How much of `pending` holds no newline: each read is searched alone,
    /// so a long line costs its length, not its length squared.
    searched: usize,
    ended: bool,
}

impl Requests {
    /// Starts watching the stop signals (for the rest of the process).
    pub fn new() -> io::Result<Requests> {
        let (stop, notify) = UnixStream::pair()?;
        for signal in [SIGTERM, SIGHUP, SIGINT] {
            signal_hook::low_level::pipe::register(signal, notify.try_clone()?)?;
        }
        Ok(Requests {
            stdin: io::stdin(),
            stop,
            pending: Vec::new(),
            searched: 0,
            ended: false,
        })
    }

    /// The next line into `line` (bytes: a line that is not UTF-8 is a bad
    /// request to answer, not the end), the end of stdin (a last line
    /// without a newline is a line first), or a stop signal.
    pub fn next(&mut self, line: &mut Vec<u8>) -> io::Result<Next> {
        loop {
            let unsearched = &self.pending[self.searched..];
            if let Some(at) = unsearched.iter().position(|&b| b == b'\n') {
                let end = self.searched + at;
                self.searched = 0;
                line.clear();
                line.extend(self.pending.drain(..=end).take(end));
                return Ok(Next::Line);
            }
            self.searched = self.pending.len();
            if self.ended {
                if self.pending.is_empty() {
                    return Ok(Next::End);
                }
                line.clear();
                line.append(&mut self.pending);
                self.searched = 0;
                return Ok(Next::Line);
            }
            if self.wait()? {
                return Ok(Next::Stopped);
            }
            // Straight from the descriptor: a buffer in between could hold
            // a line that `poll` does not see.
            let mut buf = [0u8; 64 * 1024];
            match rustix::io::read(self.stdin.as_fd(), &mut buf) {
                Ok(0) => self.ended = true,
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Waits until stdin can be read; true when a stop signal came first.
    fn wait(&self) -> io::Result<bool> {
        let mut fds = [
            PollFd::new(&self.stdin, PollFlags::IN),
            PollFd::new(&self.stop, PollFlags::IN),
        ];
        loop {
            match poll(&mut fds, None) {
                Ok(_) => break,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(!fds[1].revents().is_empty())
    }
}
