//! What a carriage return (`\r`) and a backspace do to a command's text.
//!
//! A progress bar redraws one line: `\r` takes the cursor back to the start
//! of the line and what follows overwrites what was there. A terminal shows
//! the last frame; a log that turns every `\r` into a line break shows
//! every frame, which fills a model's context with hundreds of lines where
//! a person saw one. Two views of the same text:
//!
//! - [`Overwrite`]: the terminal's. Within a line, text after `\r`
//!   overwrites from the line's start (a shorter overwrite leaves the tail
//!   of the longer line, as on a terminal), a backspace takes the cursor one
//!   character back (erasing the character when the cursor was at the end
//!   of the line), `\r\n` is a line break. What the model reads.
//! - [`Frames`]: one line per frame (every `\r` ends a line, but one at a
//!   line start, and a `\n` right after it is the same break; a backspace
//!   is dropped). What the artifact keeps, and how every `\r` read before
//!   the terminal's view was the default (`carriage_return: "newline"`).
//!
//! Both take the sanitizer's text with its `\r` and backspaces kept
//! ([`super::Sanitizer::keeping_carriage`]) in any chunking and give the
//! same text whatever the chunk boundaries. The terminal's view holds the
//! line being written until it ends (its end may still overwrite its
//! start), up to [`MAX_LINE_BYTES`]: a longer line is let out as it is and
//! goes on from there.

use std::ops::Range;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a run's output shows carriage returns and backspaces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CarriageReturn {
    /// As a terminal shows them: a redrawn line is its last frame.
    #[default]
    Terminal,
    /// Every `\r` a line break: one line per frame.
    Newline,
}

/// Longest line the terminal's view holds back while it is written; past
/// it, the line so far is let out and the rest of it starts afresh.
pub const MAX_LINE_BYTES: usize = 64 << 10;

const CR: u8 = b'\r';
const BS: u8 = 0x08;

/// Whether `text` holds a `\r` or a backspace.
fn has_carriage(text: &str) -> bool {
    memchr::memchr2(CR, BS, text.as_bytes()).is_some()
}

/// The terminal's view, streaming (see the module documentation).
#[derive(Debug, Default, Clone)]
pub struct Overwrite {
    /// The line being written (no `\n` in it).
    line: String,
    /// Where the next character goes, a byte offset into `line`.
    cursor: usize,
}

