//! `OutputSink`: counts a command's sanitized output, keeps a bounded part of
//! it for the model, and spills the whole stream to an artifact once it no
//! longer fits.
//!
//! # What is kept
//! - **Tail** (the default): the last `max_bytes` bytes. When the stream is
//!   longer, the kept text starts at a line start when the window holds a
//!   line break with text after it, else at a character boundary (a single
//!   huge line is still shown, cut).
//! - **Head + tail** (`head_bytes > 0`): the first `head_bytes` bytes and the
//!   last `max_bytes - head_bytes`, so both together stay within `max_bytes`.
//!   When something is dropped in between, the head is cut back to its last
//!   line break (if it has one) and the output is
//!   `head` + `[… N lines elided …]` + `\n` + `tail`, the marker on a line of
//!   its own (a `\n` is put before it when the head does not end with one).
//!   N is the number of lines the dropped part touches (`1 line` when
//!   singular); the marker counts in `output_bytes` and `output_lines`.
//! - **Head lines** (`head_lines: Some(n)`, which overrides `head_bytes`): the
//!   first `n` lines, at most `max_bytes` (cut back to a line break when cut).
//!   The caller asked for the head of the complete stream, so that is the
//!   output; [`OutputSink::head_satisfied`] tells the engine when it can stop
//!   the command. A tail of that head is taken when the run ends
//!   ([`OutputSink::dump_lines`]): from the artifact when the head outgrew
//!   `max_bytes`.
//!
//! # Masking
//! With a [`Masker`] (`SinkOptions::mask`), the sanitized text goes through
//! it before anything else sees it: the text a push returns, the counts,
//! the kept text and the artifact are all the masked text. The masker may
//! hold back the end of a push that could start a secret;
//! [`OutputSink::finish`] (and [`OutputSink::dump`]) let it go, and
//! [`OutputSink::release_held`] does for a reader that must see everything
//! now (a job's poll).
//!
//! # Carriage returns
//! With `carriage_return: terminal` (the default), the sanitizer keeps
//! `\r` and backspaces, and what the sink takes, counts and keeps is
//! their terminal's view ([`super::carriage`]): a push returns the lines
//! it ended (the line being written comes with the push that ends it, with
//! [`OutputSink::finish`], or when a reader releases it:
//! [`OutputSink::release_held`]). Once the stream spills, the artifact
//! takes every frame from there (each `\r` a line break; before that, the
//! lines as shown), so it can have more lines than the counts say.
//!
//! # Lines and bytes
//! Bytes are UTF-8 bytes of the sanitized (and masked) text. Lines follow
//! [`count_lines`](super::count_lines): `"a\nb\n"` and `"a\nb"` are 2 lines,
//! `""` is 0: a trailing newline ends the last line, it does not start one.
//!
//! # Artifact
//! Until something would be dropped, the sink holds the whole stream. At the
//! push that would first drop a byte, it reserves the artifact if its
//! [`ArtifactSlot`] is not reserved yet, and opens its file (the empty file
//! [`ArtifactStore::allocate`](crate::ArtifactStore::allocate) made, or a new
//! one, mode 0600; never a file that already holds something),
//! writes what it held and from then on every push, so the file is
//! the whole sanitized stream (every frame of a redrawn line: see Carriage
//! returns). A file that cannot be
//! opened means no artifact, not an error. A write error later also means no
//! artifact: the incomplete file is removed, since an `artifact_id` promises
//! the complete stream. An artifact reserved beforehand and never needed is
//! removed again (its reservation is an empty file), so only spilled streams
//! stay.
//!
//! # Memory
//! Head and tail together hold at most `max_bytes + 1` bytes (one byte before
//! the tail window tells whether it starts a line), plus the text of the
//! current push, plus the artifact writer's fixed buffer. Buffers grow with
//! the stream, so a short command allocates little; after warm-up a push
//! allocates nothing.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};

use serde::{Deserialize, Serialize};

