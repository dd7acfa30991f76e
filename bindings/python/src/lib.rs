//! The native part of the Python module `conch` (imported as
//! `conch._conch`; users import `conch`, whose `__init__.py` adds the
//! asyncio methods and the exception classes).
//!
//! Translation only: every behaviour is conch-core's. Blocking calls
//! release the GIL; chunk callbacks run on the calling thread ([`offload`]).
//! Every entry point runs its body under [`errors::guard`], so a panic is
//! `conch.InternalError` (an `Exception`), never PyO3's `PanicException`.

mod aio;
mod artifact;
mod cancel;
mod command;
mod command_method;
mod convert;
mod errors;
mod execute;
mod exit_hook;
mod job_calls;
mod job_tool;
mod offload;
mod open_shells;
mod option_signatures;
mod options;
mod pty;
mod remote;
mod remote_artifacts;
mod remote_files;
mod remote_pty;
mod remote_tool;
mod repr;
mod result;
mod shell;
mod signature;
mod tool;

use pyo3::prelude::*;

/// Native core of ``conch`` (import ``conch`` instead).
#[pymodule]
mod _conch {
    use pyo3::prelude::*;

    #[pymodule_export]
    use crate::artifact::{PyArtifact, PyArtifactStore};
    #[pymodule_export]
    use crate::cancel::PyCancelToken;
    #[pymodule_export]
    use crate::command::{
        PyInterception, PyNormalizedCommand, PySanitizer, apply_head_tail, check_bash_interception,
        default_interceptor_rules, normalize_bash_command, sanitize_text,
    };
    #[pymodule_export]
    use crate::errors::_panic;
    #[pymodule_export]
    use crate::execute::{
        _shutdown, close_all_sessions, close_session, execute_bash, execute_shell,
    };
    #[pymodule_export]
    use crate::job_tool::PyJobTool;
    #[pymodule_export]
    use crate::pty::PyPtySession;
    #[pymodule_export]
    use crate::remote::{PyRemote, PyRemoteShell, connect};
    #[pymodule_export]
    use crate::remote_artifacts::PyRemoteArtifactStore;
    #[pymodule_export]
    use crate::remote_files::PyRemoteFiles;
    #[pymodule_export]
    use crate::remote_pty::PyRemotePty;
    #[pymodule_export]
    use crate::remote_tool::{PyRemoteJobTool, PyRemoteTool};
    #[pymodule_export]
    use crate::shell::PyShell;
    #[pymodule_export]
    use crate::tool::{PyBashTool, PyToolResult};

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", env!("CARGO_PKG_VERSION"))
    }
}