impl Overwrite {
    /// The start of `text` that comes out as it is, when nothing is held:
    /// every whole line up to the last `\n` that no `\r` or backspace
    /// precedes. The caller uses it without copying, then pushes the rest.
    fn passthrough<'a>(&self, text: &'a str) -> &'a str {
        if !self.line.is_empty() {
            return "";
        }
        let bytes = text.as_bytes();
        let clean = memchr::memchr2(CR, BS, bytes).unwrap_or(bytes.len());
        let end = memchr::memrchr(b'\n', &bytes[..clean]).map_or(0, |i| i + 1);
        &text[..end]
    }

    /// Feeds text; appends to `out` the lines it ends (each with its `\n`),
    /// and a line let out at [`MAX_LINE_BYTES`].
    pub fn push(&mut self, text: &str, out: &mut String) {
        let mut rest = text;
        while !rest.is_empty() {
            if self.line.is_empty() && !has_carriage(rest) {
                // No overwrite ahead: whole lines go out as they are.
                let end = memchr::memrchr(b'\n', rest.as_bytes()).map_or(0, |i| i + 1);
                out.push_str(&rest[..end]);
                self.append(&rest[end..], out);
                return;
            }
            let bytes = rest.as_bytes();
            let end = memchr::memchr3(b'\n', CR, BS, bytes).unwrap_or(rest.len());
            if self.line.is_empty() && bytes.get(end..end + 2) == Some(b"\r\n") {
                // A line ended by `\r\n` (what Windows tools print) over
                // nothing: out as it is, without going through the line.
                out.push_str(&rest[..end]);
                out.push('\n');
                rest = &rest[end + 2..];
                continue;
            }
            self.write(&rest[..end]);
            let Some(&control) = rest.as_bytes().get(end) else {
                self.bound(out);
                return;
            };
            match control {
                b'\n' => {
                    out.push_str(&self.line);
                    out.push('\n');
                    self.line.clear();
                    self.cursor = 0;
                }
                CR => self.cursor = 0,
                _ => self.back(),
            }
            self.bound(out);
            rest = &rest[end + 1..];
        }
    }

    /// Feeds `text` as [`Overwrite::push`] does, without copying the whole
    /// lines in its middle: what comes out is `before` (the held line, ended
    /// by `text`'s first line), then `text[range]` as it is, then `after`.
    /// A chunk of plain lines, cut anywhere, so costs a copy of its first
    /// and last lines only, where `push` copies all of it.
    ///
    /// `plain`: the caller knows `text` holds no `\r` and no backspace (the
    /// sanitizer found the whole read plain), so it is not looked through
    /// for them: only its first and last line breaks are looked for.
    pub fn push_split(
        &mut self,
        text: &str,
        plain: bool,
        before: &mut String,
        after: &mut String,
    ) -> Range<usize> {
        let mut start = 0;
        if !self.line.is_empty() {
            start = memchr::memchr(b'\n', text.as_bytes()).map_or(text.len(), |i| i + 1);
            self.push(&text[..start], before);
        }
        let rest = &text[start..];
        let middle = if plain {
            memchr::memrchr(b'\n', rest.as_bytes()).map_or(0, |i| i + 1)
        } else {
            self.passthrough(rest).len()
        };
        self.push(&rest[middle..], after);
        start..start + middle
    }

    /// The line being written, as it shows now.
    pub fn line(&self) -> &str {
        &self.line
    }

    /// The line being written, for frames that go on from here (an
    /// artifact that starts to spill mid-line): as it shows now, then,
    /// when a `\r` took the cursor back and the frame being written does
    /// not cover it yet, a line break and that frame so far. The frames
    /// before it are not kept; the line shows the last of them.
    pub fn line_as_frames(&self, out: &mut String) {
        out.push_str(&self.line);
        if self.cursor < self.line.len() {
            out.push('\n');
            out.push_str(&self.line[..self.cursor]);
        }
    }

    /// End of the text: the line being written goes out as it is now.
    pub fn finish(&mut self, out: &mut String) {
        out.push_str(&self.line);
        self.line.clear();
        self.cursor = 0;
    }

    /// Text with no control in it, at the end of a line with nothing held.
    fn append(&mut self, text: &str, out: &mut String) {
        self.line.push_str(text);
        self.cursor = self.line.len();
        self.bound(out);
    }

    /// Writes plain characters at the cursor, over what is there.
    fn write(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.cursor == self.line.len() {
            self.line.push_str(text);
            self.cursor = self.line.len();
            return;
        }
        // Overwrite as many characters as `text` has, then append the rest.
        let mut end = (self.cursor + text.len()).min(self.line.len());
        let over = &self.line.as_bytes()[self.cursor..end];
        if !(text.is_ascii() && over.is_ascii()) {
            // Characters of different widths: count them.
            end = self.cursor;
            for _ in text.chars() {
                match self.line[end..].chars().next() {
                    Some(c) => end += c.len_utf8(),
                    None => break,
                }
            }
        }
        self.line.replace_range(self.cursor..end, text);
        self.cursor += text.len();
    }

    /// A backspace: one character back; at the end of the line, that
    /// character is erased.
    fn back(&mut self) {
        let Some(c) = self.line[..self.cursor].chars().next_back() else {
            return;
        };
        let at_end = self.cursor == self.line.len();
        self.cursor -= c.len_utf8();
        if at_end {
            self.line.truncate(self.cursor);
        }
    }

    /// Lets out a line grown past [`MAX_LINE_BYTES`].
    fn bound(&mut self, out: &mut String) {
        if self.line.len() > MAX_LINE_BYTES {
            out.push_str(&self.line);
            self.line.clear();
            self.cursor = 0;
        }
    }
}

/// The terminal's view of a whole text.
pub fn overwrite_text(text: &str) -> String {
    if !has_carriage(text) {
        return text.to_string();
    }
    let mut view = Overwrite::default();
    let mut out = String::with_capacity(text.len());
    view.push(text, &mut out);
    view.finish(&mut out);
    out
}

/// One line per frame, streaming (see the module documentation).
#[derive(Debug, Clone)]
pub struct Frames {
    /// Nothing, or a `\n`, was written last.
    at_line_start: bool,
    /// A `\r` ended the last line: a `\n` next is the same line break.
    absorb_newline: bool,
}

impl Default for Frames {
    fn default() -> Self {
        Frames {
            at_line_start: true,
            absorb_newline: false,
        }
    }
}

