//! Runs the shared vectors `tests/vectors/{sanitize,sink,artifact}.json`,
//! which the C, Python and Node suites run too.
//!
//! - sanitize: `{name, input | input_bytes, chunks?, expect}`; `chunks` are
//!   byte offsets where the input is split into pushes. Here every case is
//!   also run one byte per push.
//! - sink: `{name, options: {max_bytes?, head_bytes?, head_lines?,
//!   artifact?}, pushes: [string | [byte]], notice, expect}`; `artifact: true`
//!   gives the sink an artifact from a fresh store (so its id is "0"); `expect`
//!   holds the summary fields, plus optional `artifact_text`,
//!   `artifact_exists` and `head_satisfied`.
//! - mask: `{name, env, mask?, pushes, command, cut?, expect}`; the pushes
//!   go through a sink masking `env`'s secrets as `mask` picks them, as
//!   given, then the whole stream cut in two at every byte and byte by
//!   byte; each must give `expect`. (`command` and `cut` run real bash:
//!   `core/tests/shell/mask.rs` replays them.)
//! - artifact: `{name, files: {name: text} | null, op, …}`; `files: null`
//!   means the directory does not exist. `op` is `allocate` (`kinds`, expect
//!   file names), `resolve` (`url`) or `read` (`id`, `offset`, `limit`);
//!   failures are `expect_error: {kind, message}`.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use conch_core::artifact::ArtifactStore;
use conch_core::error::Error;
use conch_core::output::carriage::CarriageReturn;
use conch_core::output::{Mask, OutputSink, Sanitizer, SinkOptions};
use serde_json::Value;

fn load(name: &str) -> Vec<Value> {
    let path = format!(
        "{}/../tests/vectors/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A string value as its UTF-8 bytes, or an array of byte values.
fn bytes_of(value: &Value) -> Vec<u8> {
    match value {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Array(items) => items.iter().map(|b| b.as_u64().unwrap() as u8).collect(),
        other => panic!("expected a string or an array of bytes, got {other}"),
    }
}

fn temp_dir() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("conch-output-vectors-{}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

fn sanitize_pushes<'a>(pushes: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut out = String::new();
    let mut sanitizer = Sanitizer::new();
    for push in pushes {
        sanitizer.push(push, &mut out);
    }
    sanitizer.finish(&mut out);
    out
}

#[test]
fn sanitize_vectors() {
    let cases = load("sanitize");
    assert!(!cases.is_empty());
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let input = bytes_of(case.get("input").unwrap_or(&case["input_bytes"]));
        let expect = case["expect"].as_str().unwrap();
        assert_eq!(sanitize_pushes([&input[..]]), expect, "{name}");
        if let Some(Value::String(text)) = case.get("input") {
            assert_eq!(conch_core::output::sanitize_text(text), expect, "{name}");
        }
        if let Some(chunks) = case.get("chunks") {
            let mut points: Vec<usize> = chunks
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_u64().unwrap() as usize)
                .collect();
            points.insert(0, 0);
            points.push(input.len());
            let pieces = points.windows(2).map(|w| &input[w[0]..w[1]]);
            assert_eq!(sanitize_pushes(pieces), expect, "{name} (chunked)");
        }
        assert_eq!(
            sanitize_pushes(input.chunks(1)),
            expect,
            "{name} (byte by byte)"
        );
    }
}

#[test]
fn sink_vectors() {
    let cases = load("sink");
    assert!(!cases.is_empty());
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let options = &case["options"];
        let dir = temp_dir();
        let artifact = options["artifact"]
            .as_bool()
            .unwrap_or(false)
            .then(|| ArtifactStore::new(&dir).allocate("bash").unwrap());
        let mut sink = OutputSink::new(SinkOptions {
            max_bytes: options["max_bytes"]
                .as_u64()
                .map_or(SinkOptions::default().max_bytes, |n| n as usize),
            head_bytes: options["head_bytes"].as_u64().unwrap_or(0) as usize,
            head_lines: options["head_lines"].as_u64().map(|n| n as usize),
            artifact: artifact.clone().map(Into::into),
            artifact_cap: None,
            mask: None,
            carriage_return: CarriageReturn::default(),
        });
        for push in case["pushes"].as_array().unwrap() {
            sink.push(&bytes_of(push));
        }
        let expect = &case["expect"];
        if let Some(satisfied) = expect["head_satisfied"].as_bool() {
            assert_eq!(sink.head_satisfied(), satisfied, "{name}: head_satisfied");
        }
        let summary = sink.dump(case["notice"].as_str());
        let actual = serde_json::to_value(&summary).unwrap();
        // The summary serializes as part of a BashResult.
        for field in [
            "output",
            "truncated",
            "total_lines",
            "total_bytes",
            "output_lines",
            "output_bytes",
            "artifact_id",
        ] {
            assert_eq!(actual[field], expect[field], "{name}: {field}");
        }
        if let Some(text) = expect["artifact_text"].as_str() {
            let path = &artifact.as_ref().unwrap().path;
            assert_eq!(fs::read_to_string(path).unwrap(), text, "{name}: artifact");
        }
        if let Some(exists) = expect["artifact_exists"].as_bool() {
            let path = &artifact.as_ref().unwrap().path;
            assert_eq!(path.exists(), exists, "{name}: artifact_exists");
        }
        let _ = fs::remove_dir_all(&dir);
    }
}

fn error_kind(error: &Error) -> &'static str {
    match error {
        Error::InvalidArgument(_) => "invalid_argument",
        Error::NotFound(_) => "not_found",
        Error::Io { .. } => "io",
        Error::Spawn(_) => "spawn",
        Error::Closed(_) => "closed",
        Error::TooManyJobs(_) => "too_many_jobs",
        Error::NoInput(_) => "no_input",
        Error::SandboxUnavailable(_) => "sandbox_unavailable",
    }
}

