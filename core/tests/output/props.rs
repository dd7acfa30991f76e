//! Properties of the output pipeline over arbitrary input and any chunking:
//! no panics, the same result however the bytes are split, bounded memory,
//! and an artifact that is exactly the whole sanitized stream.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use conch_core::artifact::ArtifactStore;
use conch_core::output::carriage::CarriageReturn;
use conch_core::output::{
    Masker, OutputSink, OutputSummary, Sanitizer, SinkOptions, sanitize_text,
};
use proptest::prelude::*;

/// Input made of the pieces that make sanitizing hard: escape sequences
/// (whole, cut or unterminated), multibyte and invalid UTF-8, controls,
/// carriage returns, plus arbitrary bytes.
fn tricky_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        "[a-z ]{1,12}".prop_map(String::into_bytes),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\t".to_vec()),
        Just(b"\x1b[1;31m".to_vec()),
        Just(b"\x1b[".to_vec()),
        Just(b"\x1b".to_vec()),
        Just(b"\x1b]0;title\x07".to_vec()),
        Just(b"\x1b]8;;http://x\x1b\\".to_vec()),
        Just(b"\x1b]".to_vec()),
        Just(b"\x1bP1$r\x1b\\".to_vec()),
        Just(b"\x1b(B".to_vec()),
        Just(b"\x1b\\".to_vec()),
        Just("\u{9b}2K".as_bytes().to_vec()),
        Just("\u{9c}\u{85}".as_bytes().to_vec()),
        Just("é€😀°".as_bytes().to_vec()),
        Just(vec![0xff]),
        Just(vec![0xe2, 0x82]),
        Just(vec![0xf0, 0x9f, 0x98]),
        Just(vec![0xed, 0xa0, 0x80]),
        Just(vec![0x00, 0x07, 0x7f, 0x18, 0x1a]),
        prop::collection::vec(any::<u8>(), 1..8),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

/// `bytes` cut at the given fractions of its length.
fn split_at_fractions(bytes: &[u8], cuts: &[f64]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|f| (f * bytes.len() as f64) as usize)
        .collect();
    points.push(0);
    points.push(bytes.len());
    points.sort();
    points
        .windows(2)
        .map(|w| bytes[w[0]..w[1]].to_vec())
        .collect()
}

fn sanitize_chunks(chunks: &[Vec<u8>]) -> String {
    let mut out = String::new();
    let mut sanitizer = Sanitizer::new();
    for chunk in chunks {
        sanitizer.push(chunk, &mut out);
    }
    sanitizer.finish(&mut out);
    out
}

fn is_clean(text: &str) -> bool {
    text.chars()
        .all(|c| c == '\n' || c == '\t' || !(c.is_control() || ('\u{80}'..='\u{9f}').contains(&c)))
}

