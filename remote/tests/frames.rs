//! Frames over the limit on a WebSocket (docs/remote.md, The protocol): a
//! message over 16 MiB, whole or in fragments, is refused with an error
//! reply (id `null`), its payload discarded as it arrives and never kept,
//! and the connection goes on; a frame declaring more than can be skipped
//! ends its own connection, after the refusal and a close frame (1009),
//! and no other. The server is conch-remote's own on 127.0.0.1, with a
//! token, in this process; the client writes raw frames on a TCP socket,
//! as no WebSocket library sends what these tests send.

use std::net::SocketAddr;
use std::time::Duration;

use conch_remote::Token;
use conch_remote::protocol::MAX_FRAME;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::frame::FrameHeader;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Control, Data, OpCode};

mod common;

const TOKEN: &str = "frames-test-token";

/// What a test may take, at most, before it fails as hung.
const HANG: Duration = Duration::from_secs(120);

const TEXT: OpCode = OpCode::Data(Data::Text);
const CONTINUE: OpCode = OpCode::Data(Data::Continue);

/// Runs a test's client, failing it if it hangs.
fn within<F: Future<Output = ()>>(test: F) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        tokio::time::timeout(HANG, test)
            .await
            .expect("the test hung");
    });
}

/// A WebSocket client that writes its frames byte by byte.
struct Raw(BufReader<TcpStream>);

impl Raw {
    /// Connects to the server at `addr` and upgrades the connection.
    async fn connect(addr: SocketAddr) -> Raw {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let mut raw = Raw(BufReader::new(tcp));
        let upgrade = format!(
            "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
             Authorization: Bearer {TOKEN}\r\n\r\n"
        );
        raw.0.write_all(upgrade.as_bytes()).await.unwrap();
        let mut status = String::new();
        raw.0.read_line(&mut status).await.unwrap();
        assert!(status.starts_with("HTTP/1.1 101"), "{status}");
        loop {
            let mut line = String::new();
            raw.0.read_line(&mut line).await.unwrap();
            if line == "\r\n" {
                return raw;
            }
        }
    }

    /// Writes a frame's header, masked with zeros (the payload then goes
    /// as it is), for `len` bytes of payload.
    async fn header(&mut self, opcode: OpCode, is_final: bool, len: u64) {
        let mut head = Vec::new();
        let header = FrameHeader {
            is_final,
            opcode,
            mask: Some([0; 4]),
            ..FrameHeader::default()
        };
        header.format(len, &mut head).unwrap();
        self.0.write_all(&head).await.unwrap();
    }

    /// Writes a whole frame.
    async fn frame(&mut self, opcode: OpCode, is_final: bool, payload: &[u8]) {
        self.header(opcode, is_final, payload.len() as u64).await;
        self.0.write_all(payload).await.unwrap();
    }

    /// Writes `len` bytes of payload, a MiB at a time.
    async fn zeros(&mut self, mut len: usize) {
        let chunk = vec![0u8; 1 << 20];
        while len > 0 {
            let n = len.min(chunk.len());
            self.0.write_all(&chunk[..n]).await.unwrap();
            len -= n;
        }
    }

