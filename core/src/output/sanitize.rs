//! Turns raw command output into plain text a model can read.
//!
//! Output arrives in arbitrary chunks, so every step is a streaming state
//! machine: a UTF-8 sequence or an escape sequence split across two reads is
//! handled exactly as if it had arrived whole (the reference sanitized each
//! chunk on its own and leaked `[31m` when a color code was split).
//!
//! What it does, in order:
//! - decodes UTF-8; each invalid sequence becomes one U+FFFD, by the same
//!   maximal-subpart rule as [`String::from_utf8_lossy`];
//! - removes escape sequences: CSI (`ESC [` or U+009B, parameters 0x20–0x3F,
//!   final byte 0x40–0x7E), OSC (`ESC ]` … BEL or ST), DCS/SOS/PM/APC
//!   (`ESC P`/`X`/`^`/`_` … ST or BEL), `ESC` + intermediates 0x20–0x2F + a
//!   final 0x30–0x7E, and two-byte `ESC` 0x30–0x7E. ST is `ESC \` or U+009C;
//!   CAN and SUB abort a sequence. A character that cannot belong to the
//!   sequence it interrupts ends it and is then handled as ordinary text, so
//!   a stray `ESC [` never swallows the lines after it; an unterminated
//!   sequence is dropped once it passes [`MAX_SEQUENCE_BYTES`] (the text after
//!   that point shows again) or at the end of the stream;
//! - removes C0 controls except `\n` and `\t`, DEL and the C1 controls
//!   U+0080–U+009F;
//! - turns carriage returns into line breaks, as a terminal would show them:
//!   `\r` ends the current line (so progress bars become one line per update),
//!   a `\n` right after it is absorbed (`\r\n` and `\r\r\n` give one `\n`), and
//!   a `\r` at the start of a line does nothing. Removed sequences and
//!   controls in between do not count.

use super::scan::find_special;

/// Longest escape sequence (in bytes, `ESC` included) that is followed to its
/// end. Past it the sequence is dropped and the text after it is shown again,
/// so one stray `ESC ]` cannot hide the rest of a command's output. Memory does
/// not depend on it: sequences are skipped, never buffered.
pub const MAX_SEQUENCE_BYTES: usize = 4096;

const ESC: u8 = 0x1B;
const BEL: u8 = 0x07;
const CAN: u8 = 0x18;
const SUB: u8 = 0x1A;

/// Where the escape-sequence parser is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Ordinary text.
    Ground,
    /// After `ESC`.
    Escape,
    /// After `ESC` and one or more intermediate bytes (0x20–0x2F).
    EscapeIntermediate,
    /// Inside a control sequence (`ESC [` or U+009B).
    Csi,
    /// Inside a string (OSC, DCS, SOS, PM, APC), until ST or BEL.
    String,
    /// After an `ESC` inside a string: `\` ends it, anything else ends it and
    /// starts a new escape sequence.
    StringEscape,
}

/// Streaming sanitizer: feed it raw bytes in any chunking, get the same text.
///
/// State is a few bytes whatever the input: an incomplete UTF-8 sequence (at
/// most 3 bytes), the parser state and two line flags.
#[derive(Debug, Clone)]
pub struct Sanitizer {
    /// Start of an incomplete UTF-8 sequence from the previous push.
    pending: [u8; 4],
    pending_len: usize,
    state: State,
    /// Bytes of the current escape sequence so far.
    sequence_len: usize,
    /// The text emitted so far ends at a line start (or nothing was emitted).
    at_line_start: bool,
    /// A `\r` just ended a line: a `\n` arriving next is the same line break.
    absorb_newline: bool,
}

impl Default for Sanitizer {
    fn default() -> Self {
        Self::new()
    }
}

impl Sanitizer {
    pub fn new() -> Self {
        Sanitizer {
            pending: [0; 4],
            pending_len: 0,
            state: State::Ground,
            sequence_len: 0,
            at_line_start: true,
            absorb_newline: false,
        }
    }

