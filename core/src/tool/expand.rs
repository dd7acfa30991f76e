//! Expanding a truncated result to the whole output, for a renderer's
//! expanded view: the result's text holds only what the model saw (at most
//! 50 KiB), the artifact holds everything.

use super::result::Details;
use crate::artifact::ArtifactStore;
use crate::error::Result;

/// The whole output behind a result: the text of its `artifact://<id>` when
/// the result was truncated and spilled, else `text` unchanged. Errors are
/// the store's (`Artifact N not found. Available: …`, I/O errors).
pub fn expand_output(
    store: &ArtifactStore,
    text: &str,
    details: Option<&Details>,
) -> Result<String> {
    match details
        .and_then(Details::truncation)
        .and_then(|t| t.artifact_id.as_deref())
    {
        Some(id) => store.read(id, 0, None),
        None => Ok(text.to_string()),
    }
}
