//! What a session hosts, chosen by its `open` request's `kind`: a shell
//! (runs and jobs, the local `Shell`'s calls), a pty (the local
//! `PtySession`'s) or a tool (the model's `bash` and `job` tools). Each
//! kind answers its own requests; a request of
//! another kind is refused by name.

use std::sync::Arc;

use conch_core::Shell;
use conch_core::artifact::ArtifactStore;

use super::pty::PtyHost;
use super::tool::HostedTool;
use crate::protocol::{ErrorKind, Refusal};

pub(crate) enum Hosted {
    Shell(Arc<Shell>),
    Pty(Box<PtyHost>),
    Tool(Box<HostedTool>),
}

impl Hosted {
    /// The kind as `open` names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Hosted::Shell(_) => "shell",
            Hosted::Pty(_) => "pty",
            Hosted::Tool(_) => "tool",
        }
    }

    /// The shell of a session that has one (the file requests act as its
    /// commands could).
    pub fn shell(&self) -> Option<&Shell> {
        match self {
            Hosted::Shell(shell) => Some(shell),
            Hosted::Pty(_) | Hosted::Tool(_) => None,
        }
    }

    /// Ends what the session hosts: its processes are killed.
    pub fn close(&self) {
        match self {
            Hosted::Shell(shell) => shell.close(),
            Hosted::Pty(pty) => pty.close(),
            Hosted::Tool(tool) => tool.close(),
        }
    }

    /// The store `artifact_*` requests read (`Ok(None)`: the session was
    /// opened without one), or their refusal for a kind that spills no
    /// outputs.
    pub fn artifacts(&self, op: &str) -> Result<Option<&ArtifactStore>, Refusal> {
        match self {
            Hosted::Shell(shell) => Ok(shell.artifacts()),
            Hosted::Tool(tool) => Ok(tool.artifacts()),
            Hosted::Pty(_) => Err(self.wrong_kind(op, "shell")),
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
