//! Copying bytes both ways between a client and its destination until both
//! sides are done.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};

/// A direction's buffer at first: most connections move little.
const FIRST_BUFFER: usize = 64 * 1024;
/// What a buffer grows to while reads keep filling it (a download): fewer,
/// larger copies. (`splice(2)` through a pipe measured slower than this
/// on loopback: `cargo bench -p conch-core --bench proxy`.)
const MAX_BUFFER: usize = 1024 * 1024;

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
    let mut buffer = vec![0u8; FIRST_BUFFER];
    loop {
        match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    let _ = from.shutdown(Shutdown::Read);
                    break;
                }
                if n == buffer.len() && n < MAX_BUFFER {
                    buffer.resize(n * 2, 0);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
