//! `| head -n N` / `| tail -n N` at the end of a command become structured
//! limits.
//!
//! Models end commands with `| head -n 50` to keep output short. conch applies
//! such limits itself, to the *complete* output stream, with the full output
//! kept in the artifact, so the pipeline stage can be taken off the command
//! and turned into [`NormalizedCommand::head_lines`] /
//! [`NormalizedCommand::tail_lines`] (docs/behaviour.md §5).
//!
//! Only what is provably a final `head`/`tail` stage is taken, found with the
//! [tokenizer](super::tokenize), never by a regex on the raw text:
//!
//! - the stage is the last stage of the last pipeline of the command line
//!   (only `;`, line breaks, comments and heredoc bodies may follow it), it is
//!   fed by `|` or `|&` (stderr is merged into the output anyway), and the
//!   pipeline keeps at least one stage;
//! - it is exactly `head`/`tail` with one count: `-n N`, `-nN`, `-N`,
//!   `--lines=N`, `--lines N` (N decimal digits; `head -n 0` means zero lines);
//! - several such stages are taken while their combination is still "first
//!   `head`, then `tail`": `| head -5 | tail -2` gives head 5 and tail 2,
//!   `| tail -5 | head -2` takes only the `head -2`.
//!
//! Everything else is left alone: `head -c`, `tail -f`/`-F`, `tail -n +N`,
//! `head -n -N`, a count-less `head`, a file argument, a redirect after the
//! stage, a stage in the middle, `cmd || head -5`, `cmd | head -5 &`, text in
//! quotes, heredoc bodies, comments or substitutions, and any command line bash
//! could not tokenize (an unterminated quote). The command is trimmed at both
//! ends only; inner whitespace (tabs, heredoc indentation) is kept.
//!
//! When earlier commands of the line print too (`make; ./run | tail -5`), the
//! limit applies to the whole output: the stream is what the model reads.

use super::tokenize::{Op, Token, TokenKind, tokenize};

/// A command with its trailing `head`/`tail` stages taken off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalizedCommand {
    /// The command to run, trimmed.
    pub command: String,
    /// Keep the first N lines of the output (applied before `tail_lines`).
    pub head_lines: Option<usize>,
    /// Then keep the last N lines.
    pub tail_lines: Option<usize>,
}

impl NormalizedCommand {
    /// The limits to apply when the tool call also has explicit `head`/`tail`
    /// arguments: each explicit value wins over the extracted one; extracted
    /// values are only the fallback.
    pub fn limits_with(
        &self,
        head: Option<usize>,
        tail: Option<usize>,
    ) -> (Option<usize>, Option<usize>) {
        (head.or(self.head_lines), tail.or(self.tail_lines))
    }
}

/// Takes trailing `| head`/`| tail` stages off `command` (see the module
/// documentation for exactly which). Never panics; linear in the length.
pub fn normalize_bash_command(command: &str) -> NormalizedCommand {
    let command = command.trim();
    let lexed = tokenize(command);
    let cut = match lexed.error {
        None => trailing_limits(command, &lexed.tokens),
        Some(_) => None,
    };
    match cut {
        Some(cut) => {
            let mut rest = String::with_capacity(command.len() - (cut.end - cut.start));
            rest.push_str(&command[..cut.start]);
            rest.push_str(&command[cut.end..]);
            NormalizedCommand {
                command: rest.trim().to_owned(),
                head_lines: cut.limits.head,
                tail_lines: cut.limits.tail,
            }
        }
        None => NormalizedCommand {
            command: command.to_owned(),
            head_lines: None,
            tail_lines: None,
        },
    }
}

/// Keeps the first `head` lines of `text`, then the last `tail` lines of what
/// is left, as `head -n H | tail -n T` would. Lines end at `"\n"`; a final
/// `"\n"` ends the last line instead of starting an empty one, so `tail -n 2`
/// of `"8\n9\n10\n"` is `"9\n10\n"` (not `"10\n"` plus an empty line).
/// The result ends with `"\n"` only when it keeps the text's final line and
/// that line had one. `Some(0)` keeps nothing; `None` keeps everything.
pub fn apply_head_tail(text: &str, head: Option<usize>, tail: Option<usize>) -> String {
    let (body, terminated) = match text.strip_suffix('\n') {
        Some(body) => (body, true),
        None => (text, false),
    };
    if body.is_empty() && !terminated {
        return String::new();
    }
    // `body` holds the lines separated by "\n"; `keeps_last` tells whether
    // the selection still reaches the text's final line.
    let mut selected = body;
    let mut keeps_last = true;
    if let Some(n) = head {
        if n == 0 {
            return String::new();
        }
        if let Some((i, _)) = selected.match_indices('\n').nth(n - 1) {
            selected = &selected[..i];
            keeps_last = false;
        }
    }
    if let Some(n) = tail {
        if n == 0 {
            return String::new();
        }
        if let Some((i, _)) = selected.rmatch_indices('\n').nth(n - 1) {
            selected = &selected[i + 1..];
        }
    }
    let mut out = String::with_capacity(selected.len() + 1);
    out.push_str(selected);
    if terminated && keeps_last {
        out.push('\n');
    }
    out
}

/// Head-then-tail limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Limits {
    head: Option<usize>,
    tail: Option<usize>,
}

/// One `head -n N` or `tail -n N` stage.
#[derive(Debug, Clone, Copy)]
enum Stage {
    Head(usize),
    Tail(usize),
}

