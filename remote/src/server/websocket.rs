//! A WebSocket client once [`super::listen`] has upgraded its connection
//! (RFC 6455): its frames read and written here, with tungstenite's frame
//! headers. Text messages are the protocol's frames.
//!
//! The server reads the frames itself, rather than through tungstenite's
//! `WebSocketStream`, for the frame limit: tungstenite ends the connection
//! at the first message over it (the error fuses its stream and the
//! payload is left unread), where docs/remote.md promises an error reply
//! and a connection that goes on. Here a message is refused as soon as the
//! header that takes it past the limit arrives, and its payload is
//! discarded as it comes in, never held: a connection holds at most one
//! message of the limit, whatever its client sends.

use std::io::{self, Cursor};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter, WriteHalf};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Bytes;
use tokio_tungstenite::tungstenite::protocol::frame::FrameHeader;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Control, Data, OpCode};
use tokio_util::bytes::{Buf, BytesMut};
use tokio_util::codec::{Decoder, FramedRead};

use super::Server;
use super::conn::{Incoming, Outgoing, serve};
use crate::protocol::{ErrorKind, Refusal, error_reply, too_large};
use crate::tls::Io;

/// The longest frame payload the server discards to keep a connection.
/// Skipping costs only the time the client takes to send it, but a header
/// may declare up to 2^63 bytes: the connection would wait, answering
/// nothing, for a payload that may never come. A GiB (64 times the
/// default limit) covers a client's mistakes and takes seconds to send;
/// past it the connection ends after the refusal, with a close frame
/// (1009, message too big).
const SKIP_AT_MOST: u64 = 1 << 30;

/// How long a connection the server ends reads on, discarding, before it
/// is dropped: a socket closed with unread input is reset, and a reset can
/// cost the client the last frames sent (the refusal, the close frame).
const LINGER: Duration = Duration::from_secs(2);

/// Signals queued for the writer. Pongs past them are dropped: one
/// answering the latest ping is enough (RFC 6455 5.5.3), and a client's
/// flood of pings is not kept.
const SIGNALS: usize = 4;

/// Serves a WebSocket client on `io`, whose first bytes (read with the
/// request head) are `rest`: text messages are frames.
pub(crate) async fn serve_websocket(server: Arc<Server>, io: Box<dyn Io>, rest: &[u8]) {
    let max = server.options().max_frame;
    let (read, write) = tokio::io::split(io);
    let (out, frames) = Outgoing::new();
    let (signals, signalled) = mpsc::channel(SIGNALS);
    let writer = tokio::spawn(write_frames(write, frames, signalled));
    let mut reader = FramedRead::new(read, Messages::new(max));
    reader.read_buffer_mut().extend_from_slice(rest);
    let incoming = futures_util::stream::unfold(
        (&mut reader, signals),
        move |(reader, signals)| async move {
            loop {
                let incoming = match reader.next().await? {
                    Ok(Inbound::Text(text)) => Incoming::Frame(text),
                    Ok(Inbound::Binary) => Incoming::Refused(error_reply(
                        &Value::Null,
                        &Refusal::new(ErrorKind::BadRequest, "frames are text messages"),
                    )),
                    Ok(Inbound::TooLarge) => Incoming::Refused(too_large(max)),
                    Ok(Inbound::Ping(data)) => {
                        let _ = signals.try_send(Signal::Pong(data));
                        continue;
                    }
                    Ok(Inbound::Close(code)) => {
                        let _ = signals.send(Signal::Close(code)).await;
                        return None;
                    }
                    Err(Broken::Protocol(code)) => {
                        let _ = signals.send(Signal::Finish(code)).await;
                        return None;
                    }
                    Err(Broken::Read) => return None,
                };
                return Some((incoming, (reader, signals)));
            }
        },
    );
    serve(server, Box::pin(incoming), out).await;
    let _ = writer.await;
    let mut read = reader.into_inner();
    let _ = tokio::time::timeout(LINGER, tokio::io::copy(&mut read, &mut tokio::io::sink())).await;
}

/// What the reader has the writer send outside the connection's queue.
enum Signal {
    /// A pong answering a ping of this payload.
    Pong(Bytes),
    /// The client closed: a close frame (echoing its code) at once, and
    /// nothing after it.
    Close(Option<CloseCode>),
    /// The server ends the connection: a close frame of this code once
    /// the queue is sent (a refusal before it goes out first).
    Finish(CloseCode),
}

