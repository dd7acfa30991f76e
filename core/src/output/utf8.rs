//! One step of UTF-8 decoding on raw bytes, for a decoder that never sees
//! the whole input at once.
//!
//! Invalid input is split the way [`String::from_utf8_lossy`] splits it (the
//! Unicode "maximal subpart" rule), so a stream decoded step by step, in any
//! chunking, gives exactly the text the lossy conversion of the whole stream
//! gives.

/// What starts at the beginning of a byte slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// A valid character of this many bytes.
    Char(usize),
    /// An invalid sequence of this many bytes, which reads as one U+FFFD.
    Invalid(usize),
    /// The slice ends inside a character that may still be valid.
    Incomplete,
}

/// Decodes the character at the start of `bytes` (which must not be empty).
#[inline]
pub(crate) fn decode(bytes: &[u8]) -> Decoded {
    let lead = bytes[0];
    // Width, and the range the second byte must be in (it narrows for the
    // leads that would allow overlong forms, surrogates or values past U+10FFFF).
    let (width, second) = match lead {
        0x00..=0x7F => return Decoded::Char(1),
        0xC2..=0xDF => (2, 0x80..=0xBF),
        0xE0 => (3, 0xA0..=0xBF),
        0xE1..=0xEC | 0xEE..=0xEF => (3, 0x80..=0xBF),
        0xED => (3, 0x80..=0x9F),
        0xF0 => (4, 0x90..=0xBF),
        0xF1..=0xF3 => (4, 0x80..=0xBF),
        0xF4 => (4, 0x80..=0x8F),
        _ => return Decoded::Invalid(1),
    };
    for k in 1..width {
        let Some(&b) = bytes.get(k) else {
            return Decoded::Incomplete;
        };
        let fits = if k == 1 {
            second.contains(&b)
        } else {
            (b & 0xC0) == 0x80
        };
        if !fits {
            return Decoded::Invalid(k);
        }
    }
    Decoded::Char(width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_invalid_input_like_from_utf8_lossy() {
        // Every 1- to 3-byte input, and 4-byte ones around the lead bytes
        // with special second-byte ranges.
        let mut inputs: Vec<Vec<u8>> = Vec::new();
        for a in 0..=255u8 {
            inputs.push(vec![a]);
            for b in (0..=255u8).step_by(3) {
                inputs.push(vec![a, b, 0x80]);
                inputs.push(vec![a, b]);
            }
        }
        for lead in [0xE0, 0xED, 0xF0, 0xF4, 0xF5] {
            for b in 0x70..=0xC0u8 {
                inputs.push(vec![lead, b, 0x80, 0x80, b'x']);
            }
        }
        for input in inputs {
            let mut text = String::new();
            let mut i = 0;
            while i < input.len() {
                match decode(&input[i..]) {
                    Decoded::Char(w) => {
                        text.push_str(std::str::from_utf8(&input[i..i + w]).unwrap());
                        i += w;
                    }
                    Decoded::Invalid(n) => {
                        text.push('\u{FFFD}');
                        i += n;
                    }
                    Decoded::Incomplete => {
                        text.push('\u{FFFD}');
                        break;
                    }
                }
            }
            assert_eq!(text, String::from_utf8_lossy(&input), "{input:x?}");
        }
    }
}
