//! The bounded tail of a stream that live updates show.
//!
//! A host may read it after every chunk, so [`TailBuffer::text`] borrows the
//! kept text instead of copying it (re-encoding up to 50 KiB per chunk would
//! cost a flood dearly). The buffer holds at most twice its bound: old text
//! is dropped from the front only when that slack is used up, so each byte
//! is moved at most once more on average.

/// Bounded tail of text, cut at a character boundary.
#[derive(Debug, Clone)]
pub struct TailBuffer {
    buf: String,
    /// Where the kept tail starts in `buf`.
    start: usize,
    max_bytes: usize,
}

impl TailBuffer {
    pub fn new(max_bytes: usize) -> Self {
        TailBuffer {
            buf: String::new(),
            start: 0,
            max_bytes,
        }
    }

    /// Appends `text`; what falls out of the last `max_bytes` is forgotten.
    pub fn push(&mut self, text: &str) {
        let max = self.max_bytes;
        if text.len() >= max {
            self.buf.clear();
            self.buf
                .push_str(&text[ceil_char_boundary(text, text.len() - max)..]);
            self.start = 0;
            return;
        }
        let limit = max.saturating_mul(2);
        if self.buf.len() + text.len() > limit {
            // Keep only what can still be part of the tail after `text`.
            let keep_from = ceil_char_boundary(&self.buf, self.buf.len() + text.len() - max);
            self.buf.drain(..keep_from);
        }
        let needed = self.buf.len() + text.len();
        if needed > self.buf.capacity() {
            let target = super::grown_capacity(self.buf.capacity(), needed, limit);
            self.buf.reserve_exact(target - self.buf.len());
        }
        self.buf.push_str(text);
        self.start = ceil_char_boundary(&self.buf, self.buf.len().saturating_sub(max));
    }

    /// The kept tail: the last `max_bytes` bytes at most, starting at a
    /// character boundary.
    pub fn text(&self) -> &str {
        &self.buf[self.start..]
    }

    /// Length of [`TailBuffer::text`] in bytes.
    pub fn bytes(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Bytes of memory held (the kept tail plus the slack before it).
    pub fn retained_bytes(&self) -> usize {
        self.buf.capacity()
    }
}

/// The smallest character boundary at or after `index`.
fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_bytes_at_a_char_boundary() {
        let mut tail = TailBuffer::new(5);
        tail.push("abc");
        assert_eq!(tail.text(), "abc");
        tail.push("déf");
        // "abcdéf" is 7 bytes; the last 5 are "cdéf".
        assert_eq!(tail.text(), "cdéf");
        tail.push("é");
        assert_eq!(tail.text(), "éfé");
        tail.push("g");
        // The last 5 bytes of "…éfég" start inside the first é.
        assert_eq!(tail.text(), "fég");
        assert_eq!(tail.bytes(), 4);
        tail.push("0123456789");
        assert_eq!(tail.text(), "56789");
    }

    #[test]
    fn memory_stays_within_twice_the_bound() {
        let mut tail = TailBuffer::new(100);
        for i in 0..10_000 {
            tail.push(if i % 3 == 0 { "€uro " } else { "abc\n" });
            assert!(tail.bytes() <= 100);
            assert!(tail.retained_bytes() <= 200, "{}", tail.retained_bytes());
        }
        assert!(tail.text().ends_with("abc\nabc\n€uro "));
    }
}
