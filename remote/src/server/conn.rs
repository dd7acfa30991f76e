//! One client connection, whatever carries it: frames come in as text,
//! each request is handed to a blocking thread (a command that runs for an
//! hour never holds up the next request, in this session or another), and
//! frames go out through one bounded queue the transport drains.

use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;

use super::Server;
use crate::protocol::read_request;

/// Frames queued for one connection before a sender waits: with chunks
/// of at most a pipe's read, a few MiB.
const QUEUE: usize = 64;

/// The sending end of a connection's queue, shared by the sessions
/// attached to it.
#[derive(Clone)]
pub(crate) struct Outgoing(mpsc::Sender<Arc<str>>);

impl Outgoing {
    /// A queue and the receiver the transport drains.
    pub fn new() -> (Outgoing, mpsc::Receiver<Arc<str>>) {
        let (tx, rx) = mpsc::channel(QUEUE);
        (Outgoing(tx), rx)
    }

    /// Queues `frame`, waiting for room; false once the connection is
    /// gone. From a blocking thread only.
    pub fn send(&self, frame: Arc<str>) -> bool {
        self.0.blocking_send(frame).is_ok()
    }

    /// Queues a frame that belongs to no session.
    pub fn send_value(&self, frame: &Value) -> bool {
        self.send(frame.to_string().into())
    }

    pub fn same(&self, other: &Outgoing) -> bool {
        self.0.same_channel(&other.0)
    }
}

/// What a transport read from its client.
pub(crate) enum Incoming {
    /// A text frame.
    Frame(String),
    /// A frame refused before it was read (too large, not text): the
    /// error reply to send.
    Refused(Value),
}

/// Serves one connection until its client stops sending, then lets go of
/// the sessions attached to it (the server's grace period starts).
pub(crate) async fn serve(
    server: Arc<Server>,
    mut incoming: impl Stream<Item = Incoming> + Unpin,
    out: Outgoing,
) {
    while let Some(frame) = incoming.next().await {
        let server = server.clone();
        let out = out.clone();
        match frame {
            Incoming::Frame(text) => match read_request(&text) {
                Ok(request) => server.take(request, out),
                Err(reply) => {
                    tokio::task::spawn_blocking(move || out.send_value(&reply));
                }
            },
            Incoming::Refused(reply) => {
                tokio::task::spawn_blocking(move || out.send_value(&reply));
            }
        }
    }
    let server = server.clone();
    let _ = tokio::task::spawn_blocking(move || server.connection_ended(&out)).await;
}
