//! The frames of the remote protocol (docs/remote.md): what a client sends
//! (a [`Request`]), what a server answers (a reply) and tells (an event).
//! Every frame is one JSON object: a line on stdio, a text message on a
//! WebSocket. Options and results inside them are the core's own serialized
//! form (`conch_core::wire`): nothing is declared twice for the wire.
//!
//! - A request: `{"id": 7, "op": "run", "session": "s1", "options": {…}}`.
//!   The id is the client's (a string or a number) and makes a retry safe:
//!   a request repeated with the same id is answered once.
//! - A reply: `{"id": 7, "ok": …}` or `{"id": 7, "error": {"kind": …,
//!   "message": …}}`.
//! - An event: `{"event": "chunk", "id": 7, "text": "…"}`.
//!
//! What a session sends (its replies and events) also carries
//! `"session"` and `"seq"`, the frame's number in that session, from 1: a
//! client that reconnects asks for what came after the last it saw.

use serde_json::{Map, Value, json};

/// The protocol's version, told in the `hello` reply.
pub const PROTOCOL: u32 = 1;

/// The largest frame a server or client reads by default (a file written
/// through the protocol travels in one frame).
pub const MAX_FRAME: usize = 16 << 20;

/// Why the protocol refused a request: the `kind` of its error reply.
/// (An error of the core's own is sent as the core serializes it,
/// `conch_core::wire::error_to_wire`, with the core's kinds.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The frame is not a request (not JSON, no `op`, an unknown `op`).
    BadRequest,
    /// A value has the wrong type (Python's and JavaScript's `TypeError`).
    WrongType,
    /// A value the core's check refused (`<name> must be …, got …`).
    BadValue,
    /// No session of that id (never opened, closed, or its grace period
    /// ran out).
    UnknownSession,
    /// The server holds as many sessions as it may.
    TooManySessions,
}

impl ErrorKind {
    const ALL: [ErrorKind; 5] = [
        ErrorKind::BadRequest,
        ErrorKind::WrongType,
        ErrorKind::BadValue,
        ErrorKind::UnknownSession,
        ErrorKind::TooManySessions,
    ];

    /// The kind as it is spelled on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::WrongType => "wrong_type",
            ErrorKind::BadValue => "bad_value",
            ErrorKind::UnknownSession => "unknown_session",
            ErrorKind::TooManySessions => "too_many_sessions",
        }
    }

    fn parse(text: &str) -> Option<ErrorKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// A refused request.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The protocol's refusal: its kind and the text a user reads.
    Request { kind: ErrorKind, message: String },
    /// The core's error, serialized.
    Core(Map<String, Value>),
}

impl Refusal {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Refusal::Request {
            kind,
            message: message.into(),
        }
    }

    /// The text a user reads.
    pub fn message(&self) -> &str {
        match self {
            Refusal::Request { message, .. } => message,
            Refusal::Core(error) => error.get("message").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The error reply's `error` object.
    fn to_wire(&self) -> Value {
        match self {
            Refusal::Request { kind, message } => {
                json!({"kind": kind.as_str(), "message": message})
            }
            Refusal::Core(error) => Value::Object(error.clone()),
        }
    }

    fn from_wire(error: &Map<String, Value>) -> Refusal {
        let kind = error
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match ErrorKind::parse(kind) {
            Some(kind) => Refusal::new(
                kind,
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            None => Refusal::Core(error.clone()),
        }
    }
}

impl From<conch_core::wire::Refused> for Refusal {
    fn from(refused: conch_core::wire::Refused) -> Self {
        let kind = if refused.wrong_type {
            ErrorKind::WrongType
        } else {
            ErrorKind::BadValue
        };
        Refusal::new(kind, refused.message)
    }
}

impl From<conch_core::Error> for Refusal {
    fn from(err: conch_core::Error) -> Self {
        match conch_core::wire::error_to_wire(&err) {
            Value::Object(error) => Refusal::Core(error),
            _ => unreachable!("an error serializes to an object"),
        }
    }
}

/// The `kind` of the error reply of a tool call that the tool refused or
/// failed: the reply's `tool_error` is the core's `ToolError`, serialized
/// (its own `kind`: `blocked`, `failed`, `aborted`, `closed`).
pub const TOOL_ERROR: &str = "tool_error";

impl From<conch_core::tool::ToolError> for Refusal {
    fn from(err: conch_core::tool::ToolError) -> Self {
        let mut error = Map::new();
        error.insert("kind".into(), json!(TOOL_ERROR));
        error.insert("message".into(), json!(err.message()));
        error.insert(
            "tool_error".into(),
            serde_json::to_value(&err).expect("a tool error serializes"),
        );
        Refusal::Core(error)
    }
}

impl Refusal {
    /// The tool's error this refusal carries, if it is one.
    pub fn tool_error(&self) -> Option<conch_core::tool::ToolError> {
        match self {
            Refusal::Core(error) if error.get("kind") == Some(&json!(TOOL_ERROR)) => {
                serde_json::from_value(error.get("tool_error")?.clone()).ok()
            }
            _ => None,
        }
    }
}

/// A request as a server reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The client's id, echoed in the reply.
    pub id: Value,
    pub op: String,
    /// The session it is for, when it is for one.
    pub session: Option<String>,
    /// The rest of its fields.
    pub fields: Map<String, Value>,
}

impl Request {
    /// The field `name` of the request, if given and not `null`.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.fields.get(name).filter(|v| !v.is_null())
    }
}

