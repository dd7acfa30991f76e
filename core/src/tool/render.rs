//! What a host's UI shows of a bash run: the previews and the warning line
//! (texts in docs/behaviour.md §13).
//!
//! - [`tool_preview`]: the collapsed tool result, the last 10 *visual* lines
//!   at the terminal width, with a hint saying how many are hidden;
//! - [`bang_preview`]: the user's `!cmd` result, the last 20 logical lines,
//!   each clamped to 4000 columns;
//! - [`clamp_line`]: one long line cut to a width, with how much was omitted;
//! - [`truncation_warning`]: the warning line with the truncation reason and
//!   `artifact://<id>`;
//! - [`format_output_notice`]: the notice the model reads (also here, so
//!   that a renderer finds every text helper in one module).
//!
//! Widths are terminal columns: CJK and emoji count 2, combining marks 0
//! (`unicode-width`, per character, so an emoji ZWJ sequence counts as the sum
//! of its parts: too wide, never too narrow). A character is never split.

use std::borrow::Cow;

use serde::Serialize;
use unicode_width::UnicodeWidthChar;

pub use crate::output::notice::format_output_notice;
use crate::output::notice::{TruncatedBy, Truncation};

/// Visual lines in the collapsed tool preview.
pub const TOOL_PREVIEW_LINES: usize = 10;
/// Logical lines in the bang preview.
pub const BANG_PREVIEW_LINES: usize = 20;
/// Columns a displayed line is clamped to.
pub const MAX_DISPLAY_LINE_CHARS: usize = 4000;

/// Tab stops every 8 columns, as terminals have them.
const TAB_STOP: usize = 8;

/// Lines to display, and the hint line to show under them when lines were
/// hidden.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preview {
    pub lines: Vec<String>,
    pub hint: Option<String>,
}

/// The last `max_visual_lines` (normally [`TOOL_PREVIEW_LINES`]) lines of
/// `text` wrapped at `width` columns (at least 1), tabs expanded to spaces
/// (stops every 8 columns). When earlier lines are hidden, `hint` is
/// `… (K earlier lines, showing V of K+V) (ctrl+o to expand)`.
pub fn tool_preview(text: &str, width: usize, max_visual_lines: usize) -> Preview {
    let width = width.max(1);
    let mut shown: Vec<String> = Vec::new();
    let mut hidden = 0usize;
    for line in logical_lines(text).rev() {
        let room = max_visual_lines - shown.len();
        if room == 0 {
            hidden += wrap(line, width).len();
            continue;
        }
        let mut visual = wrap(line, width);
        if visual.len() > room {
            hidden += visual.len() - room;
            visual.drain(..visual.len() - room);
        }
        shown.extend(visual.into_iter().rev());
    }
    shown.reverse();
    let hint = (hidden > 0).then(|| {
        format!(
            "… ({hidden} earlier lines, showing {} of {}) (ctrl+o to expand)",
            shown.len(),
            hidden + shown.len()
        )
    });
    Preview { lines: shown, hint }
}

/// The last [`BANG_PREVIEW_LINES`] lines of `text`, each clamped to
/// [`MAX_DISPLAY_LINE_CHARS`] columns. When earlier lines are hidden, `hint`
/// is `… N more lines (ctrl+o to expand)`.
pub fn bang_preview(text: &str) -> Preview {
    let total = logical_lines(text).count();
    let hidden = total.saturating_sub(BANG_PREVIEW_LINES);
    let lines = logical_lines(text)
        .skip(hidden)
        .map(|line| clamp_line(line, MAX_DISPLAY_LINE_CHARS).into_owned())
        .collect();
    let hint = (hidden > 0).then(|| format!("… {hidden} more lines (ctrl+o to expand)"));
    Preview { lines, hint }
}

/// `line` when it fits in `max_width` columns; else its longest prefix that
/// fits, then `… [N chars omitted]` (N counts the characters cut off).
pub fn clamp_line(line: &str, max_width: usize) -> Cow<'_, str> {
    let mut width = 0usize;
    let mut cut = None;
    for (i, c) in line.char_indices() {
        width += char_width(c);
        if width > max_width {
            cut = Some(i);
            break;
        }
    }
    match cut {
        None => Cow::Borrowed(line),
        Some(i) => {
            let omitted = line[i..].chars().count();
            Cow::Owned(format!("{}… [{omitted} chars omitted]", &line[..i]))
        }
    }
}

