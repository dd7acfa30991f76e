//! Pieces of `__repr__` texts, spelled as Python spells them.

use pyo3::prelude::*;
use pyo3::types::PyString;

/// `True`/`False`.
pub fn py_bool(value: bool) -> &'static str {
    if value { "True" } else { "False" }
}

/// An exit code, or `None` when unknown.
pub fn py_code(exit_code: Option<i32>) -> String {
    exit_code.map_or("None".into(), |c| c.to_string())
}

/// An optional str, quoted as `repr` quotes it, or `None`.
pub fn py_text(py: Python<'_>, value: Option<&str>) -> PyResult<String> {
    match value {
        Some(v) => Ok(PyString::new(py, v).repr()?.to_string()),
        None => Ok("None".into()),
    }
}
