//! `conch.CancelToken`: cancels runs from any thread, optionally as the
//! child of another token (cancelled whenever its parent is).

use conch_core::CancelToken;
use conch_core::cancel::CancelGuard;
use pyo3::prelude::*;

use crate::errors::guard;
use crate::repr::py_bool;

/// A token that cancels the runs it is passed to (``cancel=``), from any
/// thread, at any moment. ``CancelToken(parent)`` makes a child token:
/// cancelling the parent cancels the child, not the other way round.
#[pyclass(frozen, module = "conch", name = "CancelToken")]
pub struct PyCancelToken {
    pub inner: CancelToken,
    /// Keeps the child linked to its parent while the child lives.
    _link: Option<CancelGuard>,
}

#[pymethods]
impl PyCancelToken {
    #[new]
    #[pyo3(signature = (parent=None))]
    fn new(parent: Option<&PyCancelToken>) -> PyResult<Self> {
        guard(|| {
            let (inner, link) = match parent {
                Some(parent) => {
                    let (child, link) = child_of(&parent.inner);
                    (child, Some(link))
                }
                None => (CancelToken::new(), None),
            };
            Ok(PyCancelToken { inner, _link: link })
        })
    }

    /// Cancels every run using this token (and every child token).
    /// Idempotent; never blocks.
    fn cancel(&self) -> PyResult<()> {
        guard(|| {
            self.inner.cancel();
            Ok(())
        })
    }

    /// Whether ``cancel()`` was called (on this token or a parent).
    fn is_cancelled(&self) -> PyResult<bool> {
        guard(|| Ok(self.inner.is_cancelled()))
    }

    fn __repr__(&self) -> PyResult<String> {
        guard(|| {
            Ok(format!(
                "CancelToken(cancelled={})",
                py_bool(self.inner.is_cancelled())
            ))
        })
    }
}

/// A fresh token cancelled whenever `parent` is, while the guard lives.
pub fn child_of(parent: &CancelToken) -> (CancelToken, CancelGuard) {
    let child = CancelToken::new();
    let guard = parent.on_cancel({
        let child = child.clone();
        move || child.cancel()
    });
    (child, guard)
}

/// The token of one run: its own, so that the binding can cancel it (a
/// callback raised, Ctrl-C) without touching the caller's token, and linked
/// to the caller's token when one was given.
pub fn run_token(caller: Option<&PyCancelToken>) -> (CancelToken, Option<CancelGuard>) {
    match caller {
        Some(caller) => {
            let (token, guard) = child_of(&caller.inner);
            (token, Some(guard))
        }
        None => (CancelToken::new(), None),
    }
}