impl Limits {
    /// These limits with `stage` running before them, if the combination is
    /// still a head followed by a tail.
    fn after(self, stage: Stage) -> Option<Limits> {
        match stage {
            Stage::Head(n) => Some(Limits {
                head: Some(self.head.map_or(n, |h| h.min(n))),
                tail: self.tail,
            }),
            // a tail before a head cannot be expressed as head-then-tail
            Stage::Tail(_) if self.head.is_some() => None,
            Stage::Tail(n) => Some(Limits {
                head: None,
                tail: Some(self.tail.map_or(n, |t| t.min(n))),
            }),
        }
    }
}

/// The byte range to remove (from the end of the command before the first
/// removed `|` to the end of the last stage) and the limits it stood for.
struct Cut {
    start: usize,
    end: usize,
    limits: Limits,
}

fn trailing_limits(src: &str, tokens: &[Token]) -> Option<Cut> {
    use TokenKind::{Comment, HeredocBody, Op as O, Word};
    // The end of the last pipeline: after it only line breaks, comments,
    // heredoc bodies, and one `;` before them.
    let mut end = tokens.len();
    while end > 0 && matches!(tokens[end - 1].kind, O(Op::Newline) | Comment | HeredocBody) {
        end -= 1;
    }
    if end > 0 && tokens[end - 1].kind == O(Op::Semi) {
        end -= 1;
    }
    let cut_end = tokens[..end].last()?.end;
    let mut limits = Limits::default();
    let mut cut_start = None;
    loop {
        // the stage: the words back to the pipe
        let words = tokens[..end]
            .iter()
            .rev()
            .take_while(|t| t.kind == Word)
            .count();
        let stage_start = end - words;
        let Some(stage) = parse_stage(src, &tokens[stage_start..end]) else {
            break;
        };
        // the pipe, possibly followed by line breaks and comments
        let mut pipe = stage_start;
        while pipe > 0 && matches!(tokens[pipe - 1].kind, O(Op::Newline) | Comment) {
            pipe -= 1;
        }
        if pipe < 2 || !matches!(tokens[pipe - 1].kind, O(Op::Pipe | Op::PipeAll)) {
            break;
        }
        // the stage before the pipe must end with a word or `)`, so the
        // pipeline keeps a stage (`cmd || head -5` ends with `||`)
        let before = tokens[pipe - 2];
        if !matches!(before.kind, Word | O(Op::CloseParen)) {
            break;
        }
        let Some(combined) = limits.after(stage) else {
            break;
        };
        limits = combined;
        cut_start = Some(before.end);
        end = pipe - 1;
    }
    cut_start.map(|start| Cut {
        start,
        end: cut_end,
        limits,
    })
}

/// `head`/`tail` with exactly one line count, written plainly (no quotes).
fn parse_stage(src: &str, words: &[Token]) -> Option<Stage> {
    let words: Vec<&str> = words.iter().map(|t| t.text(src)).collect();
    let (program, count) = match words.as_slice() {
        [program, option] => (*program, short_count(option)?),
        [program, "-n" | "--lines", count] => (*program, digits(count)?),
        _ => return None,
    };
    match program {
        "head" => Some(Stage::Head(count)),
        "tail" => Some(Stage::Tail(count)),
        _ => None,
    }
}

/// `-N`, `-nN` or `--lines=N`.
fn short_count(option: &str) -> Option<usize> {
    let count = option
        .strip_prefix("--lines=")
        .or_else(|| option.strip_prefix("-n"))
        .or_else(|| option.strip_prefix('-'))?;
    digits(count)
}

/// A plain decimal count (no sign, no suffix) that fits a `usize`.
fn digits(text: &str) -> Option<usize> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(cmd: &str) -> (String, Option<usize>, Option<usize>) {
        let n = normalize_bash_command(cmd);
        (n.command, n.head_lines, n.tail_lines)
    }

    #[test]
    fn takes_a_final_stage_keeping_what_follows_it() {
        assert_eq!(norm("ls | head -5;"), ("ls;".into(), Some(5), None));
        assert_eq!(
            norm("ls | head -5 # first ones"),
            ("ls # first ones".into(), Some(5), None)
        );
        assert_eq!(
            norm("cat <<EOF | tail -n 2\na\nb\nEOF\n"),
            ("cat <<EOF\na\nb\nEOF".into(), None, Some(2))
        );
        assert_eq!(norm("ls |\n  head -3"), ("ls".into(), Some(3), None));
    }

    #[test]
    fn combines_only_head_then_tail() {
        assert_eq!(
            norm("seq 9 | head -5 | head -3"),
            ("seq 9".into(), Some(3), None)
        );
        assert_eq!(
            norm("seq 9 | tail -5 | tail -7"),
            ("seq 9".into(), None, Some(5))
        );
        assert_eq!(
            norm("seq 9 | head -3 | tail -5"),
            ("seq 9".into(), Some(3), Some(5))
        );
        assert_eq!(
            norm("seq 9 | tail -3 | head -1"),
            ("seq 9 | tail -3".into(), Some(1), None)
        );
    }

    #[test]
    fn explicit_arguments_win() {
        let n = normalize_bash_command("ls | head -5 | tail -2");
        assert_eq!(n.limits_with(Some(9), None), (Some(9), Some(2)));
        assert_eq!(n.limits_with(None, None), (Some(5), Some(2)));
    }

    #[test]
    fn head_tail_counts_lines_like_coreutils() {
        assert_eq!(apply_head_tail("8\n9\n10\n", None, Some(2)), "9\n10\n");
        assert_eq!(apply_head_tail("a\nb\nc\n", Some(2), None), "a\nb");
        assert_eq!(apply_head_tail("\n", Some(1), None), "\n");
        assert_eq!(apply_head_tail("a\n", Some(0), None), "");
        assert_eq!(apply_head_tail("a\n", None, Some(0)), "");
        assert_eq!(apply_head_tail("", Some(3), Some(1)), "");
    }
}