    /// The next frame the server sends: its opcode and payload; `None`
    /// once the server closed the connection.
    async fn read(&mut self) -> Option<(OpCode, Vec<u8>)> {
        let mut head = [0u8; 2];
        match self.0.read_exact(&mut head).await {
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return None,
            Err(err) => panic!("reading a frame: {err}"),
        }
        let mut extended = [0u8; 8];
        let extra = match head[1] & 0x7f {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        self.0.read_exact(&mut extended[..extra]).await.unwrap();
        let mut all = head.to_vec();
        all.extend_from_slice(&extended[..extra]);
        let (header, len) = FrameHeader::parse(&mut std::io::Cursor::new(all))
            .unwrap()
            .expect("a whole header");
        assert!(header.mask.is_none(), "a server's frames are not masked");
        let mut payload = vec![0u8; len as usize];
        self.0.read_exact(&mut payload).await.unwrap();
        Some((header.opcode, payload))
    }

    /// The next text frame the server sends, read as JSON.
    async fn reply(&mut self) -> Value {
        match self.read().await {
            Some((TEXT, text)) => serde_json::from_slice(&text).unwrap(),
            other => panic!("a text frame, not {other:?}"),
        }
    }

    /// Sends `hello` as request `id` and waits for its answer.
    async fn hello(&mut self, id: u64) {
        let request = json!({"id": id, "op": "hello"}).to_string();
        self.frame(TEXT, true, request.as_bytes()).await;
        assert_hello(&self.reply().await, id);
    }
}

fn assert_hello(reply: &Value, id: u64) {
    assert_eq!(reply["id"], id, "{reply}");
    assert_eq!(reply["ok"]["protocol"], 1, "{reply}");
}

fn assert_too_large(reply: &Value) {
    let expected = json!({
        "id": null,
        "error": {
            "kind": "bad_request",
            "message": format!("frame larger than the server's limit of {MAX_FRAME} bytes"),
        },
    });
    assert_eq!(reply, &expected);
}

fn listen() -> SocketAddr {
    common::listen(Some(Token::new(TOKEN).unwrap()))
}

#[test]
fn a_frame_over_the_limit_is_refused_and_the_connection_goes_on() {
    let addr = listen();
    within(async {
        let mut client = Raw::connect(addr).await;
        client.frame(TEXT, true, &vec![b'x'; MAX_FRAME + 10]).await;
        assert_too_large(&client.reply().await);
        client.hello(2).await;
        // The limit itself is read: a request padded to exactly 16 MiB.
        let mut request = json!({"id": 3, "op": "hello"}).to_string().into_bytes();
        request.resize(MAX_FRAME, b' ');
        client.frame(TEXT, true, &request).await;
        assert_hello(&client.reply().await, 3);
    });
}

#[test]
fn a_fragmented_message_over_the_limit_is_refused_once_and_the_connection_goes_on() {
    let addr = listen();
    within(async {
        let mut client = Raw::connect(addr).await;
        let part = vec![b'x'; 10 << 20];
        client.frame(TEXT, false, &part).await;
        // A ping between fragments is answered as ever.
        client
            .frame(OpCode::Control(Control::Ping), true, b"p")
            .await;
        // This one takes the message past the limit: refused, and what is
        // left of the message discarded.
        client.frame(CONTINUE, false, &part).await;
        client.frame(CONTINUE, true, &part).await;
        // A fragmented request after it is read whole.
        client.frame(TEXT, false, br#"{"id": 2, "#).await;
        client.frame(CONTINUE, true, br#""op": "hello"}"#).await;
        let pong = client.read().await;
        assert_eq!(pong, Some((OpCode::Control(Control::Pong), b"p".to_vec())));
        assert_too_large(&client.reply().await);
        // The next frame answers the request: the message was refused once.
        assert_hello(&client.reply().await, 2);
    });
}

/// The resident memory of this process (the server's and the tests').
fn resident() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

#[test]
fn a_refused_payload_is_discarded_as_it_arrives_not_kept() {
    const PAYLOAD: usize = 512 << 20;
    let addr = listen();
    within(async {
        let mut client = Raw::connect(addr).await;
        client.header(TEXT, true, PAYLOAD as u64).await;
        // Refused at its header, before any of its payload is sent.
        assert_too_large(&client.reply().await);
        let before = resident();
        client.zeros(PAYLOAD).await;
        client.hello(2).await;
        let grown = resident().saturating_sub(before);
        // The other tests of this binary hold a few tens of MiB at most.
        assert!(
            grown < PAYLOAD / 2,
            "{} MiB more resident after {} MiB discarded",
            grown >> 20,
            PAYLOAD >> 20
        );
    });
}

#[test]
fn a_frame_declaring_more_than_can_be_skipped_ends_its_own_connection_only() {
    let addr = listen();
    within(async {
        let mut other = Raw::connect(addr).await;
        other.hello(1).await;
        let mut client = Raw::connect(addr).await;
        client.header(TEXT, true, 1 << 62).await;
        client.zeros(4096).await;
        assert_too_large(&client.reply().await);
        match client.read().await {
            Some((OpCode::Control(Control::Close), code)) => {
                assert_eq!(code, u16::from(CloseCode::Size).to_be_bytes());
            }
            other => panic!("a close frame, not {other:?}"),
        }
        // The other connection goes on meanwhile, and this one ends.
        other.hello(2).await;
        client.0.shutdown().await.unwrap();
        assert_eq!(client.read().await, None);
        other.hello(3).await;
    });
}
