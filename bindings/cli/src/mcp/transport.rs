//! The MCP server's stdio: JSON-RPC messages, one a line, read from stdin
//! and written to stdout. A line that is no message the server knows is
//! answered here, as JSON-RPC 2.0 asks: with the request's own `id` when it
//! has one (`-32602` invalid params for a known method's request, `-32600`
//! invalid request otherwise), `-32700` with a `null` id when the line is
//! not JSON at all; a notification that does not parse is dropped (nothing
//! answers a notification). The MCP library's own stdio answered all of
//! these without an id, which a client cannot match to its request.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;

/// The longest line read (a longer one is dropped, unanswered): what a
/// request can be, with room to spare, and what bounds the server's memory.
const MAX_LINE: usize = 16 << 20;

/// Stdio as the MCP library's transport.
pub struct LineTransport<R, W> {
    input: R,
    /// What was read and not yet taken as lines; kept across calls, so a
    /// `receive` dropped mid-read loses nothing.
    pending: Vec<u8>,
    /// Whether the line being read is past [`MAX_LINE`] (its rest is
    /// dropped up to its newline).
    discarding: bool,
    output: Arc<Mutex<W>>,
}

impl<R, W> LineTransport<R, W> {
    pub fn new(input: R, output: W) -> Self {
        LineTransport {
            input,
            pending: Vec::new(),
            discarding: false,
            output: Arc::new(Mutex::new(output)),
        }
    }
}

/// Writes `line` and a newline, whole, under the lock.
async fn write_line<W: AsyncWrite + Unpin>(
    output: &Mutex<W>,
    mut line: Vec<u8>,
) -> std::io::Result<()> {
    line.push(b'\n');
    let mut out = output.lock().await;
    out.write_all(&line).await?;
    out.flush().await
}

/// The reply to a line that is not a message the server takes, if it
/// gets one.
fn refusal(line: &[u8], err: &serde_json::Error) -> Option<Value> {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Some(json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": -32700, "message": format!("Parse error: {err}")},
        }));
    };
    let id = value
        .get("id")
        .filter(|id| id.is_string() || id.is_number())?;
    let (code, message) = match value.get("method").and_then(Value::as_str) {
        Some(method) if value.get("jsonrpc") == Some(&json!("2.0")) => {
            let why = match value.get("params") {
                Some(params) if !params.is_object() && !params.is_array() => {
                    "params must be an object".to_string()
                }
                _ => err.to_string(),
            };
            (-32602, format!("Invalid params of {method}: {why}"))
        }
        _ => (-32600, format!("Invalid request: {err}")),
    };
    Some(json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    }))
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// The next whole line (without its newline), `None` at the end of
    /// input (a last line without a newline counts).
    async fn next_line(&mut self) -> Option<Vec<u8>> {
        let mut chunk = [0u8; 8192];
        loop {
            if let Some(at) = self.pending.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.pending.drain(..=at).collect();
                line.pop();
                if std::mem::replace(&mut self.discarding, false) {
                    continue;
                }
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Some(line);
            }
            if self.pending.len() > MAX_LINE {
                self.pending.clear();
                self.discarding = true;
            }
            match self.input.read(&mut chunk).await {
                Ok(0) | Err(_) => {
                    let rest = std::mem::take(&mut self.pending);
                    return (!rest.is_empty() && !self.discarding).then_some(rest);
                }
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

impl<R, W> rmcp::transport::Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let output = self.output.clone();
        async move {
            let line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            write_line(&output, line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let line = self.next_line().await?;
            let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice(line) {
                Ok(message) => return Some(message),
                Err(err) => {
                    if let Some(reply) = refusal(line, &err) {
                        // Written apart: a `receive` dropped meanwhile
                        // must not cut the reply short.
                        let output = self.output.clone();
                        let reply = serde_json::to_vec(&reply).expect("a JSON value");
                        tokio::spawn(async move { write_line(&output, reply).await });
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.output.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Option<Value> {
        let err = serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(line).unwrap_err();
        refusal(line.as_bytes(), &err)
    }

    #[test]
    fn a_request_that_does_not_parse_is_answered_with_its_id() {
        let r = reply(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}"#).unwrap();
        assert_eq!(r["id"], 7);
        assert_eq!(r["error"]["code"], -32602);
        let message = r["error"]["message"].as_str().unwrap();
        assert_eq!(
            message,
            "Invalid params of tools/call: params must be an object"
        );
        let r = reply(r#"{"id":"a","params":{}}"#).unwrap();
        assert_eq!(
            (r["id"].clone(), r["error"]["code"].clone()),
            (json!("a"), json!(-32600))
        );
    }

    #[test]
    fn what_is_not_json_is_a_parse_error_and_a_notification_gets_nothing() {
        let r = reply("{oops").unwrap();
        assert_eq!(
            (r["id"].clone(), r["error"]["code"].clone()),
            (Value::Null, json!(-32700))
        );
        assert_eq!(
            reply(r#"{"jsonrpc":"2.0","method":"notifications/x","params":"x"}"#),
            None
        );
    }
}