use super::carriage::{CarriageReturn, Frames, Overwrite};
use super::lines::read_lines;
use super::ring::Ring;
use super::scan::count_newlines;
use super::shown::Shown;
use super::{Masker, Sanitizer, count_lines, grown_capacity};
use crate::artifact::{Artifact, ArtifactSlot};
use crate::command::normalize::apply_head_tail;

/// Default bound of the kept output: 50 KiB.
pub const DEFAULT_MAX_BYTES: usize = crate::defaults::MAX_BYTES;

/// How an [`OutputSink`] bounds and spills its output.
#[derive(Debug, Clone)]
pub struct SinkOptions {
    /// Bound of the kept output, head and tail together.
    pub max_bytes: usize,
    /// Bytes of the start of the stream to keep besides the tail (0: tail only).
    pub head_bytes: usize,
    /// Keep the first N lines instead of a tail.
    pub head_lines: Option<usize>,
    /// Where the whole stream goes once it no longer fits.
    pub artifact: Option<ArtifactSlot>,
    /// The most bytes the artifact takes (`None`: no bound): past it the
    /// file stops growing and keeps the stream's first bytes, while the
    /// kept tail goes on (see [`OutputSink::artifact_capped`]).
    pub artifact_cap: Option<u64>,
    /// Secrets replaced in the sanitized text (see [`super::mask`]); `None`:
    /// no masking stage.
    pub mask: Option<Masker>,
    /// How carriage returns and backspaces read (see [`super::carriage`]).
    pub carriage_return: CarriageReturn,
}

impl Default for SinkOptions {
    fn default() -> Self {
        SinkOptions {
            max_bytes: DEFAULT_MAX_BYTES,
            head_bytes: 0,
            head_lines: None,
            artifact: None,
            artifact_cap: None,
            mask: None,
            carriage_return: CarriageReturn::default(),
        }
    }
}

/// What a finished sink hands back; serialized as a part of
/// [`crate::BashResult`] (see [`crate::wire`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OutputSummary {
    /// The kept text, prefixed with `[notice]\n` when a notice was given.
    pub output: String,
    /// `output` is not the whole stream.
    pub truncated: bool,
    /// Lines of the whole stream.
    pub total_lines: u64,
    /// Bytes of the whole (sanitized) stream.
    pub total_bytes: u64,
    /// Lines of `output`, the notice excluded.
    pub output_lines: u64,
    /// Bytes of `output`, the notice excluded.
    pub output_bytes: u64,
    /// Set when the artifact file holds the whole stream.
    pub artifact_id: Option<String>,
}

/// How a notice reads before an output: `[notice]`.
pub fn notice_line(notice: &str) -> String {
    format!("[{notice}]")
}

impl OutputSummary {
    /// Puts `notice` before the output, as `[notice]` on a line of its own;
    /// the output counts stay those of the output without it.
    pub fn add_notice(&mut self, notice: &str) {
        self.output = format!("{}\n{}", notice_line(notice), self.output);
    }

    /// Puts `line` after the output, on a line of its own; the output
    /// counts stay those of the output without it, as with a notice.
    pub fn add_trailer(&mut self, line: &str) {
        if !self.output.is_empty() && !self.output.ends_with('\n') {
            self.output.push('\n');
        }
        self.output.push_str(line);
        self.output.push('\n');
    }

    /// Keeps the first `head` lines of the output, then the last `tail` of
    /// those (see [`apply_head_tail`]), and counts what is left; the output
    /// is then truncated if that dropped anything.
    pub fn keep_lines(&mut self, head: Option<usize>, tail: Option<usize>) {
        if head.is_none() && tail.is_none() {
            return;
        }
        let limited = apply_head_tail(&self.output, head, tail);
        if limited.len() != self.output.len() {
            self.truncated = true;
            self.output_lines = count_lines(&limited);
            self.output_bytes = limited.len() as u64;
            self.output = limited;
        }
    }
}

