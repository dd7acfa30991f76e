//! Artifact reads by range, for every kind of session that spills outputs
//! to an artifact store: `artifact_read` is the local
//! `ArtifactStore::read(id, offset, limit)` and `artifact_resolve` its
//! `resolve(url)`, with their results and errors (an unknown id is the
//! core's `NotFound`, as locally).

use conch_core::artifact::ArtifactStore;
use conch_core::input::count_option;
use serde_json::{Value, json};

use super::jobs::{bad, text, wrong};
use crate::protocol::{Refusal, Request};

/// Whether `op` is an artifact request.
pub(super) fn is_artifact_op(op: &str) -> bool {
    matches!(op, "artifact_read" | "artifact_resolve")
}

/// Handles the artifact request over the session's store (`None`: it was
/// opened without one, and says so).
pub(super) fn artifact_op(
    store: Option<&ArtifactStore>,
    request: &Request,
) -> Result<Value, Refusal> {
    let Some(store) = store else {
        return Err(conch_core::Error::NotFound(
            "this session has no artifact store: it was opened with artifacts_dir None".into(),
        )
        .into());
    };
    let text = match request.op.as_str() {
        "artifact_read" => {
            let offset = count(request, "offset")?.unwrap_or(0);
            store.read(
                &text(request, "artifact")?,
                offset,
                count(request, "limit")?,
            )?
        }
        "artifact_resolve" => store.resolve(&text(request, "url")?)?,
        op => unreachable!("{op} is no artifact request"),
    };
    Ok(json!(text))
}

/// The count field `name` (none: `None`), read as every face reads it.
fn count(request: &Request, name: &str) -> Result<Option<usize>, Refusal> {
    match request.field(name) {
        None => Ok(None),
        Some(value) => {
            let n = value
                .as_f64()
                .ok_or_else(|| wrong(name, "a whole number >= 0", Some(value)))?;
            count_option(name, n).map(Some).map_err(bad)
        }
    }
}
