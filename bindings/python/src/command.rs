//! Command text helpers: head/tail extraction, the interceptor, sanitizing.

use std::sync::Mutex;

use conch_core::command::intercept::{self, Rule};
use conch_core::command::normalize;
use conch_core::output::{Sanitizer, sanitize_text as core_sanitize};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::convert::{Whole, count};
use crate::errors::{guard, invalid, to_py};

/// A command with its trailing ``| head``/``| tail`` stages taken off:
/// run ``command``, then keep the first ``head_lines`` lines of the whole
/// output, then the last ``tail_lines`` (``None``: no limit).
#[pyclass(frozen, eq, get_all, module = "conch", name = "NormalizedCommand")]
#[derive(Clone, PartialEq, Eq)]
pub struct PyNormalizedCommand {
    pub command: String,
    pub head_lines: Option<usize>,
    pub tail_lines: Option<usize>,
}

#[pymethods]
impl PyNormalizedCommand {
    #[new]
    #[pyo3(signature = (command, head_lines=None, tail_lines=None))]
    fn new(
        command: String,
        head_lines: Option<Whole>,
        tail_lines: Option<Whole>,
    ) -> PyResult<Self> {
        guard(|| {
            Ok(PyNormalizedCommand {
                command,
                head_lines: count("head_lines", head_lines)?,
                tail_lines: count("tail_lines", tail_lines)?,
            })
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        guard(|| {
            let opt = |n: Option<usize>| n.map_or("None".to_string(), |n| n.to_string());
            Ok(format!(
                "NormalizedCommand(command={}, head_lines={}, tail_lines={})",
                PyString::new(py, &self.command).repr()?,
                opt(self.head_lines),
                opt(self.tail_lines)
            ))
        })
    }
}

/// Takes a final ``| head -n N`` / ``| tail -n N`` (also ``-N``,
/// ``--lines=N``) off ``command``, understanding quotes, ``||``, heredocs
/// and comments; anything else (``head -c``, ``tail -f``, ``tail -n +N``,
/// a stage in the middle) is left alone. The command is trimmed.
#[pyfunction]
pub fn normalize_bash_command(command: &str) -> PyResult<PyNormalizedCommand> {
    guard(|| {
        let n = normalize::normalize_bash_command(command);
        Ok(PyNormalizedCommand {
            command: n.command,
            head_lines: n.head_lines,
            tail_lines: n.tail_lines,
        })
    })
}

/// Keeps the first ``head`` lines of ``text``, then the last ``tail`` lines
/// of what is left, as ``head -n H | tail -n T`` would.
#[pyfunction]
#[pyo3(signature = (text, head=None, tail=None))]
pub fn apply_head_tail(text: &str, head: Option<Whole>, tail: Option<Whole>) -> PyResult<String> {
    guard(|| {
        Ok(normalize::apply_head_tail(
            text,
            count("head", head)?,
            count("tail", tail)?,
        ))
    })
}

/// A blocked command: ``message`` is ``"Blocked: <why>\n\nOriginal
/// command: <command>"``, ``suggested_tool`` the host tool to use instead.
#[pyclass(frozen, eq, get_all, module = "conch", name = "Interception")]
#[derive(Clone, PartialEq, Eq)]
pub struct PyInterception {
    pub blocked: bool,
    pub message: String,
    pub suggested_tool: String,
}

#[pymethods]
impl PyInterception {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        guard(|| {
            Ok(format!(
                "Interception(blocked={}, message={}, suggested_tool={})",
                crate::repr::py_bool(self.blocked),
                PyString::new(py, &self.message).repr()?,
                PyString::new(py, &self.suggested_tool).repr()?
            ))
        })
    }
}

/// Checks ``command`` against interceptor ``rules`` (default:
/// ``default_interceptor_rules()``) for a host whose tools are
/// ``tool_names``: a rule applies only when its ``tool`` is among them.
/// Returns a ``conch.Interception`` for the first rule that matches a
/// simple command of the line (``cd x && cat f`` is seen), else ``None``.
/// Each rule is a dict ``{"pattern": regex, "flags"?: "imsx", "tool": str,
/// "message": str}``; an invalid rule raises ``conch.InvalidArgumentError``.
#[pyfunction]
#[pyo3(signature = (command, tool_names, rules=None))]
pub fn check_bash_interception(
    command: &str,
    tool_names: Vec<String>,
    rules: Option<Vec<Bound<'_, PyAny>>>,
) -> PyResult<Option<PyInterception>> {
    guard(|| {
        let rules = rules
            .map(|rules| rules.iter().map(rule_from_py).collect::<PyResult<Vec<_>>>())
            .transpose()?;
        let hit = intercept::check_bash_interception(command, &tool_names, rules.as_deref())
            .map_err(to_py)?;
        Ok(hit.map(|i| PyInterception {
            blocked: i.blocked,
            message: i.message,
            suggested_tool: i.suggested_tool,
        }))
    })
}

/// The default interceptor rules, as dicts ``{"pattern", "flags", "tool",
/// "message"}`` (edit and pass them to ``check_bash_interception``).
#[pyfunction]
pub fn default_interceptor_rules(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    guard(|| {
        intercept::default_rules()
            .into_iter()
            .map(|rule| rule_to_py(py, rule))
            .collect()
    })
}

pub fn rule_to_py(py: Python<'_>, rule: Rule) -> PyResult<Bound<'_, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("pattern", rule.pattern)?;
    dict.set_item("flags", rule.flags)?;
    dict.set_item("tool", rule.tool)?;
    dict.set_item("message", rule.message)?;
    Ok(dict)
}

/// A rule from a mapping with `pattern`, `tool`, `message` and optional
/// `flags` (other keys are ignored, as in hosts' rule files).
pub fn rule_from_py(value: &Bound<'_, PyAny>) -> PyResult<Rule> {
    let field = |key: &str| -> PyResult<Option<String>> {
        match value.get_item(key) {
            Ok(v) if v.is_none() => Ok(None),
            Ok(v) => v
                .extract::<String>()
                .map(Some)
                .map_err(|_| invalid(format!("interceptor rule field {key:?} must be a str"))),
            Err(_) => Ok(None),
        }
    };
    let required = |key: &str| -> PyResult<String> {
        field(key)?.ok_or_else(|| invalid(format!("interceptor rule needs a {key:?} field")))
    };
    Ok(Rule {
        pattern: required("pattern")?,
        flags: field("flags")?,
        tool: required("tool")?,
        message: required("message")?,
    })
}

/// Text as bytes: `str` as UTF-8, `bytes`-like as is.
fn input_bytes<'a>(value: &'a Bound<'_, PyAny>) -> PyResult<std::borrow::Cow<'a, [u8]>> {
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(std::borrow::Cow::Borrowed(text.to_str()?.as_bytes()));
    }
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(std::borrow::Cow::Borrowed(bytes.as_bytes()));
    }
    value
        .extract::<Vec<u8>>()
        .map(std::borrow::Cow::Owned)
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err("expected str or bytes-like"))
}

