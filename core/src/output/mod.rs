//! Output pipeline: bytes to sanitized, bounded text.
//!
//! [`Sanitizer`] decodes and cleans a byte stream in any chunking,
//! [`Masker`] replaces the secrets of the command's environment in the
//! clean text (see [`mask`]), [`OutputSink`] counts it, keeps a bounded
//! head and tail and spills the whole stream to an artifact once it no
//! longer fits, and [`TailBuffer`] keeps the bounded tail that live
//! updates show.

pub mod carriage;
pub(crate) mod fullscreen;
pub(crate) mod lines;
pub mod mask;
pub mod notice;
mod ring;
pub mod sanitize;
mod scan;
pub mod shown;
pub mod sink;
pub mod tail;
mod utf8;

pub use mask::{Mask, Masker};
pub use sanitize::{Sanitizer, sanitize_text};
pub use shown::Shown;
pub use sink::{DEFAULT_MAX_BYTES, OutputSink, OutputSummary, SinkOptions};
pub use tail::TailBuffer;

/// Capacity to grow a buffer to so that `needed` bytes fit: doubling, for
/// amortized growth, but never past `limit` (a bounded buffer must not hold
/// twice its bound because of the allocator's growth policy).
fn grown_capacity(capacity: usize, needed: usize, limit: usize) -> usize {
    needed
        .max(capacity.saturating_mul(2))
        .min(limit.max(needed))
}

/// Counts lines the way every summary in conch does: each `\n` ends a line,
/// and text after the last `\n` is one more line. `"a\nb\n"` and `"a\nb"` are
/// both 2 lines, `""` is 0.
pub fn count_lines(text: &str) -> u64 {
    let newlines = scan::count_newlines(text.as_bytes()) as u64;
    newlines + u64::from(!text.is_empty() && !text.ends_with('\n'))
}
