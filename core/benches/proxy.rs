//! The domain policy's proxy against a direct connection on loopback, in
//! one run: bytes per second through a `CONNECT` tunnel (a download from a
//! server that streams zeros), and the time one connection takes, from
//! `connect` to the first byte of the answer (the proxy adds its hop, the
//! request head and the policy check; a TLS handshake on top is the same
//! both ways). Goals: >= 0.8x the direct throughput, <= 1 ms added per
//! connection.
//!
//! Run: `cargo bench -p conch-core --bench proxy`
//! (`CONCH_BENCH_MIB`: MiB per download, default 1024; `CONCH_BENCH_CONNECTIONS`:
//! connections per latency round, default 500).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use conch_core::DomainPolicy;
use conch_core::process::sandbox::Proxy;

const ROUNDS: usize = 5;

/// A server that answers each connection's first line with `size` bytes
/// (`size` is the line, in bytes), then closes.
fn server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    return;
                }
                let mut left: u64 = line.trim().parse().unwrap_or(0);
                let block = vec![0u8; 256 * 1024];
                let mut stream = stream;
                while left > 0 {
                    let n = left.min(block.len() as u64) as usize;
                    if stream.write_all(&block[..n]).is_err() {
                        return;
                    }
                    left -= n as u64;
                }
            });
        }
    });
    port
}

/// A connection to `port`, direct or through the proxy's tunnel.
fn open(port: u16, proxy: Option<u16>) -> TcpStream {
    let Some(proxy) = proxy else {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_nodelay(true).unwrap();
        return stream;
    };
    let mut stream = TcpStream::connect(("127.0.0.1", proxy)).unwrap();
    stream.set_nodelay(true).unwrap();
    write!(stream, "CONNECT bench.test:{port} HTTP/1.1\r\n\r\n").unwrap();
    let expected = b"HTTP/1.1 200 Connection established\r\n\r\n";
    let mut answer = vec![0u8; expected.len()];
    stream.read_exact(&mut answer).unwrap();
    assert_eq!(answer, expected);
    stream
}

/// MB/s of one download of `bytes`.
fn download(port: u16, proxy: Option<u16>, bytes: u64) -> f64 {
    let start = Instant::now();
    let mut stream = open(port, proxy);
    writeln!(stream, "{bytes}").unwrap();
    let mut buffer = vec![0u8; 256 * 1024];
    let mut got = 0u64;
    loop {
        match stream.read(&mut buffer).unwrap() {
            0 => break,
            n => got += n as u64,
        }
    }
    assert_eq!(got, bytes);
    bytes as f64 / start.elapsed().as_secs_f64() / 1e6
}

/// Median µs from `connect` to the first byte of a one-byte answer.
fn latency(port: u16, proxy: Option<u16>, count: usize) -> f64 {
    let mut times: Vec<Duration> = (0..count)
        .map(|_| {
            let start = Instant::now();
            let mut stream = open(port, proxy);
            stream.write_all(b"1\n").unwrap();
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).unwrap();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[count / 2].as_secs_f64() * 1e6
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let bytes = env_number("CONCH_BENCH_MIB", 1024) << 20;
    let connections = env_number("CONCH_BENCH_CONNECTIONS", 500) as usize;
    let port = server();
    let resolve = BTreeMap::from([("bench.test".to_string(), "127.0.0.1".to_string())]);
    let policy = DomainPolicy::parse("network", &["bench.test".into()], &[], &resolve).unwrap();
    let proxy = Proxy::start(policy, false).unwrap();
    let via = Some(proxy.port());

    // Interleaved, so a noisy moment hits both.
    let (mut direct, mut proxied, mut direct_us, mut proxied_us) = (vec![], vec![], vec![], vec![]);
    for _ in 0..ROUNDS {
        direct.push(download(port, None, bytes));
        proxied.push(download(port, via, bytes));
        direct_us.push(latency(port, None, connections));
        proxied_us.push(latency(port, via, connections));
    }
    let (direct, proxied) = (median(direct), median(proxied));
    let (direct_us, proxied_us) = (median(direct_us), median(proxied_us));
    println!("| what | direct | through the proxy | ratio / added |");
    println!("|---|---|---|---|");
    println!(
        "| download of {} MiB (MB/s, median of {ROUNDS}) | {direct:.0} | {proxied:.0} | {:.2}x (goal >= 0.8x) |",
        bytes >> 20,
        proxied / direct
    );
    println!(
        "| connect to first byte (µs, median of {ROUNDS} medians of {connections}) | {direct_us:.0} | {proxied_us:.0} | +{:.0} µs (goal <= 1000) |",
        proxied_us - direct_us
    );
}