    /// Feeds raw bytes; appends sanitized UTF-8 to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut String) {
        let mut rest = if self.pending_len > 0 {
            self.complete_pending(bytes, out)
        } else {
            bytes
        };
        while !rest.is_empty() {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    self.feed(text, out);
                    return;
                }
                Err(error) => {
                    let (valid, invalid) = rest.split_at(error.valid_up_to());
                    // The prefix was just validated; this cannot fail.
                    if let Ok(text) = std::str::from_utf8(valid) {
                        self.feed(text, out);
                    }
                    match error.error_len() {
                        Some(len) => {
                            self.feed("\u{FFFD}", out);
                            rest = &invalid[len..];
                        }
                        None => {
                            // An incomplete sequence ends the input: keep it.
                            self.pending[..invalid.len()].copy_from_slice(invalid);
                            self.pending_len = invalid.len();
                            return;
                        }
                    }
                }
            }
        }
    }

    /// End of stream: an incomplete UTF-8 sequence becomes U+FFFD and an
    /// unterminated escape sequence is dropped. The sanitizer is then as new.
    pub fn finish(&mut self, out: &mut String) {
        if self.pending_len > 0 {
            self.pending_len = 0;
            self.feed("\u{FFFD}", out);
        }
        *self = Sanitizer::new();
    }

    /// Completes the UTF-8 sequence left over from the previous push with the
    /// first bytes of `bytes`; returns the bytes not used.
    fn complete_pending<'a>(&mut self, bytes: &'a [u8], out: &mut String) -> &'a [u8] {
        let held = self.pending_len;
        let take = (4 - held).min(bytes.len());
        let mut joined = [0u8; 8];
        joined[..held].copy_from_slice(&self.pending[..held]);
        joined[held..held + take].copy_from_slice(&bytes[..take]);
        let joined = &joined[..held + take];
        let used = match std::str::from_utf8(joined) {
            Ok(_) => joined.len(),
            Err(error) if error.valid_up_to() > 0 => error.valid_up_to(),
            Err(error) => match error.error_len() {
                Some(len) => {
                    self.pending_len = 0;
                    self.feed("\u{FFFD}", out);
                    return &bytes[len.saturating_sub(held)..];
                }
                None => {
                    // Still incomplete: every byte given belongs to it.
                    self.pending[..joined.len()].copy_from_slice(joined);
                    self.pending_len = joined.len();
                    return &[];
                }
            },
        };
        self.pending_len = 0;
        if let Ok(text) = std::str::from_utf8(&joined[..used]) {
            self.feed(text, out);
        }
        &bytes[used - held..]
    }

    /// Runs valid text through the escape parser and line rules.
    fn feed(&mut self, text: &str, out: &mut String) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if self.state == State::Ground {
                i = self.ground(text, i, out);
                continue;
            }
            // `text` is valid UTF-8 and the parser only stops at character
            // boundaries, so `bytes[i]` starts a character here.
            if self.sequence_len >= MAX_SEQUENCE_BYTES {
                self.state = State::Ground;
                continue;
            }
            let used = self.sequence_step(&bytes[i..]);
            if used == 0 {
                // Not part of the sequence: dropped, read again as text.
                self.state = State::Ground;
            }
            self.sequence_len += used;
            i += used;
        }
    }

    /// Plain text from `i`: copies the run up to the next special byte in
    /// bulk, then handles that byte. Returns the next index.
    fn ground(&mut self, text: &str, i: usize, out: &mut String) -> usize {
        let bytes = text.as_bytes();
        let end = find_special(bytes, i);
        if end > i {
            let mut start = i;
            if self.absorb_newline {
                self.absorb_newline = false;
                if bytes[start] == b'\n' {
                    start += 1;
                }
            }
            if end > start {
                out.push_str(&text[start..end]);
                self.at_line_start = bytes[end - 1] == b'\n';
            }
            return end;
        }
        match bytes[i] {
            ESC => self.begin_sequence(State::Escape, 1),
            // A `\r` at a line start does nothing.
            b'\r' if !self.at_line_start => {
                out.push('\n');
                self.at_line_start = true;
                self.absorb_newline = true;
            }
            0xC2 => {
                // A C1 control (find_special skips printable U+00A0–U+00BF).
                if bytes.get(i + 1) == Some(&0x9B) {
                    self.begin_sequence(State::Csi, 2);
                }
                return i + 2;
            }
            _ => {} // other C0 controls, DEL, `\r` at a line start
        }
        i + 1
    }

    fn begin_sequence(&mut self, state: State, len: usize) {
        self.state = state;
        self.sequence_len = len;
    }

    /// Advances the escape parser over the character at the start of `rest`.
    /// Returns the bytes it consumed: the whole character, or 0 when the
    /// character cannot belong to the sequence (the caller drops the sequence
    /// and reads the character as text).
    fn sequence_step(&mut self, rest: &[u8]) -> usize {
        let b = rest[0];
        let width = utf8_width(b);
        let next = match self.state {
            State::Ground => return 0,
            State::Escape => match b {
                b'[' => State::Csi,
                b']' | b'P' | b'X' | b'^' | b'_' => State::String,
                0x20..=0x2F => State::EscapeIntermediate,
                0x30..=0x7E | CAN | SUB => State::Ground,
                ESC => return self.restart(),
                _ => return 0,
            },
            State::EscapeIntermediate => match b {
                0x20..=0x2F => State::EscapeIntermediate,
                0x30..=0x7E | CAN | SUB => State::Ground,
                ESC => return self.restart(),
                _ => return 0,
            },
            State::Csi => match b {
                0x20..=0x3F => State::Csi,
                0x40..=0x7E | CAN | SUB => State::Ground,
                ESC => return self.restart(),
                _ => return 0,
            },
            State::String => match b {
                BEL | CAN | SUB => State::Ground,
                ESC => State::StringEscape,
                0xC2 if rest.get(1) == Some(&0x9C) => State::Ground, // U+009C, ST
                _ => State::String,
            },
            State::StringEscape => {
                if b == b'\\' {
                    State::Ground
                } else {
                    // The string ended at that `ESC`, which starts a new
                    // sequence: this character is its second one.
                    self.begin_sequence(State::Escape, 1);
                    return self.sequence_step(rest);
                }
            }
        };
        self.state = next;
        width
    }

    /// An `ESC` inside a sequence drops it and starts a new one.
    fn restart(&mut self) -> usize {
        self.begin_sequence(State::Escape, 0);
        1
    }
}

