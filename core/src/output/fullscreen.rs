//! Signs, in a command's raw output, that it runs a full-screen program
//! without a terminal (docs/behaviour.md, section 9, "Programs that need a
//! terminal"): the switch to the alternate screen, and the lines editors
//! print when they find no terminal. What to make of a sign (look whether
//! the program waits for keys it cannot get, then stop it) is
//! `process::no_terminal`'s.
//!
//! The scan is on the output's hot path, before the sanitizer, and costs
//! little there:
//!
//! - the alternate screen (`ESC [ ? Pm h` with 47, 1047 or 1049 among the
//!   parameters) is looked for with one `memchr` pass over each chunk for
//!   its `?` (SIMD; a byte rare in text and absent from colors: plain and
//!   colored text go by at about 60 GB/s, a fifth of the time the
//!   sanitizer takes on plain ASCII, its fastest case), then the `ESC [`
//!   before it;
//!   only a private-mode sequence is parsed. A sequence cut between two
//!   chunks is kept (up to [`PENDING_MAX`] bytes) and finished with the
//!   next one;
//! - the messages are looked for only at the end of what arrived so far
//!   (its last [`WINDOW`] bytes, copied at each push): each is the last
//!   thing its program prints before it waits (Vim shows its warnings for
//!   two seconds) or quits (nano), so it ends a read, whatever the chunks.
//!   A test of the window's last bytes (`terminal`, `tty`) comes first.
//!   A quitting program's message is also found inside the window when
//!   more output came with it in one read (the reader ran late), on its
//!   line right after the escape sequence it quits with.
//!
//! Once a sign is seen, the alternate screen is no longer looked for, and
//! once a program said it quits, nothing more is.

use std::time::Instant;

/// What the output showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sign {
    /// The output switched to the alternate screen: a program drew a
    /// screen, and most likely waits for keys.
    AltScreen,
    /// A program warned that it has no terminal and went on (Vim): the
    /// name it is known by.
    Warned(&'static str),
    /// A program said it cannot run without a terminal and quits (nano):
    /// the name it is known by.
    GaveUp(&'static str),
}

impl Sign {
    /// The name of the program the sign comes from, when the sign says.
    pub(crate) fn program(self) -> Option<&'static str> {
        match self {
            Sign::AltScreen => None,
            Sign::Warned(name) | Sign::GaveUp(name) => Some(name),
        }
    }
}

/// The lines programs print when they find no terminal, each ending what
/// arrived when it is seen (before a line break).
const MESSAGES: &[(&[u8], Sign)] = &[
    (
        b"Vim: Warning: Output is not to a terminal",
        Sign::Warned("vim"),
    ),
    (
        b"Vim: Warning: Input is not from a terminal",
        Sign::Warned("vim"),
    ),
    (b"Standard input is not a terminal", Sign::GaveUp("nano")),
    (b"emacs: standard input is not a tty", Sign::GaveUp("emacs")),
];

/// The last bytes of the stream kept to find a message in: longer than
/// the longest message, its line break and what may precede it on its line
/// (an escape sequence).
const WINDOW: usize = 96;

/// The longest private-mode sequence kept across two chunks; a longer one
/// cut there is not looked at.
const PENDING_MAX: usize = 32;

/// The alternate screen's private modes.
const ALT_SCREEN_MODES: [&[u8]; 3] = [b"47", b"1047", b"1049"];

/// The scan of one stream. Feed it every raw chunk, in order.
#[derive(Debug)]
pub(crate) struct Signs {
    found: Option<Sign>,
    /// When output last arrived, once a sign was seen.
    last_output: Option<Instant>,
    /// The end of the stream so far (`window[..window_len]`).
    window: [u8; WINDOW],
    window_len: usize,
    /// All of the stream fits in the window: its start is the stream's.
    whole: bool,
    /// The start of a private-mode sequence the last chunk ended in.
    pending: [u8; PENDING_MAX],
    pending_len: usize,
}

impl Default for Signs {
    fn default() -> Self {
        Signs {
            found: None,
            last_output: None,
            window: [0; WINDOW],
            window_len: 0,
            whole: true,
            pending: [0; PENDING_MAX],
            pending_len: 0,
        }
    }
}

impl Signs {
    /// The sign seen, if any: a program that gave up wins over the others.
    pub(crate) fn found(&self) -> Option<Sign> {
        self.found
    }

    /// When output last arrived after a sign was seen.
    pub(crate) fn last_output(&self) -> Option<Instant> {
        self.last_output
    }

