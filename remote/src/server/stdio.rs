//! `conch serve --stdio`: the protocol's frames as lines on stdin and
//! stdout, so any exec primitive (`docker exec -i`, `kubectl exec -i`,
//! `ssh`) hosts a server with no port. The client is whoever holds the
//! pipe: no token is asked. One connection, so nobody can come back: when
//! stdin ends every session is closed at once, whatever the grace period.

use std::io;
use std::sync::Arc;

use futures_util::{StreamExt, future};
use memchr::memchr;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};

use super::Server;
use super::conn::{Incoming, Outgoing, serve};
use crate::protocol::{ErrorKind, Refusal, error_reply, too_large};

/// Serves the client on stdin and stdout until stdin ends; then closes
/// every session and returns once every frame is written.
pub async fn serve_stdio(server: Arc<Server>) -> io::Result<()> {
    let (out, mut frames) = Outgoing::new();
    let writer = tokio::spawn(async move {
        let mut stdout = BufWriter::new(tokio::io::stdout());
        while let Some(frame) = frames.recv().await {
            stdout.write_all(frame.as_bytes()).await?;
            stdout.write_all(b"\n").await?;
            // Written in batches: flushed when nothing else is queued.
            if frames.is_empty() {
                stdout.flush().await?;
            }
        }
        stdout.flush().await
    });
    let max = server.options().max_frame;
    let stdin = BufReader::new(tokio::io::stdin());
    let lines = futures_util::stream::unfold(stdin, move |mut stdin| async move {
        let line = next_line(&mut stdin, max).await.ok()??;
        Some((line, stdin))
    })
    .filter_map(future::ready);
    serve(server.clone(), Box::pin(lines), out).await;
    tokio::task::spawn_blocking(move || server.close_all())
        .await
        .map_err(io::Error::other)?;
    writer.await.map_err(io::Error::other)?
}

/// The next line of `reader` as a frame, without its newline: `None` at
/// the end of the input, `Some(None)` for a blank line. A line over `max`
/// bytes is refused without being kept, one that is not UTF-8 too.
pub(crate) async fn next_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> io::Result<Option<Option<Incoming>>> {
    let mut line = Vec::new();
    let mut over = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            // The end: a last line without its newline is a frame too.
            let read = over || !line.is_empty();
            return Ok(read.then(|| frame(line, over, max)));
        }
        let newline = memchr(b'\n', buf);
        let part = &buf[..newline.unwrap_or(buf.len())];
        if !over && line.len() + part.len() <= max {
            line.extend_from_slice(part);
        } else {
            over = true;
            line = Vec::new();
        }
        let used = newline.map_or(buf.len(), |i| i + 1);
        reader.consume(used);
        if newline.is_some() {
            return Ok(Some(frame(line, over, max)));
        }
    }
}

/// What one read line is: nothing (blank), a frame, or a refusal.
fn frame(line: Vec<u8>, over: bool, max: usize) -> Option<Incoming> {
    if over {
        return Some(Incoming::Refused(too_large(max)));
    }
    match String::from_utf8(line) {
        Ok(text) if text.trim().is_empty() => None,
        Ok(text) => Some(Incoming::Frame(text)),
        Err(_) => Some(Incoming::Refused(error_reply(
            &Value::Null,
            &Refusal::new(ErrorKind::BadRequest, "a frame is UTF-8 text"),
        ))),
    }
}