/// Reads a request from a frame, or the error reply for a frame that is
/// not one (its id when it has one, `null` otherwise).
pub fn read_request(frame: &str) -> Result<Request, Value> {
    let value: Value = serde_json::from_str(frame).map_err(|e| {
        error_reply(
            &Value::Null,
            &Refusal::new(ErrorKind::BadRequest, format!("not JSON: {e}")),
        )
    })?;
    let Value::Object(mut fields) = value else {
        return Err(error_reply(
            &Value::Null,
            &Refusal::new(ErrorKind::BadRequest, "a request is a JSON object"),
        ));
    };
    let id = fields.remove("id").unwrap_or(Value::Null);
    if !(id.is_string() || id.is_u64() || id.is_i64()) {
        // Not an id a reply could be matched by: answered with none.
        return Err(error_reply(
            &Value::Null,
            &Refusal::new(
                ErrorKind::BadRequest,
                format!("id must be a string or a whole number, got {id}"),
            ),
        ));
    }
    let refuse = |message: String| error_reply(&id, &Refusal::new(ErrorKind::BadRequest, message));
    let op = match fields.remove("op") {
        Some(Value::String(op)) => op,
        Some(other) => return Err(refuse(format!("op must be a string, got {other}"))),
        None => return Err(refuse("a request needs an op".to_string())),
    };
    let session = match fields.remove("session") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => return Err(refuse(format!("session must be a string, got {other}"))),
    };
    Ok(Request {
        id,
        op,
        session,
        fields,
    })
}

/// The reply that answers request `id` with `value`.
pub fn ok_reply(id: &Value, value: Value) -> Value {
    json!({"id": id, "ok": value})
}

/// The reply that refuses request `id`.
pub fn error_reply(id: &Value, refusal: &Refusal) -> Value {
    json!({"id": id, "error": refusal.to_wire()})
}

/// The reply to a frame over the limit `max` (its id unread).
pub fn too_large(max: usize) -> Value {
    error_reply(
        &Value::Null,
        &Refusal::new(
            ErrorKind::BadRequest,
            format!("frame larger than the server's limit of {max} bytes"),
        ),
    )
}

/// A reply as a client reads it: the request's id and its outcome.
pub fn read_reply(frame: &Map<String, Value>) -> Option<(Value, Result<Value, Refusal>)> {
    let id = frame.get("id")?.clone();
    if let Some(ok) = frame.get("ok") {
        return Some((id, Ok(ok.clone())));
    }
    let error = frame.get("error")?.as_object()?;
    Some((id, Err(Refusal::from_wire(error))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_its_id_op_and_session() {
        let r = read_request(r#"{"id":"a-1","op":"run","session":"s2","options":{}}"#).unwrap();
        assert_eq!(r.id, json!("a-1"));
        assert_eq!(r.op, "run");
        assert_eq!(r.session.as_deref(), Some("s2"));
        assert_eq!(r.field("options"), Some(&json!({})));
    }

    #[test]
    fn what_is_not_a_request_is_answered_with_its_id_when_it_has_one() {
        let refused = |frame: &str| read_request(frame).unwrap_err();
        assert_eq!(refused("nope")["id"], Value::Null);
        assert_eq!(refused("[1]")["error"]["kind"], "bad_request");
        assert_eq!(
            refused(r#"{"id":3}"#)["error"]["message"],
            "a request needs an op"
        );
        assert_eq!(refused(r#"{"id":3}"#)["id"], 3);
        assert_eq!(
            refused(r#"{"id":1.5,"op":"run"}"#)["error"]["message"],
            "id must be a string or a whole number, got 1.5"
        );
        assert_eq!(refused(r#"{"id":1.5,"op":"run"}"#)["id"], Value::Null);
        assert_eq!(
            refused(r#"{"id":4,"op":"run","session":7}"#)["error"]["message"],
            "session must be a string, got 7"
        );
    }

    #[test]
    fn replies_read_back() {
        let ok = ok_reply(&json!(1), json!({"x": 1}));
        let (id, outcome) = read_reply(ok.as_object().unwrap()).unwrap();
        assert_eq!((id, outcome), (json!(1), Ok(json!({"x": 1}))));
        let refusal = Refusal::new(ErrorKind::UnknownSession, "no session s9");
        let err = error_reply(&json!("k"), &refusal);
        let (_, outcome) = read_reply(err.as_object().unwrap()).unwrap();
        assert_eq!(outcome, Err(refusal));
        let core = Refusal::from(conch_core::Error::TooManyJobs(3));
        let err = error_reply(&json!(2), &core);
        assert_eq!(err["error"]["kind"], "too_many_jobs");
        assert_eq!(read_reply(err.as_object().unwrap()).unwrap().1, Err(core));
        let blocked = conch_core::tool::ToolError::Blocked {
            message: "Blocked: use grep".into(),
            suggested_tool: "grep".into(),
        };
        let err = error_reply(&json!(3), &Refusal::from(blocked.clone()));
        assert_eq!(err["error"]["kind"], "tool_error");
        let (_, outcome) = read_reply(err.as_object().unwrap()).unwrap();
        assert_eq!(outcome.unwrap_err().tool_error(), Some(blocked));
    }
}
