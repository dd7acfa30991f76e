//! The core's results as Python objects (`conch.BashResult`, `PtyResult`,
//! `JobPoll`, `JobInfo`, `SandboxApplied`): each is serialized by its serde
//! form in the core (`pythonize`: snake_case keys, durations and times in
//! seconds) into the keyword arguments of its class in `conch._types`,
//! frozen dataclasses that `core/tests/schema.rs` generates from the
//! core's schema. No field is named here: a field added to a core result
//! reaches Python by regenerating that file.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use serde::Serialize;

/// The result classes of `conch._types`.
#[derive(Clone, Copy)]
pub enum Class {
    BashResult,
    PtyResult,
    JobPoll,
    JobInfo,
    SandboxApplied,
}

impl Class {
    const ALL: usize = 5;

    fn name(self) -> &'static str {
        match self {
            Class::BashResult => "BashResult",
            Class::PtyResult => "PtyResult",
            Class::JobPoll => "JobPoll",
            Class::JobInfo => "JobInfo",
            Class::SandboxApplied => "SandboxApplied",
        }
    }
}

/// A class of `conch._types`, looked up once, with the number of its
/// fields.
struct Looked {
    class: Py<PyAny>,
    fields: usize,
}

/// Each class, looked up once.
static CLASSES: [PyOnceLock<Looked>; Class::ALL] = [const { PyOnceLock::new() }; Class::ALL];

/// `value` as an instance of `class`: the instance made by `object.__new__`
/// and its `__dict__` filled with the serialized fields, which is what the
/// frozen dataclass's `__init__` does one `object.__setattr__` at a time
/// (about 3 µs a result, a tenth of a whole `Shell.run("true")`). A result
/// with more or fewer fields than the class (a core field the generated
/// file lacks) goes through the `__init__`, which refuses it; that the
/// names agree is `core/tests/schema.rs`'s check of the generated file.
pub fn to_python(py: Python<'_>, class: Class, value: &impl Serialize) -> PyResult<Py<PyAny>> {
    let fields = pythonize::pythonize(py, value)?.cast_into::<PyDict>()?;
    let looked = CLASSES[class as usize].get_or_try_init(py, || -> PyResult<Looked> {
        let found = py
            .import(intern!(py, "conch._types"))?
            .getattr(class.name())?;
        let fields = found.getattr(intern!(py, "__dataclass_fields__"))?.len()?;
        Ok(Looked {
            class: found.unbind(),
            fields,
        })
    })?;
    let class_object = looked.class.bind(py);
    if fields.len() != looked.fields {
        return class_object.call((), Some(&fields)).map(Bound::unbind);
    }
    let object = class_object.call_method1(intern!(py, "__new__"), (class_object,))?;
    object
        .getattr(intern!(py, "__dict__"))?
        .cast_into::<PyDict>()?
        .update(fields.as_mapping())?;
    Ok(object.unbind())
}

/// `value` as plain Python objects (dicts, lists, str, int, float, bool,
/// `None`), keys as the core writes them: tool details, tool definitions.
pub fn plain<'py>(py: Python<'py>, value: &impl Serialize) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}