#[test]
fn artifact_vectors() {
    let cases = load("artifact");
    assert!(!cases.is_empty());
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let dir = temp_dir();
        if let Some(files) = case["files"].as_object() {
            fs::create_dir_all(&dir).unwrap();
            for (file, text) in files {
                fs::write(dir.join(file), text.as_str().unwrap()).unwrap();
            }
        }
        let store = ArtifactStore::new(&dir);
        let result: conch_core::Result<Value> = match case["op"].as_str().unwrap() {
            "allocate" => case["kinds"]
                .as_array()
                .unwrap()
                .iter()
                .map(|kind| {
                    let artifact = store.allocate(kind.as_str().unwrap())?;
                    assert_eq!(artifact.path.parent().unwrap(), dir, "{name}");
                    let file = artifact.path.file_name().unwrap().to_str().unwrap();
                    assert_eq!(
                        file,
                        format!("{}.{}.log", artifact.id, kind.as_str().unwrap())
                    );
                    Ok(Value::from(file))
                })
                .collect::<conch_core::Result<Vec<Value>>>()
                .map(Value::from),
            "resolve" => store
                .resolve(case["url"].as_str().unwrap())
                .map(Value::from),
            "read" => store
                .read(
                    case["id"].as_str().unwrap(),
                    case["offset"].as_u64().unwrap() as usize,
                    case["limit"].as_u64().map(|n| n as usize),
                )
                .map(Value::from),
            op => panic!("{name}: unknown op {op}"),
        };
        match (result, case.get("expect_error")) {
            (Ok(value), None) => assert_eq!(value, case["expect"], "{name}"),
            (Err(error), Some(expected)) => {
                assert_eq!(
                    error.to_string(),
                    expected["message"].as_str().unwrap(),
                    "{name}"
                );
                assert_eq!(
                    error_kind(&error),
                    expected["kind"].as_str().unwrap(),
                    "{name}"
                );
            }
            (Ok(value), Some(_)) => panic!("{name}: expected an error, got {value}"),
            (Err(error), None) => panic!("{name}: unexpected error {error}"),
        }
        let _ = fs::remove_dir_all(&dir);
    }
}

/// The env of a mask case, in the order given.
fn env_pairs(case: &Value) -> Vec<(String, String)> {
    case["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect()
}

/// The pushes of a mask case through a sink that masks; its whole output.
fn masked_pushes<'a>(
    mask: &Mask,
    env: &[(String, String)],
    pushes: impl IntoIterator<Item = &'a [u8]>,
) -> String {
    let mut sink = OutputSink::new(SinkOptions {
        mask: mask.masker(env),
        ..SinkOptions::default()
    });
    let mut live = String::new();
    for push in pushes {
        live.push_str(&sink.push(push).to_string());
    }
    live.push_str(sink.finish());
    let summary = sink.dump(None);
    // What the chunks said, the kept text and the counts are one text.
    assert_eq!(live, summary.output);
    assert_eq!(summary.total_bytes, summary.output.len() as u64);
    summary.output
}

#[test]
fn mask_vectors() {
    let cases = load("mask");
    assert!(!cases.is_empty());
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let env = env_pairs(&case);
        let mask: Mask = serde_json::from_value(case.get("mask").cloned().unwrap_or(Value::Null))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let expect = case["expect"].as_str().unwrap();
        let pushes: Vec<Vec<u8>> = case["pushes"]
            .as_array()
            .unwrap()
            .iter()
            .map(bytes_of)
            .collect();
        assert_eq!(
            masked_pushes(&mask, &env, pushes.iter().map(Vec::as_slice)),
            expect,
            "{name}"
        );
        let whole = pushes.concat();
        for cut in 0..=whole.len() {
            let (a, b) = whole.split_at(cut);
            assert_eq!(
                masked_pushes(&mask, &env, [a, b]),
                expect,
                "{name} (cut at {cut})"
            );
        }
        assert_eq!(
            masked_pushes(&mask, &env, whole.chunks(1)),
            expect,
            "{name} (byte by byte)"
        );
    }
}

/// `carriage_return.json`: the text a run's output reads as, in each mode,
/// through a sink fed the input whole, cut in two at every byte, and byte
/// by byte; the streamed pieces add up to the same text.
#[test]
fn carriage_return_vectors() {
    let cases = load("carriage_return");
    assert!(!cases.is_empty());
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let input = case["input"].as_str().unwrap().as_bytes();
        for (mode, key) in [
            (CarriageReturn::Terminal, "terminal"),
            (CarriageReturn::Newline, "newline"),
        ] {
            let want = case["expect"][key].as_str().unwrap();
            let mut cuts: Vec<Vec<usize>> = (0..=input.len()).map(|i| vec![i]).collect();
            cuts.push((1..input.len()).collect());
            for cut in cuts {
                let mut sink = OutputSink::new(SinkOptions {
                    carriage_return: mode,
                    ..SinkOptions::default()
                });
                let mut streamed = String::new();
                let mut at = 0;
                for &c in cut.iter().chain([&input.len()]) {
                    streamed.push_str(&sink.push(&input[at..c]).to_string());
                    at = c;
                }
                streamed.push_str(sink.finish());
                let summary = sink.dump(None);
                assert_eq!(summary.output, want, "{name} ({key}, cut at {cut:?})");
                assert_eq!(streamed, want, "{name} ({key}, streamed, cut at {cut:?})");
            }
        }
    }
}