/// Length of the UTF-8 character whose first byte is `b` (1 for ASCII and,
/// harmlessly, for bytes that cannot start a character).
fn utf8_width(b: u8) -> usize {
    match b {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

/// Sanitizes a whole text at once (the one-shot form of [`Sanitizer`]).
pub fn sanitize_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut sanitizer = Sanitizer::new();
    sanitizer.push(text.as_bytes(), &mut out);
    sanitizer.finish(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunked(chunks: &[&[u8]]) -> String {
        let mut out = String::new();
        let mut s = Sanitizer::new();
        for chunk in chunks {
            s.push(chunk, &mut out);
        }
        s.finish(&mut out);
        out
    }

    #[test]
    fn strips_escape_sequences() {
        assert_eq!(sanitize_text("\x1b[1;31mred\x1b[0m ok"), "red ok");
        assert_eq!(sanitize_text("a\x1b]0;title\x07b"), "ab");
        assert_eq!(
            sanitize_text("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b"),
            "alinkb"
        );
        assert_eq!(sanitize_text("a\x1bP1$r0m\x1b\\b"), "ab");
        assert_eq!(sanitize_text("a\x1b(Bb\x1b7c\x1b=d"), "abcd");
        assert_eq!(sanitize_text("a\u{9b}2Kb"), "ab");
        assert_eq!(sanitize_text("a\x1b]2;t\u{9c}b"), "ab");
    }

    #[test]
    fn removes_controls_and_keeps_tabs_newlines_and_text() {
        assert_eq!(
            sanitize_text("a\x00b\x07c\x7fd\u{85}e\tf\ng"),
            "abcde\tf\ng"
        );
        assert_eq!(sanitize_text("°±µ é 中文 😀"), "°±µ é 中文 😀");
    }

    #[test]
    fn carriage_returns_become_line_breaks() {
        assert_eq!(sanitize_text("a\r\nb\r\n"), "a\nb\n");
        assert_eq!(sanitize_text("10%\r50%\r100%\n"), "10%\n50%\n100%\n");
        assert_eq!(sanitize_text("\rstart"), "start");
        assert_eq!(sanitize_text("a\r\r\nb"), "a\nb");
        assert_eq!(sanitize_text("a\n\rb"), "a\nb");
        assert_eq!(sanitize_text("a\r\n\r\nb"), "a\n\nb");
        assert_eq!(sanitize_text("a\r\x1b[K\nb"), "a\nb");
        assert_eq!(sanitize_text("end\r"), "end\n");
    }

    #[test]
    fn interrupted_sequences_do_not_swallow_text() {
        assert_eq!(sanitize_text("a\x1b[12\nnext"), "a\nnext");
        assert_eq!(sanitize_text("a\x1b[1é"), "aé");
        assert_eq!(sanitize_text("a\x1b]0;t\x1b[31mb"), "ab");
        assert_eq!(sanitize_text("a\x1b]0;unterminated"), "a");
        let long = format!("a\x1b]{}", "x".repeat(MAX_SEQUENCE_BYTES * 2));
        assert_eq!(
            sanitize_text(&long),
            format!("a{}", "x".repeat(MAX_SEQUENCE_BYTES + 2))
        );
    }

    #[test]
    fn invalid_utf8_matches_lossy_decoding() {
        let input: &[u8] = b"a\xffb\xe2\x82c\xed\xa0\x80d\xf0\x9f\x98";
        let expected = String::from_utf8_lossy(input).into_owned();
        assert_eq!(chunked(&[input]), expected);
    }

    #[test]
    fn every_split_gives_the_same_text() {
        let text = "x\x1b[1;31mé€😀\r\n\x1b]0;t\x1b\\y\u{9b}1mz\r\x1bP..\x07w";
        let input = &[text.as_bytes(), b"\xff\xe2\x82!\xf0\x9f"].concat()[..];
        let whole = chunked(&[input]);
        for cut in 0..input.len() {
            let (a, b) = input.split_at(cut);
            assert_eq!(chunked(&[a, b]), whole, "split at {cut}");
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(chunked(&bytes), whole);
    }
}
