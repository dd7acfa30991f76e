//! Turns raw command output into plain text a model can read.
//!
//! Output arrives in arbitrary chunks, so every step is a streaming state
//! machine: a UTF-8 sequence or an escape sequence split across two reads is
//! handled exactly as if it had arrived whole (sanitizing each chunk on its
//! own would leak `[31m` when a color code is split between two reads).
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
//! - removes C0 controls except `\n` and `\t`, DEL, the C1 controls
//!   U+0080–U+009F and the bidirectional controls (U+202A–U+202E,
//!   U+2066–U+2069);
//! - turns carriage returns into line breaks, one line per frame (a
//!   sanitizer made with [`Sanitizer::keeping_carriage`] keeps them, and
//!   backspaces, for [`super::carriage`] to show as a terminal would, but
//!   for the `\r` of a `\r\n` read in one push: a line break either way):
//!   `\r` ends the current line (so progress bars become one line per update),
//!   a `\n` right after it is absorbed (`\r\n` and `\r\r\n` give one `\n`), and
//!   a `\r` at the start of a line does nothing. Removed sequences and
//!   controls in between do not count.
//!
//! Speed: a command may print gigabytes, so decoding and sanitizing are one
//! pass. Runs of plain text (printable ASCII, `\t`, `\n`, valid non-C1
//! characters) are found by a block scan that validates non-ASCII characters
//! as it meets them and are copied in bulk; whole color codes are skipped in
//! place; only the rest goes through the character-by-character machine.

use super::scan::plain_ascii_end;
use super::utf8::{Decoded, decode};

/// Longest escape sequence (in bytes, `ESC` included) that is followed to its
/// end. Past it the sequence is dropped and the text after it is shown again,
/// so one stray `ESC ]` cannot hide the rest of a command's output. Memory does
/// not depend on it: sequences are skipped, never buffered.
pub const MAX_SEQUENCE_BYTES: usize = 4096;

