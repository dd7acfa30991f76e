//! HTTP proxying: `CONNECT host:port` (a tunnel: HTTPS, git, npm) and
//! plain requests in absolute form (`GET http://host/path`), forwarded
//! one per connection (`Connection: close`), so every request a client
//! sends over its connection went to the host that was checked.

use std::io::{self, Read, Write};
use std::net::TcpStream;

use super::Shared;
use super::{Host, Refusal};

/// The longest request head the proxy reads.
const MAX_HEAD: usize = 64 * 1024;

/// The headers a proxy consumes rather than forwards.
const HOP_BY_HOP: [&str; 4] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
];

pub(super) fn serve(mut client: TcpStream, shared: &Shared, id: u64) -> io::Result<()> {
    let (head, rest) = read_head(&mut client)?;
    let Some(request) = Request::parse(&head) else {
        return answer(
            &mut client,
            "400 Bad Request",
            "conch's proxy: a request it cannot read",
        );
    };
    let upstream = match shared.open(id, &request.host, request.port) {
        Ok(upstream) => upstream,
        Err(refusal) => {
            // The run's result carries the line; the body says who answered.
            let (status, text) = match refusal {
                Refusal::Unreachable(why) => ("502 Bad Gateway", why),
                _ => (
                    "403 Forbidden",
                    "refused by the sandbox's domain policy".to_string(),
                ),
            };
            return answer(&mut client, status, &format!("conch's proxy: {text}"));
        }
    };
    let pending = match &request.forward {
        None => {
            client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
            rest
        }
        Some(path) => {
            let mut out = format!("{} {} {}\r\n", request.method, path, request.version);
            for (name, value) in &request.headers {
                if !HOP_BY_HOP.contains(&name.to_ascii_lowercase().as_str()) {
                    out.push_str(&format!("{name}: {value}\r\n"));
                }
            }
            out.push_str("Connection: close\r\n\r\n");
            let mut pending = out.into_bytes();
            pending.extend_from_slice(&rest);
            pending
        }
    };
    super::relay::relay(client, upstream, &pending)
}

/// Reads up to the blank line that ends a request head; returns the head
/// and the bytes read past it.
fn read_head(client: &mut TcpStream) -> io::Result<(String, Vec<u8>)> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let from = buffer.len().saturating_sub(3);
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = memchr::memmem::find(&buffer[from..], b"\r\n\r\n") {
            let end = from + at + 4;
            let rest = buffer.split_off(end);
            let head = String::from_utf8(buffer)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a head not in UTF-8"))?;
            return Ok((head, rest));
        }
        if buffer.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a head too long",
            ));
        }
    }
}

/// Answers with `status` and a one-line text, and closes.
fn answer(client: &mut TcpStream, status: &str, text: &str) -> io::Result<()> {
    let body = format!("{text}\n");
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(reply.as_bytes())
}

/// What a request head asks for.
#[derive(Debug, PartialEq)]
struct Request {
    method: String,
    version: String,
    host: Host,
    port: u16,
    /// `None`: a `CONNECT` tunnel; else the path to forward to.
    forward: Option<String>,
    headers: Vec<(String, String)>,
}

impl Request {
    fn parse(head: &str) -> Option<Request> {
        let mut lines = head.split("\r\n");
        let mut words = lines.next()?.split(' ');
        let (method, target, version) = (words.next()?, words.next()?, words.next()?);
        if words.next().is_some() || !version.starts_with("HTTP/1.") {
            return None;
        }
        let headers = lines
            .take_while(|l| !l.is_empty())
            .map(|l| {
                let (name, value) = l.split_once(':')?;
                Some((name.trim().to_string(), value.trim().to_string()))
            })
            .collect::<Option<Vec<_>>>()?;
        let (authority, forward, default_port) = if method.eq_ignore_ascii_case("CONNECT") {
            (target, None, None)
        } else {
            let rest = target.strip_prefix("http://")?;
            let (authority, path) = match rest.find(['/', '?']) {
                Some(at) => (&rest[..at], rest[at..].to_string()),
                None => (rest, "/".to_string()),
            };
            let path = if path.starts_with('?') {
                format!("/{path}")
            } else {
                path
            };
            (authority, Some(path), Some(80))
        };
        let (host, port) = split_authority(authority, default_port)?;
        Some(Request {
            method: method.to_string(),
            version: version.to_string(),
            host,
            port,
            forward,
            headers,
        })
    }
}

/// `host:port`, `[v6]:port`, or a host alone when there is a default port.
fn split_authority(authority: &str, default_port: Option<u16>) -> Option<(Host, u16)> {
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') || host.ends_with(']') => {
            (host, port.parse::<u16>().ok().filter(|&p| p > 0)?)
        }
        _ => (authority, default_port?),
    };
    Some((Host::parse(host)?, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_and_absolute_requests_name_their_destination() {
        let r = Request::parse("CONNECT Registry.Test:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(
            (r.host, r.port, r.forward),
            (Host::Name("registry.test".into()), 443, None)
        );
        let r = Request::parse("GET http://a.test/x?y HTTP/1.1\r\nHost: a.test\r\n\r\n").unwrap();
        assert_eq!((r.host, r.port), (Host::Name("a.test".into()), 80));
        assert_eq!(r.forward.as_deref(), Some("/x?y"));
        let r = Request::parse("GET http://[::1]:8080 HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!((r.host, r.port), (Host::Ip("::1".parse().unwrap()), 8080));
        assert_eq!(r.forward.as_deref(), Some("/"));
        let r = Request::parse("GET http://u:p@b.test:81?q HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((r.host.to_string(), r.port), ("b.test".into(), 81));
        assert_eq!(r.forward.as_deref(), Some("/?q"));
    }

    #[test]
    fn what_is_not_a_proxy_request_is_refused() {
        for head in [
            "GET /path HTTP/1.1\r\n\r\n",
            "GET https://a.test/ HTTP/1.1\r\n\r\n",
            "CONNECT a.test HTTP/1.1\r\n\r\n",
            "CONNECT a.test:0 HTTP/1.1\r\n\r\n",
            "CONNECT a.test:443 SPDY/3\r\n\r\n",
            "CONNECT a test:443 HTTP/1.1\r\n\r\n",
            "GET http://a.test/ HTTP/1.1\r\nno colon\r\n\r\n",
        ] {
            assert_eq!(Request::parse(head), None, "{head:?}");
        }
    }
}