/// Writes the queue's frames to the client, the reader's signals first,
/// and a close frame last.
async fn write_frames(
    io: WriteHalf<Box<dyn Io>>,
    mut frames: mpsc::Receiver<Arc<str>>,
    mut signals: mpsc::Receiver<Signal>,
) {
    let mut io = BufWriter::new(io);
    let mut finish = None;
    let close = loop {
        let sent = tokio::select! {
            biased;
            Some(signal) = signals.recv() => match signal {
                Signal::Pong(data) => write_frame(&mut io, OpCode::Control(Control::Pong), &data).await,
                Signal::Close(code) => break code,
                Signal::Finish(code) => {
                    finish = Some(code);
                    continue;
                }
            },
            frame = frames.recv() => match frame {
                Some(frame) => write_frame(&mut io, OpCode::Data(Data::Text), frame.as_bytes()).await,
                None => break finish,
            },
        };
        // Written in batches: flushed when nothing else is queued.
        if sent.is_err() || (frames.is_empty() && io.flush().await.is_err()) {
            return;
        }
    };
    let code = close.map(|code| u16::from(code).to_be_bytes());
    let close = OpCode::Control(Control::Close);
    if write_frame(&mut io, close, code.as_ref().map_or(&[][..], |c| &c[..]))
        .await
        .is_ok()
    {
        let _ = io.shutdown().await;
    }
}

/// Writes one whole, unmasked frame (a server's).
async fn write_frame(
    io: &mut (impl AsyncWrite + Unpin),
    opcode: OpCode,
    payload: &[u8],
) -> io::Result<()> {
    let mut head = Vec::new();
    let header = FrameHeader {
        opcode,
        ..FrameHeader::default()
    };
    header
        .format(payload.len() as u64, &mut head)
        .map_err(io::Error::other)?;
    io.write_all(&head).await?;
    io.write_all(payload).await
}

/// What the client sent, as the connection reads it.
enum Inbound {
    /// A whole text message.
    Text(String),
    /// A whole binary message (refused: frames are text).
    Binary,
    /// A message over the limit, refused when its first frame over it
    /// arrived (once per message): its payload is discarded as it comes.
    TooLarge,
    /// A ping of this payload.
    Ping(Bytes),
    /// The client's close frame, with the code to echo.
    Close(Option<CloseCode>),
}

/// Why the server stops reading a connection.
enum Broken {
    /// The connection failed, or ended inside a frame.
    Read,
    /// The client broke the protocol, or declared a frame past
    /// [`SKIP_AT_MOST`]: the close code the server sends.
    Protocol(CloseCode),
}

impl From<io::Error> for Broken {
    fn from(_: io::Error) -> Broken {
        Broken::Read
    }
}

/// A client's frames as whole messages of at most `max` bytes: the
/// decoder a connection's [`FramedRead`] runs.
struct Messages {
    max: usize,
    /// The frame whose payload is awaited: its header and length.
    frame: Option<(FrameHeader, usize)>,
    /// Bytes of a refused frame's payload still to discard.
    skip: u64,
    /// The message whose final frame is awaited.
    pending: Pending,
    /// A refused frame declared more than [`SKIP_AT_MOST`]: the
    /// connection ends once the refusal is read.
    unskippable: bool,
}

/// Where a connection is between its messages' frames.
enum Pending {
    /// Between messages.
    None,
    /// A message's payload so far (text or binary).
    Reading { text: bool, data: BytesMut },
    /// A message refused: its frames are discarded up to its final one.
    Refused,
}

const PROTOCOL: Broken = Broken::Protocol(CloseCode::Protocol);

impl Messages {
    fn new(max: usize) -> Messages {
        Messages {
            max,
            frame: None,
            skip: 0,
            pending: Pending::None,
            unskippable: false,
        }
    }