    /// Takes over the sign `earlier` (the scan of the stream before this
    /// one's start) saw, when this one saw none.
    pub(crate) fn carry_over(&mut self, earlier: &Signs) {
        if self.found.is_none() && earlier.found.is_some() {
            self.found = earlier.found;
            self.last_output = self.last_output.max(earlier.last_output);
        }
    }

    /// Looks at the next chunk of the raw stream.
    #[inline]
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        match self.found {
            Some(Sign::GaveUp(_)) => return,
            Some(_) => self.last_output = Some(Instant::now()),
            None => self.scan_alt_screen(bytes),
        }
        self.slide_window(bytes);
        if let Some(sign) = self.message_at_end().or_else(|| self.quit_before_more()) {
            self.saw(sign);
        }
    }

    fn saw(&mut self, sign: Sign) {
        if self.found.is_none() || matches!(sign, Sign::GaveUp(_)) {
            self.found = Some(sign);
            self.last_output = Some(Instant::now());
        }
    }

    fn scan_alt_screen(&mut self, bytes: &[u8]) {
        let mut from = 0;
        if self.pending_len > 0 {
            from = self.finish_pending(bytes);
        }
        // By its `?`, rare in text and absent from colors.
        for at in memchr::memchr_iter(b'?', &bytes[from..]) {
            let Some(start) = (from + at).checked_sub(2) else {
                continue;
            };
            if bytes[start..start + 2] != *b"\x1b[" {
                continue;
            }
            match private_mode(&bytes[start + 3..]) {
                Mode::AltScreen => return self.saw(Sign::AltScreen),
                Mode::Other => {}
                Mode::Unfinished if bytes.len() - start <= PENDING_MAX => {
                    self.keep_pending(&bytes[start..]);
                }
                Mode::Unfinished => {}
            }
        }
        // A chunk that ends in `ESC` or `ESC [`, which the search cannot
        // tell from nothing.
        match bytes {
            [.., 0x1b] => self.keep_pending(&[0x1b]),
            [.., 0x1b, b'['] => self.keep_pending(b"\x1b["),
            _ => {}
        }
    }

    fn keep_pending(&mut self, start: &[u8]) {
        self.pending[..start.len()].copy_from_slice(start);
        self.pending_len = start.len();
    }

    /// Finishes the sequence the last chunk ended in with the start of
    /// `bytes`; returns where the search of `bytes` goes on.
    fn finish_pending(&mut self, bytes: &[u8]) -> usize {
        let kept = self.pending_len;
        self.pending_len = 0;
        let take = bytes.len().min(PENDING_MAX - kept);
        let mut seq = [0u8; PENDING_MAX];
        seq[..kept].copy_from_slice(&self.pending[..kept]);
        seq[kept..kept + take].copy_from_slice(&bytes[..take]);
        let seq = &seq[..kept + take];
        if !seq.starts_with(b"\x1b[?") {
            // Only the chunk's last `ESC` or `ESC [` was kept, and the next
            // chunk does not go on with a private mode.
            if b"\x1b[?".starts_with(seq) && take == bytes.len() {
                self.keep_pending(seq);
            }
            return 0;
        }
        match private_mode(&seq[3..]) {
            Mode::AltScreen => self.saw(Sign::AltScreen),
            Mode::Unfinished if take == bytes.len() && seq.len() < PENDING_MAX => {
                // A tiny chunk in the middle of the sequence.
                self.keep_pending(seq);
            }
            Mode::Unfinished | Mode::Other => {}
        }
        0
    }

    /// Keeps the last [`WINDOW`] bytes of the stream.
    fn slide_window(&mut self, bytes: &[u8]) {
        if bytes.len() >= WINDOW {
            self.window.copy_from_slice(&bytes[bytes.len() - WINDOW..]);
            self.whole &= self.window_len == 0 && bytes.len() == WINDOW;
            self.window_len = WINDOW;
            return;
        }
        let keep = (WINDOW - bytes.len()).min(self.window_len);
        let drop = self.window_len - keep;
        self.whole &= drop == 0;
        self.window.copy_within(drop..self.window_len, 0);
        self.window[keep..keep + bytes.len()].copy_from_slice(bytes);
        self.window_len = keep + bytes.len();
    }

    /// The message the stream ends with (before its line breaks), if any.
    fn message_at_end(&self) -> Option<Sign> {
        let mut end = &self.window[..self.window_len];
        while let [rest @ .., b'\n' | b'\r'] = end {
            end = rest;
        }
        if !(end.ends_with(b"terminal") || end.ends_with(b"tty")) {
            return None;
        }
        let (message, sign) = MESSAGES.iter().find(|(m, _)| end.ends_with(m))?;
        let before = &end[..end.len() - message.len()];
        // A program that quits says so on a line of its own (not, say, a
        // `grep` hit that quotes it).
        let own_line = match before {
            [] => self.whole,
            [.., b'\n' | b'\r'] => true,
            _ => ends_in_escape(before),
        };
        (own_line || matches!(sign, Sign::Warned(_))).then_some(*sign)
    }

    /// A program that quit saying so, with more output after its line in
    /// the same read (`nano file; echo after`, read late): its message on
    /// a line of its own right after an escape sequence (the terminal
    /// modes it resets as it quits), so that a `grep` hit or a line of
    /// text that only quotes it is not taken for it.
    fn quit_before_more(&self) -> Option<Sign> {
        let window = &self.window[..self.window_len];
        // Plain text, most of what goes by, has no escape to follow.
        memchr::memchr(0x1b, window)?;
        MESSAGES.iter().find_map(|&(message, sign)| {
            let Sign::GaveUp(_) = sign else { return None };
            let at = memchr::memmem::find(window, message)?;
            let after = &window[at + message.len()..];
            let line_ends = matches!(after, [b'\n', ..] | [b'\r', b'\n', ..]);
            (line_ends && ends_in_escape(&window[..at])).then_some(sign)
        })
    }
}

