//! Keyword arguments as the core's option types (`ShellOptions`,
//! `RunOptions`, `JobOptions`, `ExecuteOptions`) and `sandbox=` as the
//! core's `SandboxOption`, read by their serde derives from [`Given`]
//! values (`conch_core::wire::read_options`): the binding names no option,
//! so an option the core adds is a keyword argument here with no change.
//! Only what cannot be serialized (callables, cancel tokens,
//! `conch.ArtifactStore` objects) is taken apart by the caller before.
//!
//! Errors are Python's usual ones: a name the core type does not read is a
//! `TypeError` as for any unexpected keyword argument, a value of the wrong
//! type a `TypeError` naming the option by its path
//! (`sandbox.writable: invalid type: …`), and a value the core's check
//! refuses `conch.InvalidArgumentError` (a `ValueError`) with the core's
//! text, `<name> must be …, got …`.

use conch_core::wire::{self, Given, Refused, Spelling};
use conch_core::{Mask, Network, Sandbox, SandboxOption};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::errors::invalid;

/// The options `given` to `call`, with the `fixed` ones its positional
/// parameters gave (`command`), as `T`.
pub fn read<T: DeserializeOwned + JsonSchema + 'static>(
    call: &str,
    given: Option<&Bound<'_, PyDict>>,
    fixed: &[(&str, Bound<'_, PyAny>)],
) -> PyResult<T> {
    let mut fields = Vec::new();
    for (key, value) in fixed {
        fields.push(((*key).to_owned(), to_given(value)?));
    }
    for (name, value) in named::<T>(call, given, fixed)? {
        fields.push((name, to_given(&value)?));
    }
    wire::read_options(fields, Spelling::Wire).map_err(refused)
}

/// Options read in another process (a remote session's): their names
/// checked here, as [`read`] checks them, their values sent as JSON for the
/// core's readers there.
pub fn to_send<T: JsonSchema + 'static>(
    call: &str,
    given: Option<&Bound<'_, PyDict>>,
) -> PyResult<serde_json::Map<String, serde_json::Value>> {
    let mut sent = serde_json::Map::new();
    for (name, value) in named::<T>(call, given, &[])? {
        let json = to_given(&value)?.to_json().ok_or_else(|| {
            invalid(format!(
                "{name} must be a value JSON can carry, got {value}"
            ))
        })?;
        sent.insert(name, json);
    }
    Ok(sent)
}

/// The keyword arguments `given` to `call`, each the name of an option of
/// `T` (and none of the `fixed` ones), or the `TypeError` Python gives for
/// an unexpected keyword argument.
fn named<'py, T: JsonSchema + 'static>(
    call: &str,
    given: Option<&Bound<'py, PyDict>>,
    fixed: &[(&str, Bound<'_, PyAny>)],
) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
    let names = wire::option_names::<T>();
    let mut named = Vec::new();
    for (key, value) in given.into_iter().flat_map(|dict| dict.iter()) {
        let name: String = key.extract()?;
        if !names.contains(&name) || fixed.iter().any(|(k, _)| *k == name) {
            return Err(PyTypeError::new_err(format!(
                "{call}() got an unexpected keyword argument '{name}'"
            )));
        }
        named.push((name, value));
    }
    Ok(named)
}

/// `sandbox=` as the core's policy: a dict of the policy's fields
/// (snake_case, as in the core), `True` or `{}` for the strict default,
/// `None` or `False` for none.
pub fn sandbox(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Sandbox>> {
    let value = value.map(to_given).transpose()?.unwrap_or(Given::Null);
    wire::read_value::<SandboxOption>("sandbox", value, Spelling::Wire)
        .map(|option| option.0)
        .map_err(refused)
}

/// `set_network(policy)`'s policy as the core's `Network`, read as a
/// sandbox's `network` is: ``"deny"``, ``"allow"`` or a dict of ``allow``,
/// ``deny`` and ``resolve`` (a bad pattern is named ``network.allow[i]``).
pub fn network(value: &Bound<'_, PyAny>) -> PyResult<Network> {
    wire::read_value::<Network>("network", to_given(value)?, Spelling::Wire).map_err(refused)
}

/// `mask=` as the core's option: ``True`` (names that look secret),
/// ``False`` (nothing masked) or a sequence of names (those that look
/// secret, and these); ``None`` is ``True``. For the calls whose options
/// are not a core type yet (``BashTool``, ``execute_bash``).
pub fn mask(value: Option<&Bound<'_, PyAny>>) -> PyResult<Mask> {
    let value = value.map(to_given).transpose()?.unwrap_or(Given::Null);
    wire::read_value::<Mask>("mask", value, Spelling::Wire).map_err(refused)
}

/// The Python error for what the core refused.
fn refused(err: Refused) -> PyErr {
    if err.wrong_type {
        PyTypeError::new_err(err.message)
    } else {
        invalid(err.message)
    }
}

/// `value` as a [`Given`]: a path (`os.PathLike`) as its text, a mapping
/// (`os.environ`) as an object, a tuple as a list, an int past 64 bits as
/// the float nearest to it (the core's check then refuses it with its own
/// text, as for a JavaScript number); anything else is named by its type.
pub(crate) fn to_given(value: &Bound<'_, PyAny>) -> PyResult<Given> {
    let py = value.py();
    if value.is_none() {
        return Ok(Given::Null);
    }
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(Given::Bool(flag.is_true()));
    }
    if let Ok(int) = value.cast::<PyInt>() {
        let n = int.extract::<f64>().unwrap_or(if value.lt(0)? {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
        return Ok(Given::Number(n));
    }
    if let Ok(float) = value.cast::<PyFloat>() {
        return Ok(Given::Number(float.value()));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(Given::Text(text.to_str()?.to_owned()));
    }
    if value.hasattr("__fspath__")? {
        return to_given(&py.import("os")?.call_method1("fspath", (value,))?);
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut fields = Vec::with_capacity(dict.len());
        for (key, item) in dict.iter() {
            let Ok(key) = key.extract::<String>() else {
                return Ok(Given::Other(format!(
                    "dict with a key of type {}",
                    kind(&key)?
                )));
            };
            fields.push((key, to_given(&item)?));
        }
        return Ok(Given::Map(fields));
    }
    if value.cast::<PyList>().is_ok() || value.cast::<PyTuple>().is_ok() {
        let items = value
            .try_iter()?
            .map(|item| to_given(&item?))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(Given::List(items));
    }
    if value.hasattr("items")? && value.hasattr("keys")? {
        return to_given(&PyDict::from_sequence(&value.call_method0("items")?)?.into_any());
    }
    Ok(Given::Other(kind(value)?))
}

/// The name of `value`'s type.
fn kind(value: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(value.get_type().name()?.to_string())
}
