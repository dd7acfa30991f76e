//! Streaming UTF-8 decoding of terminal output that keeps escape sequences.
//!
//! A PTY chunk goes to the host raw (the host renders colors and cursor
//! moves), so it cannot go through the sanitizer; but it must be text, and a
//! character split across two reads must arrive whole, not as two U+FFFD.

/// Decodes bytes in any chunking; invalid sequences become U+FFFD (one per
/// maximal invalid subpart, as [`String::from_utf8_lossy`] does).
#[derive(Debug, Default)]
pub(crate) struct Utf8Stream {
    /// An incomplete sequence at the end of the previous push (≤ 3 bytes).
    carry: Vec<u8>,
}

impl Utf8Stream {
    /// Appends the text of `bytes` to `out`, holding back an incomplete
    /// sequence at the end until the next push.
    pub(crate) fn push(&mut self, bytes: &[u8], out: &mut String) {
        if self.carry.is_empty() {
            self.decode(bytes, out);
        } else {
            let mut joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(bytes);
            self.decode(&joined, out);
        }
    }

    /// End of stream: an incomplete sequence becomes U+FFFD.
    pub(crate) fn finish(&mut self, out: &mut String) {
        if !self.carry.is_empty() {
            self.carry.clear();
            out.push('\u{FFFD}');
        }
    }

    fn decode(&mut self, mut rest: &[u8], out: &mut String) {
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    out.push_str(text);
                    return;
                }
                Err(e) => {
                    let (valid, invalid) = rest.split_at(e.valid_up_to());
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(len) => {
                            out.push('\u{FFFD}');
                            rest = &invalid[len..];
                        }
                        None => {
                            self.carry.extend_from_slice(invalid);
                            return;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_split_gives_the_lossy_text() {
        let input: &[u8] = b"a\xc3\xa9b\xe2\x82\xac\xff\xf0\x9f\x98\x80c\xe2\x82";
        let expect = String::from_utf8_lossy(input).into_owned();
        for cut in 0..=input.len() {
            for cut2 in cut..=input.len() {
                let mut d = Utf8Stream::default();
                let mut out = String::new();
                d.push(&input[..cut], &mut out);
                d.push(&input[cut..cut2], &mut out);
                d.push(&input[cut2..], &mut out);
                d.finish(&mut out);
                assert_eq!(out, expect, "cuts at {cut}, {cut2}");
            }
        }
    }

    #[test]
    fn escapes_are_kept() {
        let mut d = Utf8Stream::default();
        let mut out = String::new();
        d.push(b"\x1b[31mred\x1b[0m\r\n", &mut out);
        assert_eq!(out, "\x1b[31mred\x1b[0m\r\n");
    }
}