impl Frames {
    /// Whether `text` comes out of [`Frames::push`] as it is (the caller
    /// may then skip the copy).
    pub fn unchanged(&self, text: &str) -> bool {
        !self.absorb_newline && !has_carriage(text)
    }

    /// The frames of the next `text`: `text` itself when they are the same
    /// (most text has no `\r`), else written into `buf` (cleared first).
    /// `plain`: the caller knows `text` holds no `\r` and no backspace, so
    /// it is not looked through for them.
    pub fn push<'a>(&mut self, text: &'a str, plain: bool, buf: &'a mut String) -> &'a str {
        if text.is_empty() {
            return text;
        }
        if (plain && !self.absorb_newline) || self.unchanged(text) {
            self.at_line_start = text.ends_with('\n');
            return text;
        }
        buf.clear();
        for c in text.chars() {
            match c {
                '\r' => {
                    if !self.at_line_start {
                        buf.push('\n');
                        self.at_line_start = true;
                        self.absorb_newline = true;
                    }
                }
                '\u{8}' => {}
                '\n' if self.absorb_newline => self.absorb_newline = false,
                c => {
                    buf.push(c);
                    self.at_line_start = c == '\n';
                    self.absorb_newline = false;
                }
            }
        }
        buf
    }

    /// Goes past `text` without writing its frames (while nobody reads
    /// them): the state after it is that of [`Frames::push`], read off the
    /// end of `text`, whatever its length.
    pub fn skip(&mut self, text: &str) {
        let bytes = text.as_bytes();
        // The last character that is not a backspace (they change nothing).
        let Some(last) = bytes.iter().rposition(|&b| b != BS) else {
            return;
        };
        match bytes[last] {
            b'\n' => (self.at_line_start, self.absorb_newline) = (true, false),
            CR => {
                // A run of `\r`s: the first ends a line unless one had just
                // ended; the others find the line start.
                let before = bytes[..last].iter().rposition(|&b| b != BS && b != CR);
                let ended_a_line = match before {
                    Some(i) => bytes[i] != b'\n',
                    None => !self.at_line_start,
                };
                if ended_a_line {
                    self.absorb_newline = true;
                } else if before.is_some() {
                    self.absorb_newline = false;
                }
                self.at_line_start = true;
            }
            _ => (self.at_line_start, self.absorb_newline) = (false, false),
        }
    }
}

