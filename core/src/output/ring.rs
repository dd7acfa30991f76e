//! Fixed-capacity ring of bytes: the sink's tail.
//!
//! The sink keeps the last bytes of a stream that may be gigabytes long. A
//! ring never moves what it holds (a sliding buffer would shift up to its
//! whole size for every small chunk) and never holds more than its capacity.
//! Memory is taken as the stream grows, so a short command costs little.

#[derive(Debug, Clone)]
pub(crate) struct Ring {
    buf: Vec<u8>,
    capacity: usize,
    /// Index of the oldest byte once the ring is full.
    oldest: usize,
    /// Bytes ever pushed.
    seen: u64,
}

impl Ring {
    pub(crate) fn new(capacity: usize) -> Self {
        Ring {
            buf: Vec::new(),
            capacity,
            oldest: 0,
            seen: 0,
        }
    }

    /// Bytes ever pushed (kept or not).
    pub(crate) fn seen(&self) -> u64 {
        self.seen
    }

    /// Bytes of memory held.
    pub(crate) fn retained_bytes(&self) -> usize {
        self.buf.capacity()
    }

    pub(crate) fn push(&mut self, mut data: &[u8]) {
        self.seen += data.len() as u64;
        let cap = self.capacity;
        if self.buf.len() < cap {
            let take = data.len().min(cap - self.buf.len());
            let needed = self.buf.len() + take;
            if needed > self.buf.capacity() {
                let target = super::grown_capacity(self.buf.capacity(), needed, cap);
                self.buf.reserve_exact(target - self.buf.len());
            }
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if data.is_empty() {
                return;
            }
        }
        if data.len() >= cap {
            self.buf.copy_from_slice(&data[data.len() - cap..]);
            self.oldest = 0;
            return;
        }
        let first = data.len().min(cap - self.oldest);
        self.buf[self.oldest..self.oldest + first].copy_from_slice(&data[..first]);
        self.buf[..data.len() - first].copy_from_slice(&data[first..]);
        self.oldest = (self.oldest + data.len()) % cap;
    }

    /// The kept bytes in stream order, as two slices.
    pub(crate) fn as_slices(&self) -> (&[u8], &[u8]) {
        let (newer, older) = self.buf.split_at(self.oldest);
        (older, newer)
    }

    /// The kept bytes from stream offset `from` to the end, at most the
    /// last `max` of them, and the offset they start at.
    pub(crate) fn read_from(&self, from: u64, max: usize) -> (u64, Vec<u8>) {
        let first_kept = self.seen - self.buf.len() as u64;
        let newest = self.seen.saturating_sub(max as u64);
        let start = from.max(first_kept).max(newest).min(self.seen);
        let skip = (start - first_kept) as usize;
        let (a, b) = self.as_slices();
        let bytes = a.iter().chain(b).skip(skip).copied().collect();
        (start, bytes)
    }

    /// The kept bytes in stream order, in one buffer.
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let (a, b) = self.as_slices();
        [a, b].concat()
    }

    /// The text of a ring kept one byte larger than the window it shows:
    /// that byte, the one before the window, tells whether the window
    /// starts a line. All of it when nothing was pushed out; else the
    /// window from its first line start when it holds a line break with
    /// text after it, otherwise (the end of one long line) from its first
    /// character boundary, so a single huge line is still shown, cut. With
    /// it, whether the text starts a line (what went before ended one).
    pub(crate) fn tail_text(&self) -> (String, bool) {
        let bytes = self.to_vec();
        if self.seen < self.capacity as u64 {
            return (String::from_utf8_lossy(&bytes).into_owned(), true);
        }
        let (context, window) = bytes.split_first().unwrap_or((&b'\n', &[]));
        let start = if *context == b'\n' {
            0
        } else {
            let boundary = window
                .iter()
                .position(|&b| (b & 0xC0) != 0x80)
                .unwrap_or(window.len());
            match window[boundary..].iter().position(|&b| b == b'\n') {
                Some(i) if boundary + i + 1 < window.len() => boundary + i + 1,
                _ => boundary,
            }
        };
        let starts_line = match start {
            0 => *context == b'\n',
            _ => window[start - 1] == b'\n',
        };
        let text = String::from_utf8_lossy(&window[start..]).into_owned();
        (text, starts_line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_capacity_bytes_in_order() {
        let mut ring = Ring::new(5);
        ring.push(b"ab");
        assert_eq!(ring.to_vec(), b"ab");
        ring.push(b"cdefg");
        assert_eq!(ring.to_vec(), b"cdefg");
        ring.push(b"hi");
        assert_eq!(ring.to_vec(), b"efghi");
        ring.push(b"jklm");
        assert_eq!(ring.to_vec(), b"ijklm");
        ring.push(b"0123456789");
        assert_eq!(ring.to_vec(), b"56789");
        ring.push(b"");
        assert_eq!(ring.seen(), 23);
        assert_eq!(ring.retained_bytes(), 5);
    }

    #[test]
    fn reads_from_a_stream_offset_within_what_is_kept() {
        let mut ring = Ring::new(5);
        ring.push(b"abcdefg");
        assert_eq!(ring.read_from(0, 10), (2, b"cdefg".to_vec()));
        assert_eq!(ring.read_from(4, 10), (4, b"efg".to_vec()));
        assert_eq!(ring.read_from(4, 2), (5, b"fg".to_vec()));
        assert_eq!(ring.read_from(9, 2), (7, Vec::new()));
        ring.push(b"hi");
        assert_eq!(ring.read_from(5, 10), (5, b"fghi".to_vec()));
    }

    #[test]
    fn zero_capacity_keeps_nothing() {
        let mut ring = Ring::new(0);
        ring.push(b"abc");
        assert!(ring.to_vec().is_empty());
        assert_eq!(ring.seen(), 3);
    }
}
