//! Copying bytes both ways between a client and its destination until both
//! sides are done.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};

/// The most bytes one copy moves: large enough that a loopback download is
/// not bound by system calls.
const BUFFER: usize = 256 * 1024;

/// Relays `client` ↔ `upstream`, first sending `upstream` what the client
/// already sent past its request (`pending`). Each direction's end is
/// passed on as a half close, so a client that ends its upload still gets
/// the whole answer. Returns when both directions are done.
pub(super) fn relay(client: TcpStream, upstream: TcpStream, pending: &[u8]) -> io::Result<()> {
    client.set_read_timeout(None)?;
    let mut up = upstream.try_clone()?;
    up.write_all(pending)?;
    let client_in = client.try_clone()?;
    let down = std::thread::Builder::new()
        .name("conch-proxy-down".into())
        .spawn(move || copy(upstream, client))?;
    copy(client_in, up);
    let _ = down.join();
    Ok(())
}

/// Copies until `from` ends or either side fails, then half-closes `to`.
fn copy(from: TcpStream, to: TcpStream) {
    #[cfg(target_os = "linux")]
    let from = match splice(&from, &to) {
        Spliced::Done => {
            let _ = to.shutdown(Shutdown::Write);
            return;
        }
        Spliced::Unsupported => from,
    };
    copy_through_buffer(from, &to);
    let _ = to.shutdown(Shutdown::Write);
}

fn copy_through_buffer(mut from: TcpStream, mut to: &TcpStream) {
    let mut buffer = vec![0u8; BUFFER];
    loop {
        match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    let _ = from.shutdown(Shutdown::Read);
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
}

#[cfg(target_os = "linux")]
enum Spliced {
    /// The stream ended (or a side failed): nothing is left to copy.
    Done,
    /// The kernel would not splice these sockets: nothing was moved yet.
    Unsupported,
}

/// Moves the bytes through a pipe inside the kernel (`splice(2)`), never
/// through this process's memory: a loopback download through the proxy
/// runs near the speed of a direct one.
#[cfg(target_os = "linux")]
fn splice(from: &TcpStream, to: &TcpStream) -> Spliced {
    use rustix::io::Errno;
    use rustix::pipe::{PipeFlags, SpliceFlags, pipe_with, splice};
    let Ok((pipe_out, pipe_in)) = pipe_with(PipeFlags::CLOEXEC) else {
        return Spliced::Unsupported;
    };
    // A larger pipe moves more per call (the default holds 64 KiB); a
    // refusal (a lowered `pipe-max-size`) leaves the default, which works.
    let _ = rustix::pipe::fcntl_setpipe_size(&pipe_in, BUFFER);
    let mut moved_any = false;
    loop {
        let n = match splice(from, None, &pipe_in, None, BUFFER, SpliceFlags::MOVE) {
            Ok(0) => return Spliced::Done,
            Ok(n) => n,
            Err(Errno::INTR) => continue,
            Err(Errno::INVAL) if !moved_any => return Spliced::Unsupported,
            Err(_) => return Spliced::Done,
        };
        moved_any = true;
        let mut left = n;
        while left > 0 {
            match splice(&pipe_out, None, to, None, left, SpliceFlags::MOVE) {
                Ok(0) => return Spliced::Done,
                Ok(m) => left -= m,
                Err(Errno::INTR) => continue,
                Err(_) => {
                    let _ = from.shutdown(Shutdown::Read);
                    return Spliced::Done;
                }
            }
        }
    }
}