/// The frames of a whole text.
pub fn frames_text(text: &str) -> String {
    let mut buf = String::new();
    Frames::default().push(text, false, &mut buf).to_string()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_redrawn_line_is_its_last_frame() {
        assert_eq!(
            overwrite_text("progress 20%\rprogress 40%\rprogress 100%\n"),
            "progress 100%\n"
        );
        let bar: String = (1..=5).map(|i| format!("\rprogress {}%", i * 20)).collect();
        assert_eq!(overwrite_text(&(bar + "\n")), "progress 100%\n");
    }

    #[test]
    fn a_shorter_overwrite_leaves_the_tail_of_the_longer_line() {
        assert_eq!(overwrite_text("downloading 100\rok\n"), "okwnloading 100\n");
        assert_eq!(overwrite_text("abcdef\rXY"), "XYcdef");
    }

    #[test]
    fn cr_lf_is_a_line_break_and_a_cr_at_the_end_changes_nothing() {
        assert_eq!(overwrite_text("a\r\nb\r\n"), "a\nb\n");
        assert_eq!(overwrite_text("end\r"), "end");
        assert_eq!(overwrite_text("\rstart\n"), "start\n");
    }

    #[test]
    fn backspace_takes_the_cursor_back_and_erases_at_the_end() {
        assert_eq!(overwrite_text("abc\u{8}\n"), "ab\n");
        assert_eq!(overwrite_text("abc\u{8}\u{8}X\n"), "aX\n");
        assert_eq!(overwrite_text("\u{8}\u{8}a\n"), "a\n");
        // A spinner: each frame erases the last.
        assert_eq!(overwrite_text("|\u{8}/\u{8}-\u{8}\\\u{8}done\n"), "done\n");
        // Back within the line, after a \r: the next character overwrites.
        assert_eq!(overwrite_text("abc\rab\u{8}X\n"), "aXc\n");
    }

    #[test]
    fn wide_and_multibyte_characters_overwrite_one_for_one() {
        assert_eq!(overwrite_text("ééé\rab\n"), "abé\n");
        assert_eq!(overwrite_text("ab\r€\n"), "€b\n");
        assert_eq!(overwrite_text("😀x\u{8}\u{8}y\n"), "y\n");
    }

    #[test]
    fn a_line_past_the_bound_is_let_out() {
        let long = "x".repeat(MAX_LINE_BYTES + 10);
        let mut view = Overwrite::default();
        let mut out = String::new();
        view.push(&long, &mut out);
        assert_eq!(out.len(), long.len());
        view.push("\rab\n", &mut out);
        assert_eq!(&out[long.len()..], "ab\n");
    }

    #[test]
    fn passthrough_stops_at_a_held_line_or_a_carriage_return() {
        let view = Overwrite::default();
        assert_eq!(view.passthrough("a\nb\nc"), "a\nb\n");
        assert_eq!(view.passthrough("a\nb\rc\n"), "a\n");
        assert_eq!(view.passthrough("abc"), "");
        let mut held = Overwrite::default();
        held.push("x", &mut String::new());
        assert_eq!(held.passthrough("a\n"), "");
    }

    #[test]
    fn frames_are_the_newline_rule() {
        assert_eq!(frames_text("a\r\nb\r\n"), "a\nb\n");
        assert_eq!(frames_text("10%\r50%\r100%\n"), "10%\n50%\n100%\n");
        assert_eq!(frames_text("\rstart"), "start");
        assert_eq!(frames_text("a\r\r\nb"), "a\nb");
        assert_eq!(frames_text("a\n\rb"), "a\nb");
        assert_eq!(frames_text("end\r"), "end\n");
        assert_eq!(frames_text("ab\u{8}c"), "abc");
    }

    fn streamed(text: &str, cuts: &[usize]) -> (String, String) {
        let (mut view, mut frames) = (Overwrite::default(), Frames::default());
        let (mut shown, mut framed) = (String::new(), String::new());
        let mut at = 0;
        for &cut in cuts.iter().chain([&text.len()]) {
            let cut = cut.clamp(at, text.len());
            if !text.is_char_boundary(cut) {
                continue;
            }
            let piece = &text[at..cut];
            let (mut before, mut after) = (String::new(), String::new());
            let plain = !has_carriage(piece);
            let middle = view.push_split(piece, plain, &mut before, &mut after);
            shown.push_str(&before);
            shown.push_str(&piece[middle]);
            shown.push_str(&after);
            framed.push_str(frames.push(piece, plain, &mut String::new()));
            at = cut;
        }
        view.finish(&mut shown);
        (shown, framed)
    }

    /// Every text of up to `n` characters of `a`, `\r`, `\n` and a backspace.
    fn all_texts(n: usize) -> Vec<String> {
        let mut texts = vec![String::new()];
        for len in 1..=n {
            for i in 0..4usize.pow(len as u32) {
                let text = (0..len)
                    .map(|k| ['a', '\r', '\n', '\u{8}'][i / 4usize.pow(k as u32) % 4])
                    .collect();
                texts.push(text);
            }
        }
        texts
    }

    /// Skipping text leaves the frames where writing them would (a spill
    /// that opens later goes on from the same state): every pair of short
    /// texts, the first to set the state before.
    #[test]
    fn skipping_frames_ends_where_writing_them_does() {
        let texts = all_texts(4);
        for before in &texts {
            for text in &texts {
                let mut written = Frames::default();
                written.push(before, false, &mut String::new());
                let mut skipped = written.clone();
                written.push(text, false, &mut String::new());
                skipped.skip(text);
                assert_eq!(
                    (skipped.at_line_start, skipped.absorb_newline),
                    (written.at_line_start, written.absorb_newline),
                    "{before:?} then {text:?}"
                );
            }
        }
    }

    proptest! {
        /// Whatever the chunk boundaries, the same text.
        #[test]
        fn chunking_changes_nothing(
            text in "[ab\\r\\n\u{8}é€😀]{0,40}",
            mut cuts in proptest::collection::vec(0usize..200, 0..8),
        ) {
            cuts.sort();
            let (shown, framed) = streamed(&text, &cuts);
            prop_assert_eq!(shown, overwrite_text(&text));
            prop_assert_eq!(framed, frames_text(&text));
        }

        /// The frames rule is the sanitizer's own `\r` rule.
        #[test]
        fn frames_agree_with_the_newline_sanitizer(text in "[ab\\r\\n\u{8}]{0,40}") {
            prop_assert_eq!(frames_text(&text), crate::sanitize_text(&text));
        }
    }
}
