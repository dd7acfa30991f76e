//! `sandbox=`: the sandbox a Python host puts around a session, as the
//! core's [`Sandbox`]. A dict of the policy's fields (snake_case, as in the
//! core), `True` or `{}` for the strict default, `None` or `False` for none.
//! Every value is checked by the core's parser of that option under its
//! Python name (`sandbox.limits.cpu_seconds`); a key the policy does not
//! have is an error, never ignored (a misspelt limit must not vanish).

use std::path::PathBuf;

use conch_core::input::parse_option;
use conch_core::input::{limit_option, port_option};
use conch_core::{Limits, Network, Sandbox};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString};

use crate::convert::Whole;
use crate::errors::{invalid, to_py};

/// The name the options of a sandbox have in errors.
const NAME: &str = "sandbox";

/// `sandbox=` as the core's policy; `None` (or `False`): no sandbox.
pub fn sandbox(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Sandbox>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(flag.is_true().then(Sandbox::default));
    }
    let mut policy = Sandbox::default();
    for (key, value) in fields(value, NAME)? {
        let name = format!("{NAME}.{key}");
        match key.as_str() {
            "writable" => policy.writable = paths(&value, &name)?.unwrap_or_default(),
            "readable" => policy.readable = paths(&value, &name)?,
            "network" => policy.network = network(&value, &name)?,
            "allow_tcp_ports" => policy.allow_tcp_ports = ports(&value, &name)?,
            "limits" => policy.limits = limits(&value, &name)?,
            "best_effort" => policy.best_effort = flag(&value, &name)?,
            _ => return Err(not_an_option(&name)),
        }
    }
    Ok(Some(policy))
}

fn not_an_option(name: &str) -> PyErr {
    invalid(format!("{name} is not an option"))
}

/// The `(key, value)` pairs of a mapping (a dict, or anything with
/// `.items()`), the keys str; a `None` value is left out (the default).
fn fields<'py>(
    value: &Bound<'py, PyAny>,
    name: &str,
) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
    let not_a_dict = || {
        invalid(format!(
            "{name} must be a dict, True, False or None, got {}",
            shown(value)
        ))
    };
    let items = value.call_method0("items").map_err(|_| not_a_dict())?;
    let mut pairs = Vec::new();
    for item in items.try_iter().map_err(|_| not_a_dict())? {
        let (key, value): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item?.extract()?;
        let key = key
            .cast::<PyString>()
            .map_err(|_| invalid(format!("{name} keys must be str, got {}", shown(&key))))?
            .to_str()?
            .to_owned();
        if !value.is_none() {
            pairs.push((key, value));
        }
    }
    Ok(pairs)
}

/// `repr(value)`, as an error shows what it got.
fn shown(value: &Bound<'_, PyAny>) -> String {
    value
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

/// The items of a list or tuple (not a str: a str is one path, not many).
fn list<'py>(value: &Bound<'py, PyAny>, name: &str, of: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let wrong = || {
        invalid(format!(
            "{name} must be a list of {of}, got {}",
            shown(value)
        ))
    };
    if value.cast::<PyString>().is_ok() {
        return Err(wrong());
    }
    let items = value.try_iter().map_err(|_| wrong())?;
    items.collect()
}

/// A list of paths (str or `os.PathLike`).
fn paths(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<Vec<PathBuf>>> {
    list(value, name, "paths")?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            item.extract::<PathBuf>()
                .map_err(|_| invalid(format!("{name}[{i}] must be a path, got {}", shown(item))))
        })
        .collect::<PyResult<_>>()
        .map(Some)
}

/// `"allow"` or `"deny"`, read by the core's parser.
fn network(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Network> {
    let text = value
        .cast::<PyString>()
        .map_err(|_| invalid(format!("{name} must be a str, got {}", shown(value))))?;
    parse_option(name, text.to_str()?).map_err(to_py)
}

/// A whole number as the core's checkers take it; `name` for its error.
fn whole(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Whole> {
    if value.cast::<PyBool>().is_ok() {
        return Err(invalid(format!(
            "{name} must be an int, got {}",
            shown(value)
        )));
    }
    value
        .extract()
        .map_err(|_| invalid(format!("{name} must be an int, got {}", shown(value))))
}

fn ports(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<u16>> {
    list(value, name, "ints")?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let name = format!("{name}[{i}]");
            match whole(item, &name)? {
                Whole::Int(n) => port_option(&name, n),
                Whole::Huge(n) => port_option(&name, n),
            }
            .map_err(to_py)
        })
        .collect()
}

fn limits(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Limits> {
    let mut limits = Limits::default();
    for (key, value) in fields(value, name)? {
        let name = format!("{name}.{key}");
        let slot = match key.as_str() {
            "cpu_seconds" => &mut limits.cpu_seconds,
            "memory_bytes" => &mut limits.memory_bytes,
            "file_size_bytes" => &mut limits.file_size_bytes,
            "open_files" => &mut limits.open_files,
            "processes" => &mut limits.processes,
            "session_memory_bytes" => &mut limits.session_memory_bytes,
            _ => return Err(not_an_option(&name)),
        };
        let limit = match whole(&value, &name)? {
            Whole::Int(n) => limit_option(&name, n),
            Whole::Huge(n) => limit_option(&name, n),
        };
        *slot = Some(limit.map_err(to_py)?);
    }
    Ok(limits)
}

fn flag(value: &Bound<'_, PyAny>, name: &str) -> PyResult<bool> {
    value.cast::<PyBool>().map(|b| b.is_true()).map_err(|_| {
        invalid(format!(
            "{name} must be True or False, got {}",
            shown(value)
        ))
    })
}
