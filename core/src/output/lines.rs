//! Lines of a spilled stream, read back from its artifact.
//!
//! A head limit keeps the first lines of the complete stream, but the sink
//! keeps only the first `max_bytes` of them: the tail of a longer head
//! (`cmd | head -n 100000 | tail -n 10` of a big stream) is in the artifact
//! alone, which holds the whole stream. A run's result
//! ([`super::OutputSink::dump_lines`]) and the bash tool's text both read
//! those lines here.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::count_lines;
use super::ring::Ring;

/// Lines read back from an artifact.
#[derive(Debug)]
pub(crate) struct ReadLines {
    /// The last bytes of the range that fit in the byte bound.
    pub(crate) text: String,
    /// How many lines `text` holds.
    pub(crate) lines: u64,
    /// `text` is the whole range.
    pub(crate) complete: bool,
}

/// Lines `first..end` (0-based) of the file at `path`, at most the last
/// `max_bytes` of them, cut as the sink cuts its tail: from a line start
/// when what fits holds a line break with text after it, else (the end of
/// one longer line) from a character boundary, so the bound holds however
/// long a line is. Reads the file once, up to line `end`, holding at most
/// `max_bytes + 1` bytes besides the reader's buffer. `None` when the file
/// cannot be read.
pub(crate) fn read_lines(path: &Path, first: u64, end: u64, max_bytes: usize) -> Option<ReadLines> {
    let mut reader = BufReader::new(File::open(path).ok()?);
    let mut kept = Ring::new(max_bytes.saturating_add(1));
    // Lines ended before the reader's position.
    let mut line = 0u64;
    while line < end {
        let buf = reader.fill_buf().ok()?;
        if buf.is_empty() {
            break;
        }
        let mut from = (line >= first).then_some(0);
        let mut to = buf.len();
        for newline in memchr::memchr_iter(b'\n', buf) {
            line += 1;
            if line == first {
                from = Some(newline + 1);
            }
            if line == end {
                to = newline + 1;
                break;
            }
        }
        if let Some(from) = from {
            kept.push(&buf[from..to]);
        }
        reader.consume(to);
    }
    let (text, _) = kept.tail_text();
    Some(ReadLines {
        lines: count_lines(&text),
        complete: kept.seen() <= max_bytes as u64,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of its own holding `text`, removed when dropped.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(name: &str, text: &str) -> Self {
            let path = std::env::temp_dir()
                .join(format!("conch-read-lines-{name}-{}", std::process::id()));
            std::fs::write(&path, text).unwrap();
            Scratch(path)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn read(file: &Scratch, first: u64, end: u64, max: usize) -> (String, u64, bool) {
        let r = read_lines(&file.0, first, end, max).unwrap();
        (r.text, r.lines, r.complete)
    }

    #[test]
    fn reads_a_line_range_within_a_byte_bound() {
        let file = Scratch::new(
            "range",
            &(1..=100).map(|i| format!("{i}\n")).collect::<String>(),
        );
        let lines = |range: std::ops::RangeInclusive<u32>| -> String {
            range.map(|i| format!("{i}\n")).collect()
        };
        assert_eq!(read(&file, 10, 20, 1000), (lines(11..=20), 10, true));
        assert_eq!(read(&file, 0, 3, 1000), (lines(1..=3), 3, true));
        // The last whole lines that fit.
        assert_eq!(read(&file, 10, 20, 7), (lines(19..=20), 2, false));
        assert_eq!(read(&file, 10, 20, 6), (lines(19..=20), 2, false));
        // Past the end of the file: the lines there are.
        assert_eq!(read(&file, 95, 200, 1000), (lines(96..=100), 5, true));
        assert_eq!(read(&file, 20, 20, 1000), (String::new(), 0, true));
        let gone = file.0.clone();
        drop(file);
        assert!(read_lines(&gone, 0, 1, 10).is_none());
    }

    /// Whatever the reader's buffer holds at a time (8 KiB), the same lines.
    #[test]
    fn reads_across_the_readers_buffer() {
        let text: String = (1..=20_000).map(|i| format!("{i}\n")).collect();
        let file = Scratch::new("buffer", &text);
        let (got, lines, complete) = read(&file, 14_998, 15_000, 1000);
        assert_eq!((got.as_str(), lines, complete), ("14999\n15000\n", 2, true));
        let (got, lines, complete) = read(&file, 0, 20_000, usize::MAX);
        assert_eq!((got, lines, complete), (text, 20_000, true));
    }

    /// A line longer than the bound is cut at its start, as the sink's
    /// tail is: memory and the text stay within the bound.
    #[test]
    fn a_line_longer_than_the_bound_keeps_its_end() {
        let long = format!("{}é{}\n", "a".repeat(100_000), "b".repeat(9));
        let file = Scratch::new("long", &format!("first\n{long}last\n"));
        let (got, lines, complete) = read(&file, 1, 2, 12);
        assert_eq!((got.as_str(), lines, complete), ("ébbbbbbbbb\n", 1, false));
        // The last 11 bytes start inside the `é`: the text starts after it.
        assert_eq!(read(&file, 1, 2, 11).0, "bbbbbbbbb\n");
        let (got, lines, _) = read(&file, 1, 3, 12);
        assert_eq!((got.as_str(), lines), ("last\n", 1));
    }
}
