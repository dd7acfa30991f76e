//! Copying bytes both ways between a client and its destination until both
//! sides are done.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};

/// The copy buffer: large enough that a loopback download is not bound by
/// system calls.
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
fn copy(mut from: TcpStream, mut to: TcpStream) {
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
    let _ = to.shutdown(Shutdown::Write);
}