const ESC: u8 = 0x1B;
const BEL: u8 = 0x07;
const CAN: u8 = 0x18;
const SUB: u8 = 0x1A;
const BS: u8 = 0x08;

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
    /// Bytes of the current escape sequence so far (as decoded text: an
    /// invalid sequence counts as the 3 bytes of U+FFFD).
    sequence_len: usize,
    /// The text emitted so far ends at a line start (or nothing was emitted).
    at_line_start: bool,
    /// A `\r` just ended a line: a `\n` arriving next is the same line break.
    absorb_newline: bool,
    /// `\r` and backspaces are kept as they are, for a later stage
    /// ([`super::carriage`]) to apply.
    keep_carriage: bool,
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
            keep_carriage: false,
        }
    }

    /// A sanitizer that keeps `\r` and backspaces in the text (every other
    /// control it removes as always), for [`super::carriage`]'s views.
    pub fn keeping_carriage() -> Self {
        Sanitizer {
            keep_carriage: true,
            ..Sanitizer::new()
        }
    }

    /// Feeds raw bytes; appends sanitized UTF-8 to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut String) {
        let mut i = 0;
        if self.pending_len > 0 {
            i = self.complete_pending(bytes, out);
        }
        self.run(bytes, i, out);
    }

    /// The longest start of `bytes` that is already plain text, taken as
    /// pushed (the line state moves past it) without being copied: most
    /// output (a build log, a `cat` of a source file) is plain from end to
    /// end, and a gigabyte of it need not be copied once more. Empty when
    /// the previous push left a character, an escape sequence or a `\r`
    /// open. Push the rest of `bytes` next.
    pub fn plain_prefix<'a>(&mut self, bytes: &'a [u8]) -> &'a str {
        if self.pending_len > 0 || self.state != State::Ground || self.absorb_newline {
            return "";
        }
        let end = plain_run_end(bytes, 0);
        if end > 0 {
            self.at_line_start = bytes[end - 1] == b'\n';
        }
        // SAFETY: `plain_run_end` ends runs only after whole characters
        // that `decode` accepted (or plain ASCII): valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(&bytes[..end]) }
    }

    /// End of stream: an incomplete UTF-8 sequence becomes U+FFFD and an
    /// unterminated escape sequence is dropped. The sanitizer is then as new.
    pub fn finish(&mut self, out: &mut String) {
        if self.pending_len > 0 {
            self.pending_len = 0;
            self.run(REPLACEMENT.as_bytes(), 0, out);
        }
        *self = Sanitizer {
            keep_carriage: self.keep_carriage,
            ..Sanitizer::new()
        };
    }

    /// Processes `bytes[i..]`; an incomplete character at the end is kept.
    fn run(&mut self, bytes: &[u8], mut i: usize, out: &mut String) {
        while i < bytes.len() {
            i = if self.state == State::Ground {
                self.ground(bytes, i, out)
            } else {
                self.sequence(bytes, i)
            };
        }
    }

    /// Completes the character left over from the previous push with the
    /// first bytes of `bytes` and processes it; returns how many bytes of
    /// `bytes` it used.
    fn complete_pending(&mut self, bytes: &[u8], out: &mut String) -> usize {
        let held = self.pending_len;
        let take = (4 - held).min(bytes.len());
        let mut joined = [0u8; 4];
        joined[..held].copy_from_slice(&self.pending[..held]);
        joined[held..held + take].copy_from_slice(&bytes[..take]);
        let joined = &joined[..held + take];
        self.pending_len = 0;
        match decode(joined) {
            Decoded::Char(width) => {
                self.run(&joined[..width], 0, out);
                width - held
            }
            Decoded::Invalid(len) => {
                self.run(REPLACEMENT.as_bytes(), 0, out);
                // The held bytes were a valid start, so the invalid part
                // reaches into `bytes`.
                len.saturating_sub(held)
            }
            Decoded::Incomplete => {
                self.hold(joined);
                bytes.len()
            }
        }
    }

    /// Keeps an incomplete character for the next push.
    fn hold(&mut self, bytes: &[u8]) {
        self.pending[..bytes.len()].copy_from_slice(bytes);
        self.pending_len = bytes.len();
    }

    /// Plain text from `i`: copies runs of plain characters in bulk and
    /// handles what ends them, until an escape sequence needs the state
    /// machine or the input ends. Returns the next index.
    fn ground(&mut self, bytes: &[u8], mut i: usize, out: &mut String) -> usize {
        while i < bytes.len() {
            let end = plain_run_end(bytes, i);
            if end > i {
                self.emit_run(bytes, i, end, out);
                i = end;
                if i == bytes.len() {
                    break;
                }
            }
            match bytes[i] {
                ESC => {
                    if let Some(end) = complete_csi(bytes, i) {
                        i = end;
                        continue;
                    }
                    self.begin_sequence(State::Escape, 1);
                    return i + 1;
                }
                // `\r\n` is a line break in both of the carriage's views:
                // its `\r` goes, so that they find plain lines (one cut
                // between the two is theirs to read).
                b'\r' if self.keep_carriage && bytes.get(i + 1) == Some(&b'\n') => i += 1,
                b'\r' | BS if self.keep_carriage => {
                    out.push(char::from(bytes[i]));
                    self.at_line_start = false;
                    i += 1;
                }
                // A `\r` at a line start does nothing.
                b'\r' if !self.at_line_start => {
                    out.push('\n');
                    self.at_line_start = true;
                    self.absorb_newline = true;
                    i += 1;
                }
                // Other C0 controls, DEL, a `\r` at a line start.
                0x00..=0x7F => i += 1,
                _ => match decode(&bytes[i..]) {
                    Decoded::Char(width) => {
                        // plain_run_end stops at no other character.
                        debug_assert!(is_removed(bytes, i));
                        if is_c1(bytes, i) && bytes[i + 1] == 0x9B {
                            self.begin_sequence(State::Csi, 2);
                            return i + 2;
                        }
                        i += width;
                    }
                    Decoded::Invalid(len) => {
                        self.emit_text(REPLACEMENT, out);
                        i += len;
                    }
                    Decoded::Incomplete => {
                        self.hold(&bytes[i..]);
                        return bytes.len();
                    }
                },
            }
        }
        i
    }

    /// Appends the plain characters `bytes[start..end]`, minding a `\n` to
    /// absorb after a `\r`.
    fn emit_run(&mut self, bytes: &[u8], mut start: usize, end: usize, out: &mut String) {
        if self.absorb_newline {
            self.absorb_newline = false;
            if bytes[start] == b'\n' {
                start += 1;
            }
        }
        if end > start {
            let run = &bytes[start..end];
            debug_assert!(std::str::from_utf8(run).is_ok());
            // SAFETY: `plain_run_end` ends runs only after whole characters
            // that `decode` accepted (or plain ASCII), and `start` is where a
            // run began or one past an ASCII `\n`: `run` is valid UTF-8.
            out.push_str(unsafe { std::str::from_utf8_unchecked(run) });
            self.at_line_start = bytes[end - 1] == b'\n';
        }
    }

    /// Appends one printable, non-newline text.
    fn emit_text(&mut self, text: &str, out: &mut String) {
        out.push_str(text);
        self.at_line_start = false;
        self.absorb_newline = false;
    }

    /// Inside an escape sequence: advances over the character at `i`.
    /// Returns the next index (`i` itself when the character ends the
    /// sequence and must be read again as text).
    fn sequence(&mut self, bytes: &[u8], i: usize) -> usize {
        if self.sequence_len >= MAX_SEQUENCE_BYTES {
            self.state = State::Ground;
            return i;
        }
        // An invalid sequence reads as U+FFFD here too, so the length limit
        // counts the same bytes as for the decoded text.
        let (character, len) = match decode(&bytes[i..]) {
            Decoded::Char(width) => (&bytes[i..i + width], width),
            Decoded::Invalid(len) => (REPLACEMENT.as_bytes(), len),
            Decoded::Incomplete => {
                self.hold(&bytes[i..]);
                return bytes.len();
            }
        };
        if self.sequence_step(character) {
            self.sequence_len += character.len();
            i + len
        } else {
            // Not part of the sequence: dropped, read again as text.
            self.state = State::Ground;
            i
        }
    }

    fn begin_sequence(&mut self, state: State, len: usize) {
        self.state = state;
        self.sequence_len = len;
    }

    /// Advances the escape parser over one whole `character`. Returns false
    /// when it cannot belong to the sequence (the caller drops the sequence
    /// and reads the character as text).
    fn sequence_step(&mut self, character: &[u8]) -> bool {
        let b = character[0];
        let next = match self.state {
            State::Ground => return false,
            State::Escape => match b {
                b'[' => State::Csi,
                b']' | b'P' | b'X' | b'^' | b'_' => State::String,
                0x20..=0x2F => State::EscapeIntermediate,
                0x30..=0x7E | CAN | SUB => State::Ground,
                ESC => return self.restart(),
                _ => return false,
            },
            State::EscapeIntermediate => match b {
                0x20..=0x2F => State::EscapeIntermediate,
                0x30..=0x7E | CAN | SUB => State::Ground,
                ESC => return self.restart(),
                _ => return false,
            },
            State::Csi => match b {
                0x20..=0x3F => State::Csi,
                0x40..=0x7E | CAN | SUB => State::Ground,
                ESC => return self.restart(),
                _ => return false,
            },
            State::String => match character {
                [BEL | CAN | SUB] => State::Ground,
                [ESC] => State::StringEscape,
                [0xC2, 0x9C] => State::Ground, // U+009C, ST
                _ => State::String,
            },
            State::StringEscape => {
                if b == b'\\' {
                    State::Ground
                } else {
                    // The string ended at that `ESC`, which starts a new
                    // sequence: this character is its second one.
                    self.begin_sequence(State::Escape, 1);
                    return self.sequence_step(character);
                }
            }
        };
        self.state = next;
        true
    }

    /// An `ESC` inside a sequence drops it and starts a new one.
    fn restart(&mut self) -> bool {
        self.begin_sequence(State::Escape, 0);
        true
    }
}

