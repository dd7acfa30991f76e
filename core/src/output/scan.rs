//! Byte scans on the hot path of the output pipeline.
//!
//! A command can print gigabytes, and almost all of it is plain text that the
//! sanitizer copies unchanged and the sink only counts. These scans look at
//! fixed-size blocks with branch-free arithmetic the compiler turns into SIMD
//! compares, so plain text moves in bulk and only the rare interesting byte
//! takes the slow, byte-at-a-time path.

/// Block size for the vectorizable loops.
const BLOCK: usize = 32;

/// Whether the sanitizer must look at `b` on its own in plain text: C0
/// controls other than `\t` and `\n`, DEL, and `0xC2` (the lead byte of
/// U+0080–U+00BF, the range holding the C1 controls). Every other byte of
/// valid UTF-8, including all other multibyte characters, is copied as is.
#[inline(always)]
fn is_special(b: u8) -> bool {
    (b < 0x20) & (b != b'\t') & (b != b'\n') | (b == 0x7F) | (b == 0xC2)
}

/// Index of the first byte at or after `from` that the sanitizer must handle
/// itself, or `text.len()`. `text` is valid UTF-8, so a `0xC2` is always
/// followed by a continuation byte; one that leads a printable character
/// (U+00A0–U+00BF) is skipped here.
pub(crate) fn find_special(text: &[u8], from: usize) -> usize {
    let mut i = from;
    loop {
        while let Some(block) = text.get(i..i + BLOCK) {
            if block.iter().fold(false, |acc, &b| acc | is_special(b)) {
                break;
            }
            i += BLOCK;
        }
        while i < text.len() && !is_special(text[i]) {
            i += 1;
        }
        match text.get(i..i + 2) {
            Some([0xC2, next]) if *next >= 0xA0 => i += 2,
            _ => return i.min(text.len()),
        }
    }
}

/// Number of `\n` bytes in `text`.
pub(crate) fn count_newlines(text: &[u8]) -> usize {
    // Per-block counts fit in a u8 lane, so the inner loop stays narrow.
    let mut blocks = text.chunks_exact(BLOCK * 4);
    let mut count = 0usize;
    for block in &mut blocks {
        let n: u8 = block
            .iter()
            .fold(0u8, |acc, &b| acc.wrapping_add((b == b'\n') as u8));
        count += n as usize;
    }
    count + blocks.remainder().iter().filter(|&&b| b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_specials_and_skips_printable_latin1() {
        let text = "abc°def\u{85}x".as_bytes();
        let at = find_special(text, 0);
        assert_eq!(&text[at..at + 2], &[0xC2, 0x85]);
        assert_eq!(find_special(b"plain\ttext\n", 0), 11);
        let long = format!("{}\x1b{}", "a".repeat(100), "b".repeat(100));
        assert_eq!(find_special(long.as_bytes(), 0), 100);
        assert_eq!(find_special(long.as_bytes(), 101), 201);
        assert_eq!(find_special(b"\x7f", 0), 0);
        assert_eq!(find_special(b"ab\r", 0), 2);
    }

    #[test]
    fn counts_newlines_in_blocks_and_remainder() {
        let mut text = "x\n".repeat(300);
        text.push_str("tail\n\n");
        assert_eq!(count_newlines(text.as_bytes()), 302);
        assert_eq!(count_newlines(b""), 0);
        assert_eq!(count_newlines(&[b'\n'; 128]), 128);
    }
}
