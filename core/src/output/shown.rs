//! [`Shown`]: the text one push of output gives its reader, in pieces.
//!
//! The terminal's view of carriage returns holds the line being written
//! until its end arrives, so the lines a chunk ends are the held line, then
//! the chunk's own whole lines, then (after a `\r`) lines rewritten in
//! place. Handing them out as pieces lets the middle one be the chunk's
//! bytes as read, not a copy: the view then costs a plain stream nothing
//! but its first and last lines.

use std::fmt;

/// The text of one push, as the model reads it: its pieces, in order,
/// are one text (a callback gets each in turn, as it would get chunks).
#[derive(Debug, Clone, Copy, Default)]
pub struct Shown<'a> {
    pieces: [&'a str; 3],
}

impl<'a> Shown<'a> {
    pub(crate) fn new(pieces: [&'a str; 3]) -> Self {
        Shown { pieces }
    }

    /// The pieces that hold text, in order.
    pub fn pieces(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.pieces.into_iter().filter(|p| !p.is_empty())
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.pieces().try_for_each(|p| f.write_str(p))
    }
}

/// The same text, however it is cut into pieces.
impl PartialEq<&str> for Shown<'_> {
    fn eq(&self, other: &&str) -> bool {
        let mut rest = *other;
        for piece in self.pieces() {
            match rest.strip_prefix(piece) {
                Some(after) => rest = after,
                None => return false,
            }
        }
        rest.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_read_as_one_text() {
        let shown = Shown::new(["held line\n", "", "a\nb\n"]);
        assert_eq!(shown.pieces().count(), 2);
        assert_eq!(shown.to_string(), "held line\na\nb\n");
        assert_eq!(shown, "held line\na\nb\n");
        assert!(shown != "held line\na\n");
        assert!(shown != "held line\na\nb\nc");
        assert!(Shown::default().pieces().next().is_none());
        assert!(Shown::new(["", "x", ""]) == "x");
    }
}
