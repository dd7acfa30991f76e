//! `conch serve --listen HOST:PORT`: the protocol over a WebSocket (the
//! upgrade at `/`, `Authorization: Bearer TOKEN`; TLS first when the server
//! has a certificate), and the probes a pod's
//! kubelet asks, `GET /readyz` and `GET /livez`, on the same port without
//! a token. The request head is read here (a few KiB at most) so a probe
//! or a refused client never reaches the WebSocket code.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

use super::Server;
use super::websocket::serve_websocket;
use crate::auth::Token;
use crate::tls::Io;
use tokio_rustls::TlsAcceptor;

/// The largest request head read.
const MAX_HEAD: usize = 16 << 10;

/// How long a client may take to send its request head.
const HEAD_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Refuses to listen on `addr` without a token unless it is a loopback
/// address: anyone who reaches the port could run commands.
pub fn check_exposure(addr: &SocketAddr, token: Option<&Token>) -> Result<(), String> {
    if token.is_none() && !addr.ip().is_loopback() {
        return Err(format!(
            "refusing to listen on {addr} without a token: anyone who reaches it could run \
             commands. Give --token-file FILE or CONCH_TOKEN, or listen on 127.0.0.1"
        ));
    }
    Ok(())
}

/// Serves every client that connects to `listener` until the task is
/// dropped.
pub async fn serve_listener(
    server: Arc<Server>,
    listener: TcpListener,
    token: Option<Token>,
    tls: Option<TlsAcceptor>,
) -> io::Result<()> {
    let token = Arc::new(token);
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(
            server.clone(),
            stream,
            token.clone(),
            tls.clone(),
        ));
    }
}

/// One TCP connection (TLS first, when the server has it): a probe, a
/// refusal, or a WebSocket client.
async fn connection(
    server: Arc<Server>,
    tcp: TcpStream,
    token: Arc<Option<Token>>,
    tls: Option<TlsAcceptor>,
) {
    let opened = tokio::time::timeout(HEAD_WITHIN, async {
        let mut stream: Box<dyn Io> = match tls {
            Some(tls) => Box::new(tls.accept(tcp).await?),
            None => Box::new(tcp),
        };
        let head = read_head(&mut stream).await?;
        Ok::<_, io::Error>((stream, head))
    })
    .await;
    let Ok(Ok((mut stream, head))) = opened else {
        return;
    };
    let Some((head, rest)) = head else {
        let _ = respond(&mut stream, "400 Bad Request", "").await;
        return;
    };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    if !matches!(request.parse(&head), Ok(httparse::Status::Complete(_))) {
        let _ = respond(&mut stream, "400 Bad Request", "").await;
        return;
    }
    let header = |name: &str| {
        request
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .and_then(|h| std::str::from_utf8(h.value).ok())
    };
    let path = request.path.unwrap_or("");
    if request.method != Some("GET") {
        let _ = respond(&mut stream, "405 Method Not Allowed", "").await;
        return;
    }
    match path {
        "/readyz" => {
            let _ = respond(&mut stream, "200 OK", "ready\n").await;
            return;
        }
        "/livez" => {
            let _ = respond(&mut stream, "200 OK", "live\n").await;
            return;
        }
        "/" => {}
        _ => {
            let _ = respond(&mut stream, "404 Not Found", "").await;
            return;
        }
    }
    if let Some(token) = token.as_ref() {
        let given = header("authorization").and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|given| token.matches(given.trim())) {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\n\
                      Content-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            return;
        }
    }
    let upgrade = header("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let (Some(key), true) = (header("sec-websocket-key"), upgrade) else {
        let _ = respond(&mut stream, "426 Upgrade Required", "a WebSocket upgrade\n").await;
        return;
    };
    let accept = derive_accept_key(key.trim().as_bytes());
    let reply = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    if stream.write_all(reply.as_bytes()).await.is_err() {
        return;
    }
    serve_websocket(server, stream, &rest).await;
}

/// Reads the request head (up to the blank line) and what came after it.
async fn read_head(stream: &mut Box<dyn Io>) -> io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok(Some((buf, rest)));
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
    }
}

async fn respond(stream: &mut Box<dyn Io>, status: &str, body: &str) -> io::Result<()> {
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(text.as_bytes()).await
}
