//! Python arguments as core option values: environment mappings, seconds,
//! line counts, snapshot choices. Each value is checked by the core's
//! parser for that option, under the argument's name; a bad one is
//! `conch.InvalidArgumentError` (a `ValueError`). Numbers of any size reach
//! those parsers ([`Seconds`], [`Whole`]): a Python int is unbounded, and
//! a too large one must get the option's own error, not an `OverflowError`
//! about C types.

use std::path::PathBuf;
use std::time::Duration;

use conch_core::JobId;
use conch_core::artifact::ArtifactStore;
use conch_core::input::{
    TimeUnit, count_option, interval_option, max_bytes_option, parse_option, timeout_option,
};
use conch_core::shell::Snapshot;
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyString};

use crate::artifact::PyArtifactStore;
use crate::errors::{guard, invalid, to_py};

/// `{"NAME": "value", ...}` (any mapping with `.items()`, e.g. `os.environ`)
/// as ordered pairs; `None` is empty.
pub fn env_pairs(env: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<(String, String)>> {
    let Some(env) = env else {
        return Ok(Vec::new());
    };
    if env.is_none() {
        return Ok(Vec::new());
    }
    let items = env
        .call_method0("items")
        .map_err(|_| invalid("env must be a mapping of str to str"))?;
    let mut pairs = Vec::new();
    for item in items.try_iter()? {
        let (key, value): (String, String) = item?
            .extract()
            .map_err(|_| invalid("env must be a mapping of str to str"))?;
        pairs.push((key, value));
    }
    Ok(pairs)
}

/// A number of seconds as Python gives it: a float, or an int of any size.
/// An int too large for a float is the infinity of its sign, so the
/// checker refuses it as it refuses `float("inf")`.
#[derive(Clone, Copy)]
pub struct Seconds(pub f64);

impl<'a, 'py> FromPyObject<'a, 'py> for Seconds {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        guard(|| match obj.extract::<f64>() {
            Ok(value) => Ok(Seconds(value)),
            Err(err) if err.is_instance_of::<PyOverflowError>(obj.py()) => {
                let negative = obj.lt(0)?;
                Ok(Seconds(if negative {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }))
            }
            Err(err) => Err(err),
        })
    }
}

/// A whole number as Python gives it: an `int` of any size (a `float` is a
/// `TypeError`, as for any Python API taking an int). One past `i64` goes
/// to the checker as the float nearest to it, as a JavaScript number
/// would: the core decides what a huge count means.
#[derive(Clone, Copy)]
pub enum Whole {
    Int(i64),
    Huge(f64),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Whole {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        guard(|| match obj.extract::<i64>() {
            Ok(n) => Ok(Whole::Int(n)),
            Err(err) if err.is_instance_of::<PyOverflowError>(obj.py()) => {
                Ok(Whole::Huge(obj.extract::<Seconds>()?.0))
            }
            Err(err) => Err(err),
        })
    }
}

/// A timeout in seconds (int or float, > 0) as a duration; `None` stays `None`.
pub fn seconds(name: &str, value: Option<Seconds>) -> PyResult<Option<Duration>> {
    value
        .map(|secs| timeout_option(name, secs.0, TimeUnit::Seconds))
        .transpose()
        .map_err(to_py)
}

/// An interval in seconds (int or float, >= 0) as a duration.
pub fn interval(name: &str, secs: Seconds) -> PyResult<Duration> {
    interval_option(name, secs.0, TimeUnit::Seconds).map_err(to_py)
}

/// A count (`head`, `tail`, an offset, a terminal size): an int >= 0.
pub fn count(name: &str, value: Option<Whole>) -> PyResult<Option<usize>> {
    value
        .map(|n| match n {
            Whole::Int(n) => count_option(name, n),
            Whole::Huge(n) => count_option(name, n),
        })
        .transpose()
        .map_err(to_py)
}

/// A count that must be given (an offset, a terminal size).
pub fn count_of(name: &str, value: Whole) -> PyResult<usize> {
    Ok(count(name, Some(value))?.unwrap_or_default())
}

/// A job id (`Shell.poll(job)`): a count. One larger than any id a session
/// can give (`u32`) is the largest id, which no session reaches, so the
/// core refuses it as it refuses any unknown job.
pub fn job(value: Whole) -> PyResult<JobId> {
    Ok(JobId::try_from(count_of("job", value)?).unwrap_or(JobId::MAX))
}

/// A terminal size (`cols`, `rows`): a count, which the terminal clamps to
/// what it supports (so any count above `u16` is its largest size).
pub fn cells(name: &str, value: Whole) -> PyResult<u16> {
    Ok(u16::try_from(count_of(name, value)?).unwrap_or(u16::MAX))
}

/// `max_bytes=`: an int >= 1.
pub fn max_bytes(value: Whole) -> PyResult<usize> {
    match value {
        Whole::Int(n) => max_bytes_option("max_bytes", n),
        Whole::Huge(n) => max_bytes_option("max_bytes", n),
    }
    .map_err(to_py)
}

/// `snapshot=`: `"auto"` (the user's rc, captured once), `None` or
/// `"none"` (a clean bash), or the path of a snapshot file (str or
/// `os.PathLike`); a str is read by the core's parser.
#[derive(Default)]
pub struct SnapshotArg(pub Snapshot);