/// The UI's warning for a truncated result:
/// `Full output: artifact://<id>. Truncated: <N> lines shown (<size> limit)`
/// when bytes cut it, `… Truncated: showing X of Y lines` when lines did; the
/// `Full output: …. ` part only when there is an artifact.
pub fn truncation_warning(truncation: &Truncation) -> String {
    let t = truncation;
    let reason = match t.truncated_by {
        TruncatedBy::Bytes => format!(
            "Truncated: {} lines shown ({} limit)",
            t.output_lines,
            t.limit_size()
        ),
        TruncatedBy::Lines => format!(
            "Truncated: showing {} of {} lines",
            t.output_lines, t.total_lines
        ),
    };
    match &t.artifact_id {
        Some(id) => format!("Full output: artifact://{id}. {reason}"),
        None => reason,
    }
}

/// The lines of `text`; a final `"\n"` ends the last line rather than
/// starting an empty one.
fn logical_lines(text: &str) -> impl DoubleEndedIterator<Item = &str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let empty = text.is_empty();
    body.split('\n').filter(move |_| !empty)
}

fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// One logical line as visual lines of at most `width` columns (a character
/// wider than `width` gets a line of its own). An empty line is one empty
/// visual line.
fn wrap(line: &str, width: usize) -> Vec<String> {
    let tab_width = |column: usize| (TAB_STOP - column % TAB_STOP).min(width);
    let mut lines = Vec::new();
    let mut current = String::new();
    let mut column = 0usize;
    for c in line.chars() {
        let mut w = if c == '\t' {
            tab_width(column)
        } else {
            char_width(c)
        };
        if column + w > width && column > 0 {
            lines.push(std::mem::take(&mut current));
            column = 0;
            if c == '\t' {
                w = tab_width(0);
            }
        }
        if c == '\t' {
            current.extend(std::iter::repeat_n(' ', w));
        } else {
            current.push(c);
        }
        column += w;
    }
    lines.push(current);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_by_columns_with_wide_chars_and_tabs() {
        assert_eq!(wrap("abcdef", 4), ["abcd", "ef"]);
        assert_eq!(wrap("ab漢字", 4), ["ab漢", "字"]);
        assert_eq!(wrap("a漢", 2), ["a", "漢"]);
        assert_eq!(wrap("漢", 1), ["漢"]);
        assert_eq!(wrap("a\tb", 20), ["a       b"]);
        assert_eq!(wrap("abcdef\tx", 8), ["abcdef  ", "x"]);
        assert_eq!(wrap("", 8), [""]);
    }

    #[test]
    fn tool_preview_keeps_the_last_visual_lines() {
        let p = tool_preview("1\n2\n3\nabcdef\n", 3, 3);
        assert_eq!(p.lines, ["3", "abc", "def"]);
        assert_eq!(
            p.hint.as_deref(),
            Some("… (2 earlier lines, showing 3 of 5) (ctrl+o to expand)")
        );
        let p = tool_preview("abcdefg", 3, 2);
        assert_eq!(p.lines, ["def", "g"]);
        assert_eq!(
            p.hint.as_deref(),
            Some("… (1 earlier lines, showing 2 of 3) (ctrl+o to expand)")
        );
        assert_eq!(tool_preview("", 80, 10).lines, Vec::<String>::new());
        assert_eq!(tool_preview("a\nb", 80, 10).hint, None);
    }

    #[test]
    fn clamp_never_splits_a_char() {
        assert_eq!(clamp_line("abc", 3), "abc");
        assert_eq!(clamp_line("abcd", 3), "abc… [1 chars omitted]");
        assert_eq!(clamp_line("漢字漢", 3), "漢… [2 chars omitted]");
        assert!(matches!(clamp_line("short", 4000), Cow::Borrowed(_)));
    }
}
