//! Python text signatures (`inspect.signature`, `help()`) whose defaults are
//! the core's, read from its table (`conch_core::option_default!`), never
//! written again here.
//!
//! PyO3 takes `text_signature` only as a string literal, so the functions
//! whose defaults come from the core set `text_signature = None` and start
//! their doc with the signature instead, built with `concat!`: CPython reads
//! `name(...)\n--\n\n` at the start of a builtin's doc as its signature
//! (PyO3 puts its own there the same way). [`text_signature!`] ends the
//! signature with `\n--\n`; the doc comment that must follow adds the last
//! line break.

/// A row of the core's table as Python source: `'auto'`, `51200`, `True`.
macro_rules! py_default {
    ($name:ident) => {
        conch_core::option_default!($name => $crate::signature::py_literal)
    };
}
pub(crate) use py_default;

/// A default of the given kind as Python source.
macro_rules! py_literal {
    (str $value:literal) => {
        concat!("'", $value, "'")
    };
    (num $value:literal) => {
        $value
    };
    (bool true) => {
        "True"
    };
    (bool false) => {
        "False"
    };
}
pub(crate) use py_literal;

/// The signature line a doc starts with: `text_signature!("name(", …, ")")`
/// concatenates its parts (literals and [`py_default!`]s) and adds the
/// marker CPython looks for. Follow it with the doc comment.
macro_rules! text_signature {
    ($($part:expr),+ $(,)?) => {
        concat!($($part),+, "\n--\n")
    };
}
pub(crate) use text_signature;
