//! Property tests: the tokenizer, the normalizer, the interceptor and the
//! render helpers take any text without panicking, and keep their contracts.

use conch_core::command::intercept::Interceptor;
use conch_core::command::tokenize::tokenize;
use conch_core::command::{apply_head_tail, normalize_bash_command};
use conch_core::tool::render::{clamp_line, tool_preview};
use proptest::prelude::*;
use unicode_width::UnicodeWidthChar;

/// Shell-shaped text: fragments that exercise every lexer state, joined.
fn shellish() -> impl Strategy<Value = String> {
    const FRAGMENTS: &[&str] = &[
        "|",
        "||",
        "|&",
        "&",
        "&&",
        ";",
        ";;",
        "\n",
        "(",
        ")",
        "((",
        "))",
        "$(",
        "$((",
        "${",
        "}",
        "{",
        "`",
        "'",
        "\"",
        "\\",
        "\\\n",
        "<<",
        "<<-",
        "<<'EOF'",
        "EOF",
        "\tEOF",
        "<",
        ">",
        ">>",
        "2>&1",
        "&>",
        "<(",
        "#",
        " ",
        "\t",
        "head",
        "tail",
        "-n",
        "-5",
        " 5",
        "-0",
        "--lines=3",
        "+2",
        "-c",
        "cat",
        "f",
        "echo",
        "case",
        "esac",
        "in",
        "=",
        "a=(",
        "@(",
        "$'",
        "$\"",
        "x",
        "漢",
        "é",
        "👍",
        "sed",
        "-i",
        "perl",
        "-pi",
        "/dev/null",
    ];
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40).prop_map(|v| v.concat())
}

/// Either shell-shaped text or arbitrary text.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![shellish(), any::<String>()]
}

/// Shell-shaped text ending with a `head`/`tail` stage (or a near miss), so
/// that extraction is exercised, not only refusal.
fn with_stage() -> impl Strategy<Value = String> {
    const STAGES: &[&str] = &[
        " | head -5",
        " | tail -n 3",
        "|head -n0",
        " |& tail -2",
        " |\n head -1",
        " | head -5 | tail -2",
        " | tail -9 | head -3",
        " | head -5;",
        " | tail -3 # c",
        " || head -5",
        " | head -5 &",
        " | head -c 5",
        " | tail -n +2",
        " | head -5 > f",
        "\n| head -5",
    ];
    let prefix = prop::collection::vec(
        prop::sample::select(
            &[
                "ls",
                "seq 9",
                " ",
                "a=1",
                "'x'",
                "$(y)",
                "(z)",
                "{ w; }",
                ";",
                "&&",
                "|",
                "\n",
                "<<EOF\nb\nEOF\n",
                "#",
                "\"",
                "cat",
            ][..],
        ),
        0..8,
    )
    .prop_map(|v| v.concat());
    (prefix, prop::sample::select(STAGES)).prop_map(|(p, s)| p + s)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn tokens_are_ordered_char_aligned_spans(src in any_text()) {
        let lexed = tokenize(&src);
        let mut last_end = 0;
        for t in &lexed.tokens {
            prop_assert!(last_end <= t.start && t.start <= t.end && t.end <= src.len());
            prop_assert!(src.is_char_boundary(t.start) && src.is_char_boundary(t.end));
            last_end = t.end;
        }
    }

    #[test]
    fn normalize_extracts_or_returns_the_trimmed_input(
        src in prop_oneof![any_text(), with_stage()],
    ) {
        let n = normalize_bash_command(&src);
        if n.head_lines.is_none() && n.tail_lines.is_none() {
            prop_assert_eq!(n.command, src.trim());
        } else {
            // a stage was cut: something is left, shorter, and still whole shell
            prop_assert!(!n.command.is_empty());
            prop_assert!(n.command.len() < src.trim().len());
            prop_assert_eq!(tokenize(&n.command).error, None);
        }
    }

    #[test]
    fn interceptor_takes_any_command(src in any_text()) {
        let tools = ["read", "grep", "find", "edit", "write"];
        if let Some(hit) = Interceptor::defaults().check(&src, &tools) {
            let tail = format!("\n\nOriginal command: {}", src.trim());
            prop_assert!(hit.message.ends_with(&tail));
        }
    }

    #[test]
    fn head_tail_matches_a_line_model(
        text in "[ab\n]{0,30}",
        head in prop::option::of(0usize..8),
        tail in prop::option::of(0usize..8),
    ) {
        // model: lines with their terminators, head then tail; the last kept
        // line loses its "\n" unless it is the text's last line
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let end = head.map_or(lines.len(), |h| h.min(lines.len()));
        let start = tail.map_or(0, |t| end - t.min(end));
        let mut expected = lines[start..end].concat();
        if end < lines.len() && expected.ends_with('\n') {
            expected.pop();
        }
        prop_assert_eq!(apply_head_tail(&text, head, tail), expected);
    }

    #[test]
    fn previews_fit_their_width(text in any_text(), width in 1usize..40, max in 0usize..12) {
        let p = tool_preview(&text, width, max);
        prop_assert!(p.lines.len() <= max);
        for line in &p.lines {
            // over the width only when one character alone is wider
            prop_assert!(columns(line) <= width || line.chars().count() == 1, "{:?}", line);
        }
    }

    #[test]
    fn clamp_keeps_the_longest_fitting_prefix(line in any_text(), max in 0usize..20) {
        let clamped = clamp_line(&line, max);
        if clamped == line.as_str() {
            prop_assert!(columns(&line) <= max);
        } else {
            let (kept, suffix) = clamped.rsplit_once("… [").expect("clamp suffix");
            prop_assert!(line.starts_with(kept));
            prop_assert!(columns(kept) <= max);
            let rest = &line[kept.len()..];
            let next = rest.chars().next().expect("something was cut");
            prop_assert!(columns(kept) + columns(next.encode_utf8(&mut [0; 4])) > max);
            prop_assert_eq!(suffix, format!("{} chars omitted]", rest.chars().count()));
        }
    }
}

/// Terminal columns, summed per character as the render helpers count them.
fn columns(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}