fn temp_dir() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("conch-output-props-{}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// Runs a sink over `chunks`, checking the memory bound after every push.
fn run_sink(opts: SinkOptions, chunks: &[Vec<u8>]) -> (OutputSummary, String) {
    let bound = opts.max_bytes + 1;
    let mut sink = OutputSink::new(opts);
    let mut live = String::new();
    for chunk in chunks {
        live.push_str(&sink.push(chunk).to_string());
        assert!(
            sink.retained_bytes() <= bound,
            "retained {} > {bound}",
            sink.retained_bytes()
        );
    }
    live.push_str(sink.finish());
    (sink.dump(None), live)
}

/// What tail mode must show for the whole stream `whole` (an independent
/// statement of the rule in the sink's docs).
fn expected_tail(whole: &str, max: usize) -> String {
    if whole.len() <= max {
        return whole.to_string();
    }
    let start = whole.len() - max;
    if whole.as_bytes()[start - 1] == b'\n' {
        return whole[start..].to_string();
    }
    let mut boundary = start;
    while !whole.is_char_boundary(boundary) {
        boundary += 1;
    }
    let window = &whole[boundary..];
    match window.find('\n') {
        Some(i) if i + 1 < window.len() => window[i + 1..].to_string(),
        _ => window.to_string(),
    }
}

/// Secrets that start alike, overlap and contain one another.
const SECRETS: &[(&str, &str)] = &[
    ("A_TOKEN", "abcdefgh"),
    ("B_TOKEN", "abcdefgh-ijk"),
    ("C_TOKEN", "fgh-ijklmnop"),
    ("D_TOKEN", "éclair-€-secret"),
];

/// Input made of secrets, their starts and ends, and what sanitizing
/// removes from between them.
fn secretive_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        (0..SECRETS.len()).prop_map(|i| SECRETS[i].1.as_bytes().to_vec()),
        (0..SECRETS.len(), 1usize..12).prop_map(|(i, n)| {
            let v = SECRETS[i].1.as_bytes();
            v[..n.min(v.len())].to_vec()
        }),
        (0..SECRETS.len(), 1usize..12).prop_map(|(i, n)| {
            let v = SECRETS[i].1.as_bytes();
            v[v.len() - n.min(v.len())..].to_vec()
        }),
        "[a-k -]{1,6}".prop_map(String::into_bytes),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\x1b[1m".to_vec()),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

/// The masking rule stated on its own: at each position, the longest
/// secret that starts there is replaced, else the character is kept.
fn masked_reference(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let found = SECRETS
            .iter()
            .filter(|(_, v)| rest.starts_with(v))
            .max_by_key(|(_, v)| v.len());
        match found {
            Some((name, value)) => {
                out.push_str(&format!("[masked: {name}]"));
                rest = &rest[value.len()..];
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

fn count_lines(text: &str) -> u64 {
    text.matches('\n').count() as u64 + u64::from(!text.is_empty() && !text.ends_with('\n'))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn sanitizer_is_chunking_independent_and_clean(
        bytes in tricky_bytes(),
        cuts in prop::collection::vec(0.0f64..1.0, 0..6),
    ) {
        let whole = sanitize_chunks(std::slice::from_ref(&bytes));
        let pieces = split_at_fractions(&bytes, &cuts);
        prop_assert_eq!(&sanitize_chunks(&pieces), &whole);
        let single: Vec<Vec<u8>> = bytes.iter().map(|&b| vec![b]).collect();
        prop_assert_eq!(&sanitize_chunks(&single), &whole);
        prop_assert!(is_clean(&whole), "{:?}", whole);
        prop_assert!(!whole.contains('\r'));
        // Clean text goes through unchanged.
        prop_assert_eq!(&sanitize_text(&whole), &whole);
    }

    #[test]
    fn bytes_decode_like_from_utf8_lossy(
        bytes in prop_oneof![tricky_bytes(), prop::collection::vec(any::<u8>(), 0..300)],
        cuts in prop::collection::vec(0.0f64..1.0, 0..6),
    ) {
        // Decoding is the lossy conversion; sanitizing comes on top of it.
        let lossy = String::from_utf8_lossy(&bytes);
        let pieces = split_at_fractions(&bytes, &cuts);
        prop_assert_eq!(sanitize_chunks(&pieces), sanitize_text(&lossy));
    }

    #[test]
    fn valid_text_matches_the_one_shot_form(text in "\\PC{0,40}", noise in "[\\x00-\\x1f\\x7f\\u{80}-\\u{9f}]{0,4}") {
        let input = format!("{text}{noise}{text}");
        prop_assert_eq!(sanitize_text(&input), sanitize_chunks(&[input.into_bytes()]));
    }

    #[test]
    fn sink_is_chunking_independent_and_bounded(
        bytes in tricky_bytes(),
        cuts in prop::collection::vec(0.0f64..1.0, 0..6),
        max_bytes in 0usize..64,
        head_bytes in 0usize..24,
        head_lines in prop::option::of(0usize..6),
    ) {
        let whole = sanitize_chunks(std::slice::from_ref(&bytes));
        let opts = SinkOptions { max_bytes, head_bytes, head_lines, artifact: None, artifact_cap: None, mask: None, carriage_return: CarriageReturn::Newline };
        let (one, live_one) = run_sink(opts.clone(), std::slice::from_ref(&bytes));
        let (split, live_split) = run_sink(opts, &split_at_fractions(&bytes, &cuts));
        prop_assert_eq!(&one, &split);
        prop_assert_eq!(&live_one, &whole);
        prop_assert_eq!(&live_split, &whole);
        prop_assert_eq!(one.total_bytes, whole.len() as u64);
        prop_assert_eq!(one.total_lines, count_lines(&whole));
        prop_assert_eq!(one.output_bytes, one.output.len() as u64);
        prop_assert_eq!(one.output_lines, count_lines(&one.output));
        prop_assert_eq!(one.truncated, one.output != whole);
        if head_lines.is_some() {
            prop_assert!(whole.starts_with(&one.output));
            prop_assert!(one.output.len() <= max_bytes);
        } else if head_bytes.min(max_bytes) == 0 {
            prop_assert_eq!(&one.output, &expected_tail(&whole, max_bytes));
        } else if one.truncated {
            // head + marker line + tail, each part taken from the stream.
            let at = one.output.find("[… ").unwrap();
            let (head, rest) = one.output.split_at(at);
            let tail = &rest[rest.find(" elided …]\n").unwrap() + " elided …]\n".len()..];
            // A `\n` is added before the marker when the head does not end a line.
            let head_in_stream = head.strip_suffix('\n').unwrap_or(head);
            prop_assert!(whole.starts_with(head) || whole.starts_with(head_in_stream));
            prop_assert!(whole.ends_with(tail));
            prop_assert!(head.len() + tail.len() <= max_bytes + 1);
        }
    }

    #[test]
    fn artifact_holds_the_whole_stream(
        bytes in tricky_bytes(),
        cuts in prop::collection::vec(0.0f64..1.0, 0..6),
        max_bytes in 0usize..48,
        head_bytes in 0usize..16,
    ) {
        let dir = temp_dir();
        let store = ArtifactStore::new(&dir);
        let artifact = store.allocate("bash").unwrap();
        let whole = sanitize_chunks(std::slice::from_ref(&bytes));
        let opts = SinkOptions { max_bytes, head_bytes, head_lines: None, artifact: Some(artifact.clone().into()), artifact_cap: None, mask: None, carriage_return: CarriageReturn::Newline };
        let (summary, _) = run_sink(opts, &split_at_fractions(&bytes, &cuts));
        if summary.truncated {
            prop_assert_eq!(summary.artifact_id.as_deref(), Some(artifact.id.as_str()));
            prop_assert_eq!(fs::read_to_string(&artifact.path).unwrap(), whole);
        } else {
            prop_assert_eq!(summary.artifact_id, None);
            prop_assert!(!artifact.path.exists());
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn masking_is_chunking_independent_and_leaves_no_secret(
        bytes in secretive_bytes(),
        cuts in prop::collection::vec(0.0f64..1.0, 0..6),
    ) {
        let opts = SinkOptions {
            mask: Some(Masker::new(SECRETS.iter().copied())),
            ..SinkOptions::default()
        };
        let whole = masked_reference(&sanitize_chunks(std::slice::from_ref(&bytes)));
        let (one, live_one) = run_sink(opts.clone(), std::slice::from_ref(&bytes));
        let (split, live_split) = run_sink(opts.clone(), &split_at_fractions(&bytes, &cuts));
        let single: Vec<Vec<u8>> = bytes.iter().map(|&b| vec![b]).collect();
        let (bytewise, _) = run_sink(opts, &single);
        prop_assert_eq!(&one.output, &whole);
        prop_assert_eq!(&live_one, &whole);
        prop_assert_eq!(&live_split, &whole);
        prop_assert_eq!(&split, &one);
        prop_assert_eq!(&bytewise, &one);
        prop_assert_eq!(one.total_bytes, whole.len() as u64);
        for (_, value) in SECRETS {
            prop_assert!(!whole.contains(value), "{:?} in {:?}", value, whole);
        }
    }
}
