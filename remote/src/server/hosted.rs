//! What a session hosts, chosen by its `open` request's `kind`: a shell
//! (runs and jobs, the local `Shell`'s calls), a tool (the model's `bash`
//! and `job` tools). Each kind answers its own requests; a request of
//! another kind is refused by name.

use std::sync::Arc;

use conch_core::Shell;

use super::tool::HostedTool;
use crate::protocol::{ErrorKind, Refusal};

pub(crate) enum Hosted {
    Shell(Arc<Shell>),
    Tool(Box<HostedTool>),
}

impl Hosted {
    /// The kind as `open` names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Hosted::Shell(_) => "shell",
            Hosted::Tool(_) => "tool",
        }
    }

    /// Ends what the session hosts: its processes are killed.
    pub fn close(&self) {
        match self {
            Hosted::Shell(shell) => shell.close(),
            Hosted::Tool(tool) => tool.close(),
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
