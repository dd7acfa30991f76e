//! The MCP server's stdio: JSON-RPC messages, one a line, read from stdin
//! and written to stdout.
//!
//! A line that is no message the server takes is answered here, as
//! JSON-RPC 2.0 asks (the MCP library's own stdio answered these without an
//! id, which a client cannot match to its request):
//! - with the request's own `id` when it has one: `-32602` invalid params
//!   for a request of a method whose params are not an object or do not
//!   fit a method the server serves, `-32600` invalid request otherwise;
//! - with a `null` id when there is no id to answer with: `-32700` for a
//!   line that is not JSON; `-32600` for an id that is not one (rmcp takes
//!   a string or a 64-bit integer), for JSON that is not an object, for a
//!   batch (an array: MCP no longer has batches, and rmcp none) and for an
//!   object that is neither a request nor a notification.
//!
//! A notification that does not parse is dropped (nothing answers a
//! notification), and so is a line longer than [`MAX_LINE`].
//!
//! The transport also gives each `tools/call` its turn as it comes (see
//! [`super::turns`]): it is what reads the messages in their order.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, ClientRequest, ConstString, InitializeRequest,
    InitializeResultMethod, JsonRpcMessage, JsonRpcRequest, ListResourceTemplatesRequest,
    ListResourceTemplatesRequestMethod, ListResourcesRequest, ListResourcesRequestMethod,
    ListToolsRequest, ListToolsRequestMethod, PingRequest, PingRequestMethod, ReadResourceRequest,
    ReadResourceRequestMethod, RequestId,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use super::turns::Turns;

/// The longest line read (a longer one is dropped, unanswered): what a
/// request can be, with room to spare, and what bounds the server's memory.
const MAX_LINE: usize = 16 << 20;

/// JSON-RPC 2.0's codes for a line the server does not take.
const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;
const INVALID_PARAMS: i32 = -32602;

/// Stdio as the MCP library's transport.
pub struct LineTransport<R, W> {
    /// Buffered for `read_until`, which looks for a line's end in what
    /// each read brought, each byte once: searching all that was read of
    /// the line on each read made a long line take a time growing with
    /// the square of its length.
    input: BufReader<R>,
    /// The line being read, kept across calls: rmcp drops a `receive`
    /// whenever it has something else to do, and what it read is not lost.
    pending: Vec<u8>,
    /// Whether the line being read is past [`MAX_LINE`] (its rest is
    /// dropped up to its newline).
    discarding: bool,
    output: Arc<Mutex<W>>,
    turns: Turns,
}

impl<R: AsyncRead, W> LineTransport<R, W> {
    pub fn new(input: R, output: W) -> Self {
        LineTransport {
            input: BufReader::new(input),
            pending: Vec::new(),
            discarding: false,
            output: Arc::new(Mutex::new(output)),
            turns: Turns::default(),
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

/// A JSON-RPC error reply.
fn error_reply(id: Value, code: i32, message: String) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    })
}

/// The message `line` holds, or else the reply it gets, if any.
fn read_message(line: &[u8]) -> Result<RxJsonRpcMessage<RoleServer>, Option<Value>> {
    let message = serde_json::from_slice(line).map_err(|err| refusal(line, &err))?;
    if let JsonRpcMessage::Request(JsonRpcRequest {
        id,
        request: ClientRequest::CustomRequest(custom),
        ..
    }) = &message
        && let Some(why) = misfit(&custom.method, line)
    {
        let message = format!("Invalid params of {}: {why}", custom.method);
        return Err(Some(error_reply(
            id.clone().into_json_value(),
            INVALID_PARAMS,
            message,
        )));
    }
    Ok(message)
}

