//! Unit tests of [`super::OutputSink`]: what is kept, the counts, the
//! artifact, carriage returns and masking, on pushes given directly.

use super::*;

fn sink(max_bytes: usize) -> OutputSink {
    OutputSink::new(SinkOptions {
        max_bytes,
        ..SinkOptions::default()
    })
}

#[test]
fn redrawn_lines_read_as_a_terminal_shows_them_and_spill_every_frame() {
    let dir = std::env::temp_dir().join(format!("conch-sink-cr-{}", std::process::id()));
    let store = crate::ArtifactStore::new(&dir);
    let mut s = OutputSink::new(SinkOptions {
        max_bytes: 32,
        artifact: Some(store.slot("bash")),
        ..SinkOptions::default()
    });
    let lines = "0123456789\n".repeat(4);
    let mut streamed = s.push(lines.as_bytes()).to_string();
    for i in 1..=10 {
        streamed.push_str(
            &s.push(format!("\rprogress {}%", i * 10).as_bytes())
                .to_string(),
        );
    }
    streamed.push_str(&s.push(b"\ndone\n").to_string());
    assert_eq!(streamed, lines.clone() + "progress 100%\ndone\n");
    let summary = s.dump(None);
    assert_eq!(summary.output, "0123456789\nprogress 100%\ndone\n");
    // The artifact, open since the stream outgrew the sink, has every frame.
    let frames: String = (1..=10)
        .map(|i| format!("progress {}%\n", i * 10))
        .collect();
    let id = summary.artifact_id.unwrap();
    let artifact = std::fs::read_to_string(store.path_of(&id, "bash")).unwrap();
    assert_eq!(artifact, lines + &frames + "done\n");
    // The counts are the terminal's lines; the artifact has every frame.
    assert_eq!(summary.total_lines, 6);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn newline_mode_shows_every_frame_as_it_comes() {
    let mut s = OutputSink::new(SinkOptions {
        carriage_return: CarriageReturn::Newline,
        ..SinkOptions::default()
    });
    assert_eq!(s.push(b"10%\r50%"), "10%\n50%");
    assert_eq!(s.dump(None).output, "10%\n50%");
}

#[test]
fn keeps_a_short_stream_whole() {
    let mut s = sink(100);
    assert_eq!(s.push(b"\x1b[32mok\x1b[0m\r\n"), "ok\n");
    // The line being written comes once it ends (a later `\r` could
    // still overwrite its start), or at the end.
    assert_eq!(s.push(b"second"), "");
    assert_eq!(s.finish(), "second");
    let summary = s.dump(None);
    assert_eq!(summary.output, "ok\nsecond");
    assert!(!summary.truncated);
    assert_eq!((summary.total_lines, summary.total_bytes), (2, 9));
    assert_eq!((summary.output_lines, summary.output_bytes), (2, 9));
    assert_eq!(summary.artifact_id, None);
}

#[test]
fn a_bound_of_everything_keeps_everything() {
    let mut s = sink(usize::MAX);
    s.push(b"all of it\n");
    let summary = s.dump(None);
    assert_eq!(
        (summary.output.as_str(), summary.truncated),
        ("all of it\n", false)
    );
}

#[test]
fn counts_lines_without_a_phantom_last_line() {
    for (text, lines) in [("", 0), ("\n", 1), ("a", 1), ("a\nb", 2), ("a\nb\n", 2)] {
        let mut s = sink(100);
        s.push(text.as_bytes());
        assert_eq!(s.total_lines(), lines, "{text:?}");
        assert_eq!(s.dump(None).output_lines, lines, "{text:?}");
    }
}

#[test]
fn tail_starts_at_a_line_when_it_can() {
    let mut s = sink(10);
    s.push(b"line1\nline2\nline3\n");
    let summary = s.dump(None);
    // The last 10 bytes are "e2\nline3\n"; the kept text starts a line.
    assert_eq!(summary.output, "line3\n");
    assert!(summary.truncated);
    assert_eq!((summary.total_lines, summary.total_bytes), (3, 18));
    assert_eq!((summary.output_lines, summary.output_bytes), (1, 6));

    let mut s = sink(10);
    s.push("aaaaaaaaaaaaé€bbbbb\n".as_bytes());
    // One long line: cut at a character boundary.
    assert_eq!(s.dump(None).output, "€bbbbb\n");

    let mut s = sink(6);
    s.push(b"12345\nabcde\n");
    // The window is exactly "abcde\n" and the byte before it is '\n'.
    assert_eq!(s.dump(None).output, "abcde\n");
}

#[test]
fn notice_is_prefixed_outside_the_counts() {
    let mut s = sink(100);
    s.push(b"partial");
    let summary = s.dump(Some("Command timed out after 5 seconds"));
    assert_eq!(
        summary.output,
        "[Command timed out after 5 seconds]\npartial"
    );
    assert_eq!(summary.output_bytes, 7);
    assert_eq!(summary.output_lines, 1);
}

#[test]
fn head_and_tail_with_an_elision_marker() {
    let mut s = OutputSink::new(SinkOptions {
        max_bytes: 20,
        head_bytes: 8,
        ..SinkOptions::default()
    });
    for i in 1..=9 {
        s.push(format!("l{i}\n").as_bytes());
    }
    let summary = s.dump(None);
    // Head keeps "l1\nl2\nl3" (8 bytes), cut back to "l1\nl2\n"; the tail
    // is the last 12 bytes, "l6\n…l9\n", preceded by a line break.
    assert_eq!(
        summary.output,
        "l1\nl2\n[… 3 lines elided …]\nl6\nl7\nl8\nl9\n"
    );
    assert!(summary.truncated);
    assert_eq!(summary.output_lines, 7);
    assert_eq!(summary.total_lines, 9);

    let mut s = OutputSink::new(SinkOptions {
        max_bytes: 20,
        head_bytes: 8,
        ..SinkOptions::default()
    });
    s.push(b"0123456789012345678");
    assert_eq!(s.dump(None).output, "0123456789012345678");
}

#[test]
fn head_lines_keeps_the_first_lines_and_reports_satisfaction() {
    let mut s = OutputSink::new(SinkOptions {
        head_lines: Some(2),
        ..SinkOptions::default()
    });
    s.push(b"one\ntw");
    assert!(!s.head_satisfied());
    s.push(b"o\nthree\nfour\n");
    assert!(s.head_satisfied());
    let summary = s.dump(None);
    assert_eq!(summary.output, "one\ntwo\n");
    assert!(summary.truncated);
    assert_eq!((summary.total_lines, summary.output_lines), (4, 2));

    let mut s = OutputSink::new(SinkOptions {
        head_lines: Some(5),
        ..SinkOptions::default()
    });
    s.push(b"a\nb");
    let summary = s.dump(None);
    assert_eq!(summary.output, "a\nb");
    assert!(!summary.truncated);
}

/// `head` and `tail` of a run are those of the complete stream, as
/// `head -n H | tail -n T` prints them, within `max_bytes` (the last lines
/// that fit): a head longer than the sink keeps has its tail read from the
/// artifact. Every head and tail over a stream of 40 lines, in a sink of 16
/// bytes.
#[test]
fn a_tail_of_the_head_is_that_of_the_complete_stream() {
    let dir = std::env::temp_dir().join(format!("conch-sink-head-tail-{}", std::process::id()));
    let store = crate::ArtifactStore::new(&dir);
    let stream: String = (1..=40).map(|i| format!("{i}\n")).collect();
    let max_bytes = 16;
    for head in [0, 1, 5, 6, 7, 20, 39, 40, 41, 100] {
        for tail in [0, 1, 2, 4, 5, 10, 50] {
            let mut s = OutputSink::new(SinkOptions {
                max_bytes,
                head_lines: Some(head),
                artifact: Some(store.slot("bash")),
                ..SinkOptions::default()
            });
            s.push(stream.as_bytes());
            let summary = s.dump_lines(Some(head), Some(tail));
            let label = format!("head {head}, tail {tail}: {summary:?}");
            // What `head -n {head} | tail -n {tail}` prints.
            let lines: Vec<&str> = stream.split_inclusive('\n').take(head).collect();
            let expected = lines[lines.len().saturating_sub(tail)..].concat();
            if expected.len() <= max_bytes {
                assert_eq!(summary.output, expected, "{label}");
            } else {
                // The last whole lines that fit.
                assert!(expected.ends_with(&summary.output), "{label}");
                assert!(summary.output.len() <= max_bytes, "{label}");
                let before = &expected[..expected.len() - summary.output.len()];
                assert!(before.ends_with('\n'), "{label}");
                let line_before =
                    before.len() - before[..before.len() - 1].rfind('\n').map_or(0, |i| i + 1);
                assert!(summary.output.len() + line_before > max_bytes, "{label}");
            }
            assert_eq!(summary.truncated, summary.output != stream, "{label}");
            assert_eq!(summary.output_lines, count_lines(&summary.output));
            assert_eq!(summary.output_bytes, summary.output.len() as u64);
            assert_eq!((summary.total_lines, summary.total_bytes), (40, 111));
            if let Some(id) = summary.artifact_id {
                let artifact = std::fs::read_to_string(store.path_of(&id, "bash")).unwrap();
                assert_eq!(artifact, stream, "{label}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without the whole stream in an artifact, a tail of a long head is
/// the tail of what the sink kept: still within `max_bytes`, truncated.
#[test]
fn a_tail_of_a_long_head_without_an_artifact_is_of_what_was_kept() {
    let mut s = OutputSink::new(SinkOptions {
        max_bytes: 16,
        head_lines: Some(30),
        ..SinkOptions::default()
    });
    s.push(
        (1..=40)
            .map(|i| format!("{i}\n"))
            .collect::<String>()
            .as_bytes(),
    );
    let summary = s.dump_lines(Some(30), Some(2));
    assert_eq!(summary.output, "7\n8\n");
    assert!(summary.truncated);
    assert_eq!(summary.artifact_id, None);
}

/// The artifact opens when the stream outgrows the sink, never for a
/// redrawn line alone: a progress bar that fits leaves no file (and a
/// reservation made beforehand is given back), as the output that fits
/// never does.
#[test]
fn a_redrawn_line_that_fits_opens_no_artifact() {
    let dir = std::env::temp_dir().join(format!("conch-sink-cr-fits-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = crate::ArtifactStore::new(&dir);
    let reserved = store.allocate("bash").unwrap();
    for artifact in [store.slot("bash"), reserved.clone().into()] {
        let mut s = OutputSink::new(SinkOptions {
            artifact: Some(artifact),
            ..SinkOptions::default()
        });
        for push in ["10%\r", "20%", "\r30%\n", "a\u{8}b\rc\n"] {
            s.push(push.as_bytes());
        }
        let summary = s.dump(None);
        assert_eq!(summary.output, "30%\nc\n");
        assert!(!summary.truncated);
        assert_eq!(summary.artifact_id, None);
    }
    assert!(!reserved.path.exists());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn memory_stays_bounded() {
    let mut s = sink(1000);
    for _ in 0..1000 {
        s.push("0123456789abcdé\n".repeat(7).as_bytes());
        assert!(s.retained_bytes() <= 1001);
    }
    let summary = s.dump(None);
    assert!(summary.output_bytes <= 1000);
    assert_eq!(summary.total_lines, 7000);
}

/// A push that comes out in pieces (a held line, lines as read, lines
/// rewritten after a `\r`) keeps and spills all of them, in order, whatever
/// piece the spill starts in.
#[test]
fn a_push_in_pieces_is_kept_and_spilled_whole() {
    let dir = std::env::temp_dir().join(format!("conch-sink-pieces-{}", std::process::id()));
    let store = crate::ArtifactStore::new(&dir);
    let text = "held\nline one\nline two\nbar 1\rbar 2\nlast";
    for first in 1..text.len() {
        for max_bytes in [4, 12, 24, 64] {
            let mut s = OutputSink::new(SinkOptions {
                max_bytes,
                artifact: Some(store.slot("bash")),
                ..SinkOptions::default()
            });
            let mut streamed = s.push(&text.as_bytes()[..first]).to_string();
            let shown = s.push(&text.as_bytes()[first..]);
            assert!(shown.pieces().count() <= 3);
            streamed.push_str(&shown.to_string());
            streamed.push_str(s.finish());
            let label = format!("cut at {first}, max {max_bytes}");
            assert_eq!(streamed, "held\nline one\nline two\nbar 2\nlast", "{label}");
            let summary = s.dump(None);
            assert_eq!(summary.total_bytes, streamed.len() as u64, "{label}");
            assert_eq!(summary.total_lines, 5, "{label}");
            match summary.artifact_id {
                Some(id) => {
                    let path = store.path_of(&id, "bash");
                    let artifact = std::fs::read_to_string(&path).unwrap();
                    // Every frame once it spilled; the lines as shown when
                    // the push that spilled ended the redrawn line.
                    let frames = "held\nline one\nline two\nbar 1\nbar 2\nlast";
                    assert!(
                        artifact == frames || artifact == streamed,
                        "{label}: {artifact:?}"
                    );
                    std::fs::remove_file(path).unwrap();
                }
                None => assert!(!summary.truncated, "{label}"),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