/// Cleans terminal output for a model: strips ANSI escape sequences (CSI,
/// OSC, DCS, APC) and control characters except ``\n`` and ``\t``; ``\r\n``
/// and a lone ``\r`` become ``\n``. ``bytes`` are decoded as UTF-8 with
/// invalid sequences replaced by U+FFFD.
#[pyfunction]
pub fn sanitize_text(text: &Bound<'_, PyAny>) -> PyResult<String> {
    guard(|| {
        if let Ok(text) = text.cast::<PyString>() {
            return Ok(core_sanitize(text.to_str()?));
        }
        let bytes = input_bytes(text)?;
        let mut out = String::with_capacity(bytes.len());
        let mut sanitizer = Sanitizer::new();
        sanitizer.push(&bytes, &mut out);
        sanitizer.finish(&mut out);
        Ok(out)
    })
}

/// ``sanitize_text`` for a stream that arrives in pieces: escape sequences,
/// ``\r\n`` pairs and UTF-8 characters split across pieces are handled.
/// ``push(data)`` returns the clean text so far; ``finish()`` the rest.
#[pyclass(frozen, module = "conch", name = "Sanitizer")]
pub struct PySanitizer {
    inner: Mutex<Sanitizer>,
}

#[pymethods]
impl PySanitizer {
    #[new]
    fn new() -> PyResult<Self> {
        guard(|| {
            Ok(PySanitizer {
                inner: Mutex::new(Sanitizer::new()),
            })
        })
    }

    /// Feeds ``data`` (str or bytes) and returns the clean text it completes.
    fn push(&self, data: &Bound<'_, PyAny>) -> PyResult<String> {
        guard(|| {
            let bytes = input_bytes(data)?;
            let mut out = String::with_capacity(bytes.len());
            self.inner
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(&bytes, &mut out);
            Ok(out)
        })
    }

    /// Ends the stream: returns what was held back (an incomplete UTF-8
    /// sequence becomes U+FFFD). The sanitizer is then as new.
    fn finish(&self) -> PyResult<String> {
        guard(|| {
            let mut out = String::new();
            self.inner
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .finish(&mut out);
            Ok(out)
        })
    }
}