/// The artifact file's life.
#[derive(Debug)]
enum Spill {
    /// No artifact was given, or it failed.
    None,
    /// Given, not needed yet.
    Ready(ArtifactSlot),
    /// Receiving the stream.
    Open(Artifact, BufWriter<File>),
}

/// Streaming sink for one command's output. See the module docs.
#[derive(Debug)]
pub struct OutputSink {
    sanitizer: Sanitizer,
    /// Masks the sanitized text, when the command has secrets.
    masker: Option<Masker>,
    /// Sanitized text of the current push before masking, reused.
    clean: String,
    /// Sanitized (and masked) text of the current push, reused across pushes.
    chunk: String,
    /// The terminal's view of the pushes, for their callers
    /// (`carriage_return: terminal`); `None`: the text is shown as kept.
    view: Option<Overwrite>,
    /// The view of the current push, reused: the lines before its text
    /// that comes out as it is, and those after.
    shown: String,
    shown_after: String,
    /// The artifact's frames of the stream, once it spills.
    frames: Frames,
    /// The frames of the current push, reused.
    framed: String,
    total_bytes: u64,
    total_newlines: u64,
    ends_with_newline: bool,

    /// The first bytes of the stream.
    head: String,
    head_limit: usize,
    head_lines: Option<usize>,
    head_newlines: usize,
    /// Set once a byte went past the head: the head never grows again.
    head_closed: bool,
    /// The bytes after the head: the last `tail_limit` of them, plus one.
    tail: Ring,
    tail_limit: usize,
    spill: Spill,
    /// Bytes the artifact may still take (`u64::MAX`: no bound).
    artifact_room: u64,
    /// The artifact reached its cap: it holds the stream's first bytes only.
    artifact_capped: bool,
}

impl OutputSink {
    pub fn new(opts: SinkOptions) -> Self {
        let max = opts.max_bytes;
        let (head_limit, tail_limit) = match opts.head_lines {
            Some(_) => (max, 0),
            None => {
                let head = opts.head_bytes.min(max);
                (head, max - head)
            }
        };
        let terminal = opts.carriage_return == CarriageReturn::Terminal;
        OutputSink {
            sanitizer: if terminal {
                Sanitizer::keeping_carriage()
            } else {
                Sanitizer::new()
            },
            masker: opts.mask,
            clean: String::new(),
            chunk: String::new(),
            view: terminal.then(Overwrite::default),
            shown: String::new(),
            shown_after: String::new(),
            frames: Frames::default(),
            framed: String::new(),
            total_bytes: 0,
            total_newlines: 0,
            ends_with_newline: false,

            head: String::new(),
            head_limit,
            head_lines: opts.head_lines,
            head_newlines: 0,
            head_closed: head_limit == 0,
            tail: Ring::new(tail_limit.saturating_add(1)),
            tail_limit,
            spill: opts.artifact.map_or(Spill::None, Spill::Ready),
            artifact_room: opts.artifact_cap.unwrap_or(u64::MAX),
            artifact_capped: false,
        }
    }

    /// Sanitizes raw bytes and records them; returns the text of this push
    /// as the model reads it (possibly empty), for live callbacks: with
    /// `carriage_return: terminal`, the lines this push ended, as a
    /// terminal shows them (the line being written comes with a later
    /// push, or [`OutputSink::finish`]). Whole lines of plain text come
    /// out as read, uncopied.
    pub fn push<'a>(&'a mut self, bytes: &'a [u8]) -> Shown<'a> {
        let mut chunk = std::mem::take(&mut self.chunk);
        chunk.clear();
        let plain = self.clean_text(bytes, &mut chunk);
        let text = plain.unwrap_or(&chunk);
        self.spill_frames(text, plain.is_some());
        let mut before = std::mem::take(&mut self.shown);
        let mut after = std::mem::take(&mut self.shown_after);
        before.clear();
        after.clear();
        let middle = match &mut self.view {
            None => 0..text.len(),
            Some(view) => view.push_split(text, plain.is_some(), &mut before, &mut after),
        };
        self.record(&[&before, &text[middle.clone()], &after]);
        (self.chunk, self.shown, self.shown_after) = (chunk, before, after);
        let text = plain.unwrap_or(&self.chunk);
        Shown::new([&self.shown, &text[middle], &self.shown_after])
    }