/// What a private-mode sequence (after its `ESC [ ?`) sets.
#[derive(Debug, PartialEq, Eq)]
enum Mode {
    /// It enters the alternate screen.
    AltScreen,
    /// Another mode, another action, or not a sequence.
    Other,
    /// The bytes end before the sequence does.
    Unfinished,
}

/// Reads the parameters and final byte of a private-mode sequence.
fn private_mode(seq: &[u8]) -> Mode {
    for (i, &b) in seq.iter().enumerate() {
        match b {
            b'0'..=b'9' | b';' | b':' => {}
            b'h' => {
                let alt = seq[..i]
                    .split(|&c| c == b';' || c == b':')
                    .any(|param| ALT_SCREEN_MODES.contains(&param));
                return if alt { Mode::AltScreen } else { Mode::Other };
            }
            _ => return Mode::Other,
        }
        if i >= PENDING_MAX {
            return Mode::Other;
        }
    }
    Mode::Unfinished
}

/// Whether `bytes` end with a complete CSI escape sequence (`ESC [`,
/// parameters, a final byte), as a screen-drawing program ends a line.
fn ends_in_escape(bytes: &[u8]) -> bool {
    let Some(esc) = memchr::memrchr(0x1b, bytes) else {
        return false;
    };
    match &bytes[esc + 1..] {
        [b'[', body @ .., last] => {
            (0x40..=0x7e).contains(last) && body.iter().all(|b| (0x20..=0x3f).contains(b))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signs_of(chunks: &[&[u8]]) -> Option<Sign> {
        let mut signs = Signs::default();
        for chunk in chunks {
            signs.push(chunk);
        }
        signs.found()
    }

    /// Every way to cut `text` in two, and in single bytes.
    fn every_cut(text: &[u8]) -> Vec<Option<Sign>> {
        let mut seen: Vec<_> = (0..=text.len())
            .map(|i| signs_of(&[&text[..i], &text[i..]]))
            .collect();
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        seen.push(signs_of(&bytes));
        seen
    }

    #[test]
    fn sees_the_alternate_screen_however_the_stream_is_cut() {
        for seq in [
            &b"\x1b[?1049h"[..],
            b"\x1b[?1047h",
            b"\x1b[?47h",
            b"\x1b[?1;1049h",
            b"\x1b[?1049;1h",
        ] {
            let text = [&b"some text before "[..], seq, b"\x1b[H\x1b[2J screen"].concat();
            for seen in every_cut(&text) {
                assert_eq!(
                    seen,
                    Some(Sign::AltScreen),
                    "{:?}",
                    String::from_utf8_lossy(seq)
                );
            }
        }
        // Colors and the modes a program without a screen sets.
        let text = b"\x1b[31mred\x1b[0m \x1b[?25l\x1b[?2004h\x1b[?1h\x1b[?1049l\x1b[?104h\x1b[?10490h\x1b[?1049";
        for seen in every_cut(text) {
            assert_eq!(seen, None);
        }
    }

    #[test]
    fn a_long_run_of_plain_text_hides_nothing() {
        let mut text = vec![b'a'; 300_000];
        text.extend_from_slice(b"\x1b[?1049h");
        text.extend(std::iter::repeat_n(b'b', 300_000));
        assert_eq!(signs_of(&[&text]), Some(Sign::AltScreen));
        assert_eq!(
            signs_of(&[&text[..300_004], &text[300_004..]]),
            Some(Sign::AltScreen)
        );
    }

    #[test]
    fn sees_the_messages_of_editors_at_the_end_of_what_arrived() {
        let vim = b"Vim: Warning: Output is not to a terminal\nVim: Warning: Input is not from a terminal\n";
        for seen in every_cut(vim) {
            assert_eq!(seen, Some(Sign::Warned("vim")));
        }
        let after = [&b"building...\n"[..], &vim[..42]].concat();
        assert_eq!(signs_of(&[&after]), Some(Sign::Warned("vim")));
        // nano, with TERM=dumb: screen fragments, then its message.
        let nano = [
            &b"\x1b[?2004h"[..],
            &[b' '; 2000],
            b"[ Reading... ][ Read 1 line\r\x1b[?2004lStandard input is not a terminal\n",
        ]
        .concat();
        for seen in every_cut(&nano) {
            assert_eq!(seen, Some(Sign::GaveUp("nano")));
        }
        assert_eq!(
            signs_of(&[b"Standard input is not a terminal\n"]),
            Some(Sign::GaveUp("nano"))
        );
        assert_eq!(
            signs_of(&[b"x\r\nemacs: standard input is not a tty\n"]),
            Some(Sign::GaveUp("emacs"))
        );
        // A program that quits after the alternate screen: that it quits wins.
        let nano_xterm = b"\x1b[?2004h\x1b[?1049h\x1b[22;0;0t\x1b[?1049l\r\x1b[?2004lStandard input is not a terminal\n";
        assert_eq!(signs_of(&[nano_xterm]), Some(Sign::GaveUp("nano")));
    }

    #[test]
    fn a_program_that_quit_is_seen_with_more_output_after_it_in_the_same_read() {
        // `nano file; echo after`, both read at once by a busy reader.
        let nano =
            b"\x1b[?1049l\r\x1b[?1l\x1b>\x1b[?2004lStandard input is not a terminal\nafter\n";
        for seen in every_cut(nano) {
            assert_eq!(seen, Some(Sign::GaveUp("nano")));
        }
        let crlf = b"\x1b[?2004lStandard input is not a terminal\r\nafter\n";
        assert_eq!(signs_of(&[crlf]), Some(Sign::GaveUp("nano")));
    }

    #[test]
    fn a_message_quoted_or_followed_by_more_is_not_a_sign() {
        assert_eq!(
            signs_of(&[b"src/nano.c:  die(\"Standard input is not a terminal\n"]),
            None
        );
        assert_eq!(
            signs_of(&[b"Standard input is not a terminal\nand more\n"]),
            None
        );
        assert_eq!(
            signs_of(&[b"\x1b[1mStandard input is not a terminal, said nano\n"]),
            None
        );
        assert_eq!(signs_of(&[b"a terminal\n", b"tty\n"]), None);
        // Cut from the start of the stream: not its start.
        let mut text = vec![b'x'; WINDOW - 10];
        text.extend_from_slice(b"Standard input is not a terminal\n");
        assert_eq!(signs_of(&[&text]), None);
    }

    #[test]
    fn remembers_when_output_last_came_once_a_sign_was_seen() {
        let mut signs = Signs::default();
        signs.push(b"plain");
        assert_eq!(signs.last_output(), None);
        signs.push(b"\x1b[?1049h");
        let first = signs.last_output().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        signs.push(b"more");
        assert!(signs.last_output().unwrap() > first);
    }

    #[test]
    fn parses_private_modes() {
        assert_eq!(private_mode(b"1049h"), Mode::AltScreen);
        assert_eq!(private_mode(b"1049l"), Mode::Other);
        assert_eq!(private_mode(b"25h"), Mode::Other);
        assert_eq!(private_mode(b"10"), Mode::Unfinished);
        assert_eq!(private_mode(b""), Mode::Unfinished);
        assert_eq!(private_mode(b"1x"), Mode::Other);
        assert!(ends_in_escape(b"line\r\x1b[?2004l"));
        assert!(!ends_in_escape(b"line\r\x1b[?2004"));
        assert!(!ends_in_escape(b"plain"));
    }
}
