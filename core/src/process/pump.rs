//! Moving a running command's output into its sink, a budget at a time.

use std::io;
use std::os::fd::RawFd;

use super::io::{Read, read};
use crate::output::fullscreen::Signs;
use crate::output::sink::OutputSink;

/// Read size of a run's first read: most commands print little, and a
/// buffer is zeroed when it is made (a 256 KiB one per run cost a memset
/// of it, and the CPU's cache it swept, on every builtin run).
const FIRST_READ_SIZE: usize = 4 * 1024;
/// Read size once a read filled the buffer: large enough that a flood
/// costs few system calls.
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
/// each sanitized piece to the caller's chunk callback, and shows the raw
/// bytes to the scan for full-screen programs ([`Signs`]).
pub struct Pump<'a> {
    pub sink: OutputSink,
    on_chunk: &'a mut dyn FnMut(&str),
    buf: Vec<u8>,
    /// What the raw output showed of a full-screen program.
    pub signs: Signs,
}

impl<'a> Pump<'a> {
    pub fn new(sink: OutputSink, on_chunk: &'a mut dyn FnMut(&str)) -> Self {
        Pump {
            sink,
            on_chunk,
            buf: vec![0; FIRST_READ_SIZE],
            signs: Signs::default(),
        }
    }

    /// A pump with the sink and read buffer of an earlier one
    /// ([`Pump::into_parts`]): a run driven in steps, each with the
    /// callback of the thread driving it. Its [`Signs`] start afresh: a
    /// run's event loop keeps them between steps.
    pub fn from_parts(parts: (OutputSink, Vec<u8>), on_chunk: &'a mut dyn FnMut(&str)) -> Self {
        let (sink, buf) = parts;
        Pump {
            sink,
            on_chunk,
            buf,
            signs: Signs::default(),
        }
    }

    /// The sink and the read buffer, for [`Pump::from_parts`].
    pub fn into_parts(self) -> (OutputSink, Vec<u8>) {
        (self.sink, self.buf)
    }

    /// Reads what `fd` has now, up to `budget` bytes. `Ok(true)` at EOF.
    pub fn read_available(&mut self, fd: RawFd, budget: usize) -> io::Result<bool> {
        let mut taken = 0;
        while taken < budget {
            match read(fd, &mut self.buf)? {
                Read::Data(n) => {
                    taken += n;
                    self.signs.push(&self.buf[..n]);
                    for text in self.sink.push(&self.buf[..n]).pieces() {
                        (self.on_chunk)(text);
                    }
                    if n == self.buf.len() && n < READ_SIZE {
                        // More is coming than the first buffer holds.
                        self.buf.resize(READ_SIZE, 0);
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
