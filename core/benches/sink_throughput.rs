//! Throughput of the output pipeline: 1 GiB pushed in 64 KiB chunks through
//! `OutputSink` (sanitizer, counts, tail, and optionally the artifact file),
//! for plain ASCII lines, for mixed UTF-8 with ANSI colors and `\r\n`, and
//! for a progress bar redrawn with `\r`. The sink rows run with the default
//! terminal view of carriage returns and again with the seed's rule (every
//! `\r` a line break, `carriage_return: "newline"`), so one run shows what
//! the default costs.
//!
//! Run: `cargo bench -p conch-core --bench sink_throughput`
//! (set `CONCH_BENCH_MIB` to push another amount).

use std::hint::black_box;
use std::time::Instant;

use conch_core::artifact::ArtifactStore;
use conch_core::output::carriage::CarriageReturn;
use conch_core::output::{OutputSink, Sanitizer, SinkOptions};

const CHUNK: usize = 64 * 1024;

/// Lines as a build log prints them.
fn ascii_chunk() -> Vec<u8> {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < CHUNK {
        text.push_str(&format!(
            "[{i:06}] compiling module_{i}: the quick brown fox jumps over the lazy dog\n"
        ));
        i += 1;
    }
    text.truncate(CHUNK);
    text.into_bytes()
}

/// Colored test-runner output with accents, CJK, emoji and CRLF line ends.
fn mixed_chunk() -> Vec<u8> {
    let mut text = Vec::new();
    let mut i = 0;
    while text.len() < CHUNK {
        let line = format!(
            "\x1b[32m✓\x1b[0m test_{i} \x1b[1mréussi\x1b[0m en {i} ms — 测试通过 🚀 \x1b[2m(ok)\x1b[0m\r\n"
        );
        text.extend_from_slice(line.as_bytes());
        i += 1;
    }
    // Cut at a byte, not a line: chunk ends fall inside sequences and characters.
    text.truncate(CHUNK);
    text
}

/// A progress bar as pip or curl draws it: one line redrawn with `\r`,
/// a finished line now and then.
fn progress_chunk() -> Vec<u8> {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < CHUNK {
        let done = i % 101;
        text.push_str(&format!(
            "\rDownloading wheel {:>3}% |{:<50}| {done} MB",
            done,
            "#".repeat(done / 2)
        ));
        if done == 100 {
            text.push('\n');
        }
        i += 1;
    }
    text.truncate(CHUNK);
    text.into_bytes()
}

fn report(label: &str, bytes: u64, seconds: f64) {
    println!(
        "{label:<34} {:>7.2} GB/s  ({:.2} GiB in {seconds:.3} s)",
        bytes as f64 / seconds / 1e9,
        bytes as f64 / (1u64 << 30) as f64
    );
}

fn run_sanitizer(label: &str, chunk: &[u8], pushes: usize) {
    let mut sanitizer = Sanitizer::new();
    let mut out = String::with_capacity(CHUNK * 3);
    let start = Instant::now();
    for _ in 0..pushes {
        out.clear();
        sanitizer.push(black_box(chunk), &mut out);
        black_box(&out);
    }
    report(
        label,
        (chunk.len() * pushes) as u64,
        start.elapsed().as_secs_f64(),
    );
}

fn run_sink(
    label: &str,
    chunk: &[u8],
    pushes: usize,
    store: Option<&ArtifactStore>,
    carriage_return: CarriageReturn,
) {
    let artifact = store.map(|s| s.allocate("bash").expect("allocate artifact"));
    let mut sink = OutputSink::new(SinkOptions {
        artifact: artifact.clone().map(Into::into),
        carriage_return,
        ..SinkOptions::default()
    });
    let start = Instant::now();
    for _ in 0..pushes {
        black_box(sink.push(black_box(chunk)));
    }
    let summary = sink.dump(None);
    report(
        label,
        (chunk.len() * pushes) as u64,
        start.elapsed().as_secs_f64(),
    );
    assert!(summary.truncated);
    if let Some(artifact) = artifact {
        assert!(summary.artifact_id.is_some(), "artifact was not written");
        let _ = std::fs::remove_file(&artifact.path);
    }
}

fn main() {
    let mib: usize = std::env::var("CONCH_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let pushes = mib * 1024 * 1024 / CHUNK;
    let dir = std::env::temp_dir().join(format!("conch-bench-{}", std::process::id()));
    let store = ArtifactStore::new(&dir);
    let ascii = ascii_chunk();
    let mixed = mixed_chunk();

    println!("output pipeline, {mib} MiB in {} KiB chunks", CHUNK / 1024);
    run_sanitizer("sanitizer only, ASCII", &ascii, pushes);
    run_sanitizer("sanitizer only, mixed", &mixed, pushes);
    let progress = progress_chunk();
    let (terminal, newline) = (CarriageReturn::Terminal, CarriageReturn::Newline);
    run_sink("sink, ASCII", &ascii, pushes, None, terminal);
    run_sink("sink, mixed", &mixed, pushes, None, terminal);
    run_sink("sink, progress bar", &progress, pushes, None, terminal);
    run_sink("sink, ASCII, cr newline", &ascii, pushes, None, newline);
    run_sink("sink, mixed, cr newline", &mixed, pushes, None, newline);
    run_sink(
        "sink, progress bar, cr newline",
        &progress,
        pushes,
        None,
        newline,
    );
    run_sink(
        "sink + artifact file, ASCII",
        &ascii,
        pushes,
        Some(&store),
        terminal,
    );
    run_sink(
        "sink + artifact file, mixed",
        &mixed,
        pushes,
        Some(&store),
        terminal,
    );
    let _ = std::fs::remove_dir_all(&dir);
}
