//! Pieces of `__repr__` texts, spelled as Python spells them.

/// `True`/`False`.
pub fn py_bool(value: bool) -> &'static str {
    if value { "True" } else { "False" }
}
