//! Option objects shared by the calls, and their conversion to core types.
//!
//! Units are Node's: milliseconds (`timeoutMs`). Bad values are
//! `InvalidArgument` errors, never silently clamped.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use conch_core::artifact::ArtifactStore;
use conch_core::process::env::{EnvPolicy as CoreEnvPolicy, Inherit};
use conch_core::shell::Snapshot;
use napi_derive::napi;

use crate::errors::{JsResult, invalid};

/// Which host variables reach the shell, and which names are dropped.
#[napi(object, object_to_js = false)]
pub struct EnvPolicy {
    /// `'all'` (default), `'core'` (PATH, HOME, locale… only) or `'none'`.
    #[napi(ts_type = "'all' | 'core' | 'none'")]
    pub inherit: Option<String>,
    /// Glob patterns (`*`, `?`) of names to drop, e.g. `*_KEY`, `*SECRET*`.
    pub exclude: Option<Vec<String>>,
}

pub fn env_policy(policy: Option<EnvPolicy>) -> JsResult<CoreEnvPolicy> {
    let Some(policy) = policy else {
        return Ok(CoreEnvPolicy::default());
    };
    let inherit = match policy.inherit.as_deref() {
        None | Some("all") => Inherit::All,
        Some("core") => Inherit::Core,
        Some("none") => Inherit::None,
        Some(other) => {
            return Err(invalid(format!(
                "envPolicy.inherit must be 'all', 'core' or 'none', got {other:?}"
            )));
        }
    };
    Ok(CoreEnvPolicy {
        inherit,
        exclude: policy.exclude.unwrap_or_default(),
    })
}

/// `'auto'` (default: the user's ~/.bashrc), `'none'`, or a snapshot file path.
pub fn snapshot(value: Option<String>) -> Snapshot {
    match value.as_deref() {
        None | Some("auto") => Snapshot::Auto,
        Some("none") => Snapshot::None,
        Some(path) => Snapshot::Path(PathBuf::from(path)),
    }
}

/// A JS object of variables as (name, value) pairs, sorted for a stable order.
pub fn env(vars: Option<HashMap<String, String>>) -> Vec<(String, String)> {
    let mut vars: Vec<(String, String)> = vars.unwrap_or_default().into_iter().collect();
    vars.sort();
    vars
}

/// `timeoutMs` as a duration: a positive, finite number of milliseconds.
pub fn timeout(ms: Option<f64>) -> JsResult<Option<Duration>> {
    match ms {
        None => Ok(None),
        Some(ms) if ms.is_finite() && ms > 0.0 => Ok(Some(Duration::from_secs_f64(ms / 1000.0))),
        Some(ms) => Err(invalid(format!(
            "timeoutMs must be a positive number of milliseconds, got {ms}"
        ))),
    }
}

/// A line count (`head`, `tail`): a non-negative integer.
pub fn lines(name: &str, value: Option<f64>) -> JsResult<Option<usize>> {
    match value {
        None => Ok(None),
        Some(n) if n.is_finite() && n >= 0.0 && n.fract() == 0.0 => Ok(Some(n as usize)),
        Some(n) => Err(invalid(format!(
            "{name} must be a non-negative integer, got {n}"
        ))),
    }
}

/// `maxBytes`: a positive integer.
pub fn max_bytes(value: Option<f64>, default: usize) -> JsResult<usize> {
    match value {
        None => Ok(default),
        Some(n) if n.is_finite() && n >= 1.0 && n.fract() == 0.0 => Ok(n as usize),
        Some(n) => Err(invalid(format!(
            "maxBytes must be a positive integer, got {n}"
        ))),
    }
}

/// An artifact store over `dir`, if given.
pub fn artifacts(dir: Option<String>) -> Option<ArtifactStore> {
    dir.map(ArtifactStore::new)
}