const REPLACEMENT: &str = "\u{FFFD}";

/// End of the run of plain characters starting at `i`: printable ASCII,
/// `\t`, `\n` and every valid non-ASCII character except the C1 controls.
#[inline]
fn plain_run_end(bytes: &[u8], mut i: usize) -> usize {
    loop {
        i = plain_ascii_end(bytes, i);
        match bytes.get(i) {
            Some(&b) if b >= 0x80 => match decode(&bytes[i..]) {
                Decoded::Char(width) if !is_removed(bytes, i) => i += width,
                _ => return i,
            },
            _ => return i,
        }
    }
}

/// Whether the (valid) character at `i` is one the sanitizer removes: a
/// C1 control, or a bidirectional control.
#[inline(always)]
fn is_removed(bytes: &[u8], i: usize) -> bool {
    is_c1(bytes, i) || is_bidi_control(bytes, i)
}

/// Whether a bidirectional embedding, override or isolate control starts
/// at `i`: U+202A–U+202E (`E2 80 AA`–`E2 80 AE`) and U+2066–U+2069
/// (`E2 81 A6`–`E2 81 A9`). They reorder how the text after them is
/// displayed, so what a person reviewing a transcript sees differs from
/// what the model read (`U+202E` turns `exe.txt` into `txt.exe`).
#[inline(always)]
fn is_bidi_control(bytes: &[u8], i: usize) -> bool {
    bytes[i] == 0xE2
        && match (bytes.get(i + 1), bytes.get(i + 2)) {
            (Some(0x80), Some(&b)) => (0xAA..=0xAE).contains(&b),
            (Some(0x81), Some(&b)) => (0xA6..=0xA9).contains(&b),
            _ => false,
        }
}

