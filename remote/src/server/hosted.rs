//! What a session hosts, chosen by its `open` request's `kind`: a shell
//! (runs and jobs, the local `Shell`'s calls). Each kind answers its own
//! requests; a request of another kind is refused by name.

use std::sync::Arc;

use conch_core::Shell;

use crate::protocol::{ErrorKind, Refusal};

pub(crate) enum Hosted {
    Shell(Arc<Shell>),
}

impl Hosted {
    /// The kind as `open` names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Hosted::Shell(_) => "shell",
        }
    }

    /// The shell of a session that has one (the file requests act as its
    /// commands could).
    pub fn shell(&self) -> Option<&Shell> {
        match self {
            Hosted::Shell(shell) => Some(shell),
        }
    }

    /// Ends what the session hosts: its processes are killed.
    pub fn close(&self) {
        match self {
            Hosted::Shell(shell) => shell.close(),
        }
    }

    /// The refusal of request `op`, which is a `wanted` session's.
    pub fn wrong_kind(&self, op: &str, wanted: &str) -> Refusal {
        Refusal::new(
            ErrorKind::BadRequest,
            format!(
                "{op} is a request of a {wanted} session, and this session is a {}",
                self.kind()
            ),
        )
    }
}