    /// Takes a frame's header: its payload is then awaited or skipped.
    /// A message that this frame takes past the limit is refused here.
    fn header(&mut self, header: FrameHeader, len: u64) -> Result<Option<Inbound>, Broken> {
        // A client's frames are masked and use no extension (RFC 6455 5.1, 5.2).
        if header.mask.is_none() || header.rsv1 || header.rsv2 || header.rsv3 {
            return Err(PROTOCOL);
        }
        let data = match header.opcode {
            // A control frame is whole and short (RFC 6455 5.5).
            OpCode::Control(_) if !header.is_final || len > 125 => return Err(PROTOCOL),
            OpCode::Control(_) => {
                self.frame = Some((header, len as usize));
                return Ok(None);
            }
            OpCode::Data(data) => data,
        };
        // What the message holds before this frame: `None` once refused.
        let held = match (data, &self.pending) {
            (Data::Continue, Pending::Reading { data, .. }) => Some(data.len()),
            (Data::Continue, Pending::Refused) => None,
            (Data::Text | Data::Binary, Pending::None) => Some(0),
            _ => return Err(PROTOCOL),
        };
        if held.is_some_and(|held| len <= (self.max - held) as u64) {
            if data != Data::Continue {
                self.pending = Pending::Reading {
                    text: data == Data::Text,
                    data: BytesMut::new(),
                };
            }
            self.frame = Some((header, len as usize));
            return Ok(None);
        }
        self.pending = if header.is_final {
            Pending::None
        } else {
            Pending::Refused
        };
        if len > SKIP_AT_MOST {
            self.unskippable = true;
        } else {
            self.skip = len;
        }
        Ok(held.map(|_| Inbound::TooLarge))
    }

    /// Takes a whole frame's payload, unmasked: a message, once its final
    /// frame is in.
    fn payload(
        &mut self,
        header: FrameHeader,
        mut payload: BytesMut,
    ) -> Result<Option<Inbound>, Broken> {
        if let Some(mask) = header.mask {
            for (i, byte) in payload.iter_mut().enumerate() {
                *byte ^= mask[i % 4];
            }
        }
        match header.opcode {
            OpCode::Control(Control::Ping) => Ok(Some(Inbound::Ping(payload.freeze()))),
            OpCode::Control(Control::Close) => {
                let code = match *payload {
                    [] => None,
                    [a, b, ..] => Some(match CloseCode::from(u16::from_be_bytes([a, b])) {
                        code if code.is_allowed() => code,
                        _ => CloseCode::Protocol,
                    }),
                    [_] => return Err(PROTOCOL),
                };
                Ok(Some(Inbound::Close(code)))
            }
            OpCode::Control(_) => Ok(None),
            OpCode::Data(_) => {
                let Pending::Reading { text, mut data } =
                    std::mem::replace(&mut self.pending, Pending::None)
                else {
                    unreachable!("a data frame's payload is read only for a message being read")
                };
                data.unsplit(payload);
                if !header.is_final {
                    self.pending = Pending::Reading { text, data };
                    return Ok(None);
                }
                if !text {
                    return Ok(Some(Inbound::Binary));
                }
                // A text message is UTF-8 or the connection fails (RFC 6455 8.1).
                match String::from_utf8(data.into()) {
                    Ok(text) => Ok(Some(Inbound::Text(text))),
                    Err(_) => Err(Broken::Protocol(CloseCode::Invalid)),
                }
            }
        }
    }
}

impl Decoder for Messages {
    type Item = Inbound;
    type Error = Broken;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Inbound>, Broken> {
        loop {
            if self.unskippable {
                return Err(Broken::Protocol(CloseCode::Size));
            }
            if self.skip > 0 {
                let n = src
                    .len()
                    .min(usize::try_from(self.skip).unwrap_or(usize::MAX));
                src.advance(n);
                self.skip -= n as u64;
                if self.skip > 0 {
                    return Ok(None);
                }
            }
            let Some((_, len)) = &self.frame else {
                let mut cursor = Cursor::new(&src[..]);
                let Some((header, len)) = FrameHeader::parse(&mut cursor).map_err(|_| PROTOCOL)?
                else {
                    return Ok(None);
                };
                src.advance(cursor.position() as usize);
                match self.header(header, len)? {
                    Some(refused) => return Ok(Some(refused)),
                    None => continue,
                }
            };
            if src.len() < *len {
                src.reserve(len - src.len());
                return Ok(None);
            }
            let (header, len) = self.frame.take().expect("a frame is awaited");
            if let Some(message) = self.payload(header, src.split_to(len))? {
                return Ok(Some(message));
            }
        }
    }
}
