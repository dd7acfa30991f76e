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

    /// The kept bytes in stream order, in one buffer.
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let (a, b) = self.as_slices();
        [a, b].concat()
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
    fn zero_capacity_keeps_nothing() {
        let mut ring = Ring::new(0);
        ring.push(b"abc");
        assert!(ring.to_vec().is_empty());
        assert_eq!(ring.seen(), 3);
    }
}