/// Why `line`, a request of `method`, is not one of that method's, for the
/// methods this server serves: rmcp's own error does not say (it tries
/// every kind of message and names none), and it takes a request of a
/// method it knows whose params do not fit for one of a method of the
/// server's own (a custom request), which the server would answer as a
/// method it does not know. The method's own type says what is wrong.
fn misfit(method: &str, line: &[u8]) -> Option<String> {
    fn why<T: DeserializeOwned>(line: &[u8]) -> Option<String> {
        serde_json::from_slice::<T>(line)
            .err()
            .map(|e| e.to_string())
    }
    match method {
        InitializeResultMethod::VALUE => why::<InitializeRequest>(line),
        PingRequestMethod::VALUE => why::<PingRequest>(line),
        ListToolsRequestMethod::VALUE => why::<ListToolsRequest>(line),
        CallToolRequestMethod::VALUE => why::<CallToolRequest>(line),
        ListResourcesRequestMethod::VALUE => why::<ListResourcesRequest>(line),
        ListResourceTemplatesRequestMethod::VALUE => why::<ListResourceTemplatesRequest>(line),
        ReadResourceRequestMethod::VALUE => why::<ReadResourceRequest>(line),
        _ => None,
    }
}

/// The reply to a line that is not a message rmcp reads (`err` says why
/// not), if it gets one.
fn refusal(line: &[u8], err: &serde_json::Error) -> Option<Value> {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Some(error_reply(
            Value::Null,
            PARSE_ERROR,
            format!("Parse error: {err}"),
        ));
    };
    let invalid = |why: &str| {
        Some(error_reply(
            Value::Null,
            INVALID_REQUEST,
            format!("Invalid request: {why}"),
        ))
    };
    let message = match value {
        Value::Object(message) => message,
        Value::Array(_) => return invalid("batches are not supported: send one message a line"),
        _ => return invalid("a message is a JSON object"),
    };
    let Some(id) = message.get("id") else {
        return match message.get("method") {
            // A notification: nothing answers it.
            Some(Value::String(_)) => None,
            _ => invalid(&err.to_string()),
        };
    };
    // rmcp's own reading of an id says which it takes; JSON-RPC 2.0
    // answers one it could not read with a null id.
    if let Err(why) = RequestId::deserialize(id) {
        return invalid(&format!("bad id: {why}"));
    }
    let (code, message) = match message.get("method").and_then(Value::as_str) {
        Some(method) if message.get("jsonrpc") == Some(&json!("2.0")) => {
            let why = match message.get("params") {
                Some(params) if !params.is_object() => "params must be an object".to_string(),
                _ => misfit(method, line).unwrap_or_else(|| err.to_string()),
            };
            (INVALID_PARAMS, format!("Invalid params of {method}: {why}"))
        }
        _ => (INVALID_REQUEST, format!("Invalid request: {err}")),
    };
    Some(error_reply(id.clone(), code, message))
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// The next whole line (without its newline), `None` at the end of
    /// input (a last line without a newline counts).
    async fn next_line(&mut self) -> Option<Vec<u8>> {
        loop {
            if self.pending.len() > MAX_LINE {
                self.pending.clear();
                self.discarding = true;
            }
            // One byte past the limit tells a line is over it.
            let room = (MAX_LINE + 1 - self.pending.len()) as u64;
            let read = (&mut self.input)
                .take(room)
                .read_until(b'\n', &mut self.pending)
                .await;
            if !matches!(read, Ok(n) if n > 0) {
                let rest = std::mem::take(&mut self.pending);
                return (!rest.is_empty() && !self.discarding).then_some(rest);
            }
            if self.pending.last() == Some(&b'\n') {
                let mut line = std::mem::take(&mut self.pending);
                line.pop();
                if std::mem::replace(&mut self.discarding, false) {
                    continue;
                }
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Some(line);
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
            match read_message(line) {
                Ok(mut message) => {
                    if let JsonRpcMessage::Request(JsonRpcRequest {
                        request: ClientRequest::CallToolRequest(call),
                        ..
                    }) = &mut message
                    {
                        call.extensions.insert(self.turns.next());
                    }
                    return Some(message);
                }
                Err(Some(reply)) => {
                    // Written apart: a `receive` dropped meanwhile must
                    // not cut the reply short.
                    let output = self.output.clone();
                    let reply = serde_json::to_vec(&reply).expect("a JSON value");
                    tokio::spawn(async move { write_line(&output, reply).await });
                }
                Err(None) => {}
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