impl<'a, 'py> FromPyObject<'a, 'py> for SnapshotArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        guard(|| {
            if obj.is_none() {
                return Ok(SnapshotArg(Snapshot::None));
            }
            if let Ok(text) = obj.cast::<PyString>() {
                return parse_option("snapshot", text.to_str()?)
                    .map(SnapshotArg)
                    .map_err(to_py);
            }
            let path: PathBuf = obj
                .extract()
                .map_err(|_| invalid("snapshot must be \"auto\", None or a path"))?;
            Ok(SnapshotArg(Snapshot::Path(path)))
        })
    }
}

/// `options` (a call's keyword arguments) with the value given for `key`
/// (`None` included) replaced by `respell(value)`: a Python spelling the
/// core reads in another form.
fn respelled<'py>(
    options: Option<&Bound<'py, PyDict>>,
    key: &str,
    respell: impl FnOnce(Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(options) = options else {
        return Ok(None);
    };
    let options = options.copy()?;
    if let Some(value) = options.get_item(key)? {
        options.set_item(key, respell(value)?)?;
    }
    Ok(Some(options))
}

/// The keyword arguments of `Shell` with Python's `snapshot=None` (a clean
/// bash) as `"none"`: the core reads `null` as the default.
pub fn snapshot_none<'py>(
    py: Python<'py>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    respelled(options, "snapshot", |value| {
        Ok(match value.is_none() {
            true => PyString::new(py, "none").into_any(),
            false => value,
        })
    })
}

/// The keyword arguments of `BashTool` with its `rules` read as the local
/// tool reads them (any mapping per rule, the same errors) and given as
/// dicts, which cross the wire as JSON objects.
pub fn rules_read<'py>(
    py: Python<'py>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    respelled(options, "rules", |rules| {
        if rules.is_none() {
            return Ok(rules);
        }
        let rules: Vec<Bound<'py, PyAny>> = rules.extract()?;
        let rules = rules
            .iter()
            .map(crate::command::rule_from_py)
            .collect::<PyResult<Vec<_>>>()?;
        crate::result::plain(py, &rules)
    })
}

/// The keyword arguments of `Shell.start` with Python's `pty=(cols, rows)`
/// as the core reads a terminal size, `{"cols": …, "rows": …}`.
pub fn pty_pair<'py>(
    py: Python<'py>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    respelled(options, "pty", |pty| {
        if pty.is_none() {
            return Ok(pty);
        }
        let pair: Vec<Bound<'py, PyAny>> = match pty.cast::<PyString>() {
            Ok(_) => Vec::new(),
            Err(_) => pty.extract().unwrap_or_default(),
        };
        let [cols, rows] = &pair[..] else {
            return Err(PyTypeError::new_err(
                "pty must be a (cols, rows) pair of ints, or None",
            ));
        };
        let size = PyDict::new(py);
        size.set_item("cols", cols)?;
        size.set_item("rows", rows)?;
        Ok(size.into_any())
    })
}

/// `artifacts_dir=`: a directory (str or `os.PathLike`) or a
/// `conch.ArtifactStore` (share one store between shells so their ids do
/// not collide); `None`: the process's private directory. A directory that
/// cannot be created or written is an error here (the core checks it).
pub fn artifacts(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<ArtifactStore>> {
    let dir = match value {
        Some(value) if !value.is_none() => {
            if let Ok(store) = value.cast::<PyArtifactStore>() {
                return Ok(Some(store.get().inner.clone()));
            }
            let dir: PathBuf = value
                .extract()
                .map_err(|_| invalid("artifacts_dir must be a path or a conch.ArtifactStore"))?;
            Some(dir)
        }
        _ => None,
    };
    ArtifactStore::for_option(dir).map(Some).map_err(to_py)
}

/// `on_chunk=`/`on_update=`: a callable or `None`.
pub fn callback<'py>(
    name: &str,
    value: Option<Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    match value {
        Some(f) if f.is_none() => Ok(None),
        Some(f) if !f.is_callable() => {
            Err(PyTypeError::new_err(format!("{name} must be callable")))
        }
        other => Ok(other),
    }
}

/// Input for a process (`write(data)`): a `str` (sent as UTF-8), `bytes`,
/// or anything else that converts to bytes (`bytearray`, a list of ints).
pub fn input_bytes(data: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(text) = data.cast::<PyString>() {
        Ok(text.to_str()?.as_bytes().to_vec())
    } else if let Ok(bytes) = data.cast::<PyBytes>() {
        Ok(bytes.as_bytes().to_vec())
    } else {
        data.extract()
    }
}

/// `signal=`: a name (`"TERM"`, `"SIGINT"`) as it is, or an int as its
/// decimal text (`15` is `"15"`); the core's `signal_option` reads either.
/// A `bool` is no signal number (`True` is not `1` here).
pub fn signal_text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(text.to_str()?.to_owned());
    }
    if value.cast::<PyInt>().is_ok() && value.cast::<PyBool>().is_err() {
        return Ok(value.str()?.to_str()?.to_owned());
    }
    Err(PyTypeError::new_err(format!(
        "signal must be a str or an int, not {}",
        value.get_type().name()?
    )))
}