/// Whether a C1 control (U+0080–U+009F, encoded `C2 80`–`C2 9F`) starts at `i`.
#[inline(always)]
fn is_c1(bytes: &[u8], i: usize) -> bool {
    bytes[i] == 0xC2 && bytes.get(i + 1).is_some_and(|&b| b < 0xA0)
}

/// Fast path for the commonest sequence, a color code: when `bytes[esc..]`
/// holds a whole `ESC [` … final-byte sequence within the length limit,
/// returns the index after it. Anything else (a sequence cut by the end of
/// the chunk, other kinds, malformed ones) is left to the state machine,
/// which gives the same result character by character.
#[inline(always)]
fn complete_csi(bytes: &[u8], esc: usize) -> Option<usize> {
    if bytes.get(esc + 1) != Some(&b'[') {
        return None;
    }
    let window = &bytes[esc + 2..bytes.len().min(esc + MAX_SEQUENCE_BYTES)];
    let params = window.iter().position(|b| !(0x20..=0x3F).contains(b))?;
    (0x40..=0x7E)
        .contains(&window[params])
        .then_some(esc + 2 + params + 1)
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
    fn keeping_carriage_leaves_cr_and_backspace_for_the_next_stage() {
        let mut s = Sanitizer::keeping_carriage();
        let mut out = String::new();
        s.push(b"a\x1b[31mb\rc\x08d\x07\r\n", &mut out);
        s.finish(&mut out);
        // A `\r\n` is a plain line break for both views.
        assert_eq!(out, "ab\rc\x08d\n");
        // Still keeping after a finish.
        s.push(b"x\ry", &mut out);
        assert!(out.ends_with("x\ry"), "{out:?}");
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
    fn plain_prefix_is_taken_as_pushed() {
        let input = "plain é\nline\r\nx\x1b[1mbold".as_bytes();
        for cut in 0..input.len() {
            let (a, b) = input.split_at(cut);
            let mut s = Sanitizer::new();
            let mut out = String::new();
            for part in [a, b] {
                let plain = s.plain_prefix(part);
                out.push_str(plain);
                s.push(&part[plain.len()..], &mut out);
            }
            s.finish(&mut out);
            assert_eq!(out, "plain é\nline\nxbold", "split at {cut}");
        }
        let mut s = Sanitizer::new();
        assert_eq!(s.plain_prefix(b"ok\n\x1b[0m"), "ok\n");
        assert_eq!(s.plain_prefix("é".as_bytes()[..1].as_ref()), "");
        s.push(b"end\r", &mut String::new());
        assert_eq!(
            s.plain_prefix(b"\nnext"),
            "",
            "a \\n to absorb is not plain"
        );
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
