//! Keyword arguments as the core's option types (`ShellOptions`,
//! `RunOptions`, `JobOptions`), read by their serde derives through
//! `pythonize`: the binding names no option, so an option the core adds is
//! a keyword argument here with no change. Only what cannot be serialized
//! (callables, cancel tokens, `conch.ArtifactStore` objects) is taken
//! apart by the caller before.
//!
//! Errors are Python's usual ones: a name the core type does not read is a
//! `TypeError` as for any unexpected keyword argument, a value of the wrong
//! type a `TypeError` naming the option, and a value the core's check
//! refuses `conch.InvalidArgumentError` (a `ValueError`) with the core's
//! text, `<name> must be …, got …`.

use conch_core::wire;
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::errors::invalid;

/// The options `given` to `call`, with the `fixed` ones its positional
/// parameters gave (`command`), as `T`.
pub fn read<T: DeserializeOwned + JsonSchema>(
    py: Python<'_>,
    call: &str,
    given: Option<&Bound<'_, PyDict>>,
    fixed: &[(&str, Bound<'_, PyAny>)],
) -> PyResult<T> {
    let props = wire::option_properties::<T>();
    let all = PyDict::new(py);
    for (key, value) in fixed {
        all.set_item(key, plain(value)?)?;
    }
    let mut named = Vec::new();
    for (key, value) in given.into_iter().flat_map(|dict| dict.iter()) {
        let name: String = key.extract()?;
        let Some(prop) = props
            .get(&name)
            .filter(|_| fixed.iter().all(|(k, _)| *k != name))
        else {
            return Err(PyTypeError::new_err(format!(
                "{call}() got an unexpected keyword argument '{name}'"
            )));
        };
        // `pythonize` reads any object as a bool by its truth; an option
        // that is a bool takes only `True` or `False`, as on every face.
        if prop["type"] == "boolean" && !value.is_instance_of::<PyBool>() {
            return Err(PyTypeError::new_err(format!(
                "{name}: invalid type: {}, expected a boolean",
                value.get_type().name()?
            )));
        }
        all.set_item(&name, plain(&value)?)?;
        named.push((name, value));
    }
    pythonize::depythonize::<T>(all.as_any()).map_err(|err| {
        // Which option it was, for a type error (serde's text names none):
        // the first that is refused alone.
        let culprit = named.iter().find(|(name, value)| {
            let one = PyDict::new(py);
            let refused = fixed
                .iter()
                .map(|(k, v)| one.set_item(k, plain(v)?))
                .chain([plain(value).and_then(|v| one.set_item(name, v))])
                .collect::<PyResult<()>>()
                .is_err();
            refused || pythonize::depythonize::<T>(one.as_any()).is_err()
        });
        refused(py, err, culprit.map(|(name, _)| name.as_str()))
    })
}

/// The Python error for what `pythonize` refused.
fn refused(py: Python<'_>, err: pythonize::PythonizeError, name: Option<&str>) -> PyErr {
    let text = err.to_string();
    let err = PyErr::from(err);
    let named = || match name {
        Some(name) if !text.starts_with(name) => format!("{name}: {text}"),
        _ => text.clone(),
    };
    if err.is_instance_of::<PyTypeError>(py)
        || text.starts_with("invalid type")
        || text.starts_with("invalid length")
    {
        PyTypeError::new_err(named())
    } else if err.get_type(py).is(py.get_type::<PyException>()) {
        // A core check's text, which names its option already.
        invalid(named())
    } else {
        err
    }
}

/// `value` in the shapes `pythonize` reads: a path (`os.PathLike`) as its
/// text, a mapping (`os.environ`) as a dict, a tuple as a list, an int past
/// 64 bits as the float nearest to it (the core's check then refuses it
/// with its own text, as for a JavaScript number).
fn plain<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    if value.is_none() || value.cast::<PyString>().is_ok() || value.cast::<PyFloat>().is_ok() {
        return Ok(value.clone());
    }
    if let Ok(int) = value.cast::<PyInt>() {
        if int.extract::<i64>().is_ok() || value.is_instance_of::<PyBool>() {
            return Ok(value.clone());
        }
        let huge = int.extract::<f64>().unwrap_or(if value.lt(0)? {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
        return Ok(PyFloat::new(py, huge).into_any());
    }
    if value.hasattr("__fspath__")? {
        return py.import("os")?.call_method1("fspath", (value,));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let out = PyDict::new(py);
        for (key, item) in dict.iter() {
            out.set_item(key, plain(&item)?)?;
        }
        return Ok(out.into_any());
    }
    if value.cast::<PyList>().is_ok() || value.cast::<PyTuple>().is_ok() {
        let items = value
            .try_iter()?
            .map(|item| plain(&item?))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(PyList::new(py, items)?.into_any());
    }
    if value.hasattr("items")? && value.hasattr("keys")? {
        return plain(&PyDict::from_sequence(&value.call_method0("items")?)?.into_any());
    }
    Ok(value.clone())
}
