//! Byte scans on the hot path of the output pipeline.
//!
//! A command can print gigabytes, and almost all of it is plain text that the
//! sanitizer copies unchanged and the sink only counts. These scans look at
//! fixed-size blocks with branch-free arithmetic the compiler turns into SIMD
//! compares, so plain text moves in bulk and only the rare interesting byte
//! takes the slow, byte-at-a-time path.

/// Block size for the vectorizable loops.
const BLOCK: usize = 32;

/// Bytes looked at one by one before the block test.
const QUICK: usize = 16;

/// Whether `b` is plain text the sanitizer copies as is: printable ASCII,
/// `\t` and `\n`.
#[inline(always)]
const fn is_plain(b: u8) -> bool {
    (b >= 0x20) & (b < 0x7F) | (b == b'\t') | (b == b'\n')
}

/// [`is_plain`] as a table: one load per byte beats recomputing the test
/// where bytes are looked at one by one.
static PLAIN: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = is_plain(b as u8);
        b += 1;
    }
    table
};

/// Index of the first byte at or after `from` that is not plain ASCII text
/// (an escape, a control, `\r`, DEL or a non-ASCII byte), or `text.len()`.
#[inline]
pub(crate) fn plain_ascii_end(text: &[u8], from: usize) -> usize {
    let mut i = from;
    // Colored output has runs of a few bytes between escape sequences:
    // look at the first bytes one by one before testing whole blocks.
    let quick_end = text.len().min(i + QUICK);
    while i < quick_end && PLAIN[text[i] as usize] {
        i += 1;
    }
    if i < quick_end {
        return i;
    }
    while let Some(block) = text.get(i..i + BLOCK) {
        if !block.iter().fold(true, |acc, &b| acc & is_plain(b)) {
            break;
        }
        i += BLOCK;
    }
    while i < text.len() && PLAIN[text[i] as usize] {
        i += 1;
    }
    i
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
    fn finds_the_end_of_plain_ascii() {
        assert_eq!(plain_ascii_end(b"plain\ttext\n", 0), 11);
        let long = format!("{}\x1b{}é", "a".repeat(100), "b".repeat(100));
        assert_eq!(plain_ascii_end(long.as_bytes(), 0), 100);
        assert_eq!(plain_ascii_end(long.as_bytes(), 101), 201);
        assert_eq!(plain_ascii_end(b"\x7f", 0), 0);
        assert_eq!(plain_ascii_end(b"ab\r", 0), 2);
        assert_eq!(plain_ascii_end(b"", 0), 0);
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