    /// The clean text of `bytes`: sanitized, then masked. `Some` when it is
    /// `bytes` as they are (plain text, no masker); else it is in `chunk`.
    fn clean_text<'a>(&mut self, bytes: &'a [u8], chunk: &mut String) -> Option<&'a str> {
        let plain = self.sanitizer.plain_prefix(bytes);
        let Some(masker) = &mut self.masker else {
            if plain.len() == bytes.len() {
                return Some(plain);
            }
            chunk.push_str(plain);
            self.sanitizer.push(&bytes[plain.len()..], chunk);
            return None;
        };
        let mut clean = std::mem::take(&mut self.clean);
        clean.clear();
        let text = if plain.len() == bytes.len() {
            plain
        } else {
            clean.push_str(plain);
            self.sanitizer.push(&bytes[plain.len()..], &mut clean);
            &clean
        };
        masker.push(text, chunk);
        self.clean = clean;
        None
    }

    /// Records text that needs no decoding (e.g. `PTY error: …\n`); it is
    /// still sanitized.
    pub fn push_text<'a>(&'a mut self, text: &'a str) -> Shown<'a> {
        self.push(text.as_bytes())
    }

    /// Flushes the sanitizer (and the line being written) at the end of
    /// the stream; returns the final text (possibly empty).
    pub fn finish(&mut self) -> &str {
        let mut chunk = std::mem::take(&mut self.chunk);
        chunk.clear();
        match &mut self.masker {
            None => self.sanitizer.finish(&mut chunk),
            Some(masker) => {
                let mut clean = std::mem::take(&mut self.clean);
                clean.clear();
                self.sanitizer.finish(&mut clean);
                masker.push(&clean, &mut chunk);
                masker.finish(&mut chunk);
                self.clean = clean;
            }
        }
        self.record_all(chunk)
    }

    /// The text not recorded yet: what the masker holds back (the start of
    /// what may be a secret), then the line being written (as a terminal
    /// shows it now). Empty most of the time.
    pub fn held(&self) -> String {
        let mut held = self.masker.as_ref().map_or("", Masker::held).to_string();
        if let Some(view) = &self.view {
            let mut line = view.clone();
            line.push(&held, &mut String::new());
            held.clear();
            line.finish(&mut held);
        }
        held
    }

    /// Records what is held back ([`OutputSink::held`]), as if the stream
    /// ended there (it goes on): for a reader that must see all the output
    /// so far, such as a job's poll. A secret whose start was let go is
    /// then not masked when its rest comes; a line let go is not
    /// overwritten by what comes after it. Returns the text released
    /// (possibly empty).
    pub fn release_held(&mut self) -> &str {
        let mut chunk = std::mem::take(&mut self.chunk);
        chunk.clear();
        if let Some(masker) = &mut self.masker {
            masker.finish(&mut chunk);
        }
        self.record_all(chunk)
    }

    /// Records the last clean text `chunk` of what was held, and the line
    /// being written with it; returns what that let out.
    fn record_all(&mut self, chunk: String) -> &str {
        self.spill_frames(&chunk, false);
        let Some(view) = &mut self.view else {
            self.record(&[&chunk]);
            self.chunk = chunk;
            return &self.chunk;
        };
        let mut shown = std::mem::take(&mut self.shown);
        shown.clear();
        view.push(&chunk, &mut shown);
        view.finish(&mut shown);
        self.record(&[&shown]);
        self.chunk = chunk;
        self.shown = shown;
        &self.shown
    }

    /// With `head_lines: Some(n)`: true once the stream has n complete lines.
    pub fn head_satisfied(&self) -> bool {
        self.head_lines
            .is_some_and(|n| self.total_newlines >= n as u64)
    }

    /// Bytes of the stream so far, the line being written included.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes + self.line().len() as u64
    }

    /// Lines of the stream so far, the line being written included.
    pub fn total_lines(&self) -> u64 {
        let open = self.total_bytes > 0 && !self.ends_with_newline || !self.line().is_empty();
        self.total_newlines + u64::from(open)
    }

    /// The line being written, held back by the terminal's view.
    fn line(&self) -> &str {
        self.view.as_ref().map_or("", Overwrite::line)
    }

    /// The sanitized text from stream offset `from` to the end, at most
    /// the last `max` bytes of it, and the offset where it starts: `from`,
    /// or later when the sink no longer holds `from` (a tail sink holds the
    /// last `max_bytes`) or more than `max` bytes follow it. The text starts
    /// on a character boundary. For a tail-only sink (no head), as a job's
    /// output is.
    pub fn read_from(&self, from: u64, max: usize) -> (u64, String) {
        debug_assert!(self.head.is_empty(), "read_from needs a tail-only sink");
        let (mut start, mut bytes) = self.tail.read_from(from, max);
        let lead = bytes.iter().take_while(|&&b| (b & 0xC0) == 0x80).count();
        bytes.drain(..lead);
        start += lead as u64;
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                String::from_utf8(bytes).unwrap_or_default()
            }
        };
        (start, text)
    }

    /// The artifact's id once the stream has spilled to it; what the sink
    /// took is in the file after [`OutputSink::flush`].
    pub fn artifact_id(&self) -> Option<&str> {
        match &self.spill {
            Spill::Open(artifact, _) => Some(&artifact.id),
            _ => None,
        }
    }

    /// The artifact reached the sink's `artifact_cap`: it holds the first
    /// bytes of the stream, not all of it.
    pub fn artifact_capped(&self) -> bool {
        self.artifact_capped
    }

    /// Writes out what the artifact writer buffers, so a reader of the file
    /// sees the stream so far (a failure means no artifact, as in a push).
    pub fn flush(&mut self) {
        if let Spill::Open(artifact, writer) = &mut self.spill
            && writer.flush().is_err()
        {
            let _ = fs::remove_file(&artifact.path);
            self.spill = Spill::None;
        }
    }

    /// Bytes of memory the sink keeps between pushes (head and tail
    /// buffers): at most `max_bytes + 1`. The current push's text and the
    /// artifact writer's fixed buffer come on top.
    pub fn retained_bytes(&self) -> usize {
        self.head.capacity() + self.tail.retained_bytes()
    }

    /// Consumes the sink: flushes the sanitizer, closes the artifact file and
    /// returns the summary. `notice` is prefixed to the output as
    /// `[notice]\n`, outside the output counts.
    pub fn dump(mut self, notice: Option<&str>) -> OutputSummary {
        self.finish();
        let (output, truncated) = if self.dropped_anything() {
            (self.truncated_output(), true)
        } else {
            let mut whole = std::mem::take(&mut self.head);
            whole.push_str(&String::from_utf8_lossy(&self.tail.to_vec()));
            (whole, false)
        };
        let artifact_id = match std::mem::replace(&mut self.spill, Spill::None) {
            Spill::Open(artifact, mut writer) => match writer.flush() {
                Ok(()) => Some(artifact.id),
                Err(_) => {
                    drop(writer);
                    let _ = fs::remove_file(&artifact.path);
                    None
                }
            },
            Spill::Ready(slot) => {
                slot.release();
                None
            }
            Spill::None => None,
        };
        let mut summary = OutputSummary {
            output_lines: count_lines(&output),
            output_bytes: output.len() as u64,
            output,
            truncated,
            total_lines: self.total_lines(),
            total_bytes: self.total_bytes,
            artifact_id,
        };
        if let Some(notice) = notice {
            summary.add_notice(notice);
        }
        summary
    }

    /// [`OutputSink::dump`] of a run with line limits: the first `head`
    /// lines of the complete stream, then the last `tail` of those, as
    /// `cmd | head -n H | tail -n T` prints them, at most `max_bytes` of
    /// them (see [`OutputSummary::keep_lines`]). The sink keeps only the
    /// first `max_bytes` of the head, so the tail of a longer head is read
    /// back from the artifact, which holds the whole stream: the last lines
    /// of what was kept would be lines from the middle of the head. Without
    /// the whole stream in an artifact, those last lines are all there is.
    /// (The artifact keeps a line redrawn after the spill as its frames, a
    /// line each: past such a line, its line numbers run ahead of the
    /// stream's, and the lines read are earlier ones.)
    pub(crate) fn dump_lines(self, head: Option<usize>, tail: Option<usize>) -> OutputSummary {
        // Head and tail share the bound.
        let max_bytes = self.head_limit + self.tail_limit;
        let whole_stream = match &self.spill {
            Spill::Open(artifact, _) if !self.artifact_capped => Some(artifact.path.clone()),
            _ => None,
        };
        let mut summary = self.dump(None);
        if let (Some(head), Some(tail), Some(path), Some(_)) =
            (head, tail, whole_stream, &summary.artifact_id)
        {
            let end = (head as u64).min(summary.total_lines);
            if summary.output_lines < end
                && let Some(read) =
                    read_lines(&path, end.saturating_sub(tail as u64), end, max_bytes)
            {
                summary.output_lines = read.lines;
                summary.output_bytes = read.text.len() as u64;
                summary.output = read.text;
                return summary;
            }
        }
        summary.keep_lines(head, tail);
        summary
    }

    /// Records the pieces of one push of sanitized text, in order.
    fn record(&mut self, pieces: &[&str]) {
        for (i, piece) in pieces.iter().enumerate() {
            self.record_piece(piece, &pieces[i + 1..]);
        }
    }

    /// Records `text`, which the pieces `later` of the same push follow.
    fn record_piece(&mut self, text: &str, later: &[&str]) {
        if text.is_empty() {
            return;
        }
        self.total_bytes += text.len() as u64;
        self.total_newlines += count_newlines(text.as_bytes()) as u64;
        self.ends_with_newline = text.ends_with('\n');

        let head_take = self.head_take(text);
        let rest = &text[head_take..];
        let drops = self.tail.seen() + rest.len() as u64 > self.tail_limit as u64;
        if drops && matches!(self.spill, Spill::Ready(_)) {
            // The stream so far, as shown: what the sink holds, this push,
            // the line being written (and the frame being written on it:
            // the frames go on after it).
            let mut line = String::new();
            if let Some(view) = &self.view {
                view.line_as_frames(&mut line);
            }
            let mut after = vec![text];
            after.extend(later.iter().copied());
            after.push(&line);
            self.open_spill(&after);
        }

        if head_take > 0 {
            let kept = &text[..head_take];
            let needed = self.head.len() + kept.len();
            if needed > self.head.capacity() {
                let target = grown_capacity(self.head.capacity(), needed, self.head_limit);
                self.head.reserve_exact(target - self.head.len());
            }
            self.head.push_str(kept);
            if self.head_lines.is_some() {
                self.head_newlines += count_newlines(kept.as_bytes());
            }
        }
        if !rest.is_empty() {
            self.head_closed = true;
            self.tail.push(rest.as_bytes());
        }
    }

    /// Writes the frames of the clean `text` of a push to the artifact, once
    /// it is open: from then on it keeps every frame of a redrawn line
    /// (what the sink holds is its terminal's view).
    fn spill_frames(&mut self, text: &str, plain: bool) {
        if text.is_empty() {
            return;
        }
        let Spill::Open(artifact, writer) = &mut self.spill else {
            // Nothing writes the frames (yet): only where they stand.
            self.frames.skip(text);
            return;
        };
        let mut framed = std::mem::take(&mut self.framed);
        let frames = self.frames.push(text, plain, &mut framed);
        if !self.artifact_capped {
            let take =
                floor_char_boundary(frames, self.artifact_room.min(frames.len() as u64) as usize);
            if writer.write_all(&frames.as_bytes()[..take]).is_err() {
                let _ = fs::remove_file(&artifact.path);
                self.spill = Spill::None;
            }
            self.artifact_room -= take as u64;
            self.artifact_capped = take < frames.len();
        }
        self.framed = framed;
    }

    /// How many bytes at the start of `text` still belong to the head.
    fn head_take(&self, text: &str) -> usize {
        if self.head_closed {
            return 0;
        }
        let mut take = floor_char_boundary(text, self.head_limit - self.head.len());
        if let Some(n) = self.head_lines {
            let wanted = n.saturating_sub(self.head_newlines);
            let within = &text.as_bytes()[..take];
            take = if wanted == 0 {
                0
            } else {
                within
                    .iter()
                    .enumerate()
                    .filter(|&(_, &b)| b == b'\n')
                    .nth(wanted - 1)
                    .map_or(take, |(i, _)| i + 1)
            };
        }
        take
    }

    /// Creates the artifact file and writes what the sink holds, which is the
    /// whole stream so far (nothing was dropped yet).
    fn open_spill(&mut self, after: &[&str]) {
        let Spill::Ready(slot) = std::mem::replace(&mut self.spill, Spill::None) else {
            return;
        };
        let Some(artifact) = slot.reserve() else {
            return;
        };
        let mut options = OpenOptions::new();
        options.write(true).create(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let Ok(file) = options.open(&artifact.path) else {
            return;
        };
        if file.metadata().map_or(true, |m| m.len() != 0) {
            // Not the empty reservation: someone else's file.
            return;
        }
        let mut writer = BufWriter::new(file);
        let (older, newer) = self.tail.as_slices();
        let mut held = self.head.clone();
        held.push_str(&String::from_utf8_lossy(&[older, newer].concat()));
        held.extend(after.iter().copied());
        let take = floor_char_boundary(&held, self.artifact_room.min(held.len() as u64) as usize);
        match writer.write_all(&held.as_bytes()[..take]) {
            Ok(()) => {
                self.artifact_room -= take as u64;
                self.artifact_capped = take < held.len();
                self.spill = Spill::Open(artifact, writer);
            }
            Err(_) => {
                drop(writer);
                let _ = fs::remove_file(&artifact.path);
            }
        }
    }

    /// Whether some byte of the stream is in neither head nor tail.
    fn dropped_anything(&self) -> bool {
        self.tail.seen() > self.tail_limit as u64
    }

    /// The output when bytes were dropped: the cut head and/or tail, with the
    /// elision marker between them in head + tail mode.
    fn truncated_output(&mut self) -> String {
        let head = std::mem::take(&mut self.head);
        let head = match head.rfind('\n') {
            Some(i) if !head.ends_with('\n') => head[..=i].to_string(),
            _ => head,
        };
        if self.head_lines.is_some() {
            return head;
        }
        // The dropped middle ends at a line break when the tail starts a line.
        let (tail, middle_ends_line) = self.tail.tail_text();
        if self.head_limit == 0 {
            return tail;
        }
        let middle_newlines = self.total_newlines
            - count_newlines(head.as_bytes()) as u64
            - count_newlines(tail.as_bytes()) as u64;
        let elided = middle_newlines + u64::from(!middle_ends_line);
        let mut output = head;
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&format!(
            "[… {elided} {} elided …]\n",
            if elided == 1 { "line" } else { "lines" }
        ));
        output.push_str(&tail);
        output
    }
}

/// The largest character boundary of `text` at or before `index`.
fn floor_char_boundary(text: &str, index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    let mut index = index;
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// A sink dropped before its dump (a run that failed) gives its unused
/// artifact reservation back.
impl Drop for OutputSink {
    fn drop(&mut self) {
        if let Spill::Ready(slot) = std::mem::replace(&mut self.spill, Spill::None) {
            slot.release();
        }
    }
}

#[cfg(test)]
#[path = "sink_tests.rs"]
mod tests;
