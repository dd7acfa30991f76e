//! The core's results as Python objects (`conch.BashResult`, `PtyResult`,
//! `JobPoll`, `JobInfo`, `SandboxApplied`): each is serialized by its serde
//! form in the core (`pythonize`: snake_case keys, durations and times in
//! seconds) into the keyword arguments of its class in `conch._types`,
//! frozen dataclasses that `core/tests/schema.rs` generates from the
//! core's schema. No field is named here: a field added to a core result
//! reaches Python by regenerating that file.

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

/// Each class, looked up once.
static CLASSES: [PyOnceLock<Py<PyAny>>; Class::ALL] = [const { PyOnceLock::new() }; Class::ALL];

/// `value` as an instance of `class`.
pub fn to_python(py: Python<'_>, class: Class, value: &impl Serialize) -> PyResult<Py<PyAny>> {
    let fields = pythonize::pythonize(py, value)?.cast_into::<PyDict>()?;
    let class = CLASSES[class as usize].get_or_try_init(py, || {
        py.import("conch._types")?
            .getattr(class.name())
            .map(Bound::unbind)
    })?;
    class.bind(py).call((), Some(&fields)).map(Bound::unbind)
}

/// `value` as plain Python objects (dicts, lists, str, int, float, bool,
/// `None`), keys as the core writes them: tool details, tool definitions.
pub fn plain<'py>(py: Python<'py>, value: &impl Serialize) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}
