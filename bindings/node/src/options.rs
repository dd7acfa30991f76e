//! Option objects shared by the calls, and their conversion to core types.
//!
//! Units are Node's: milliseconds (`timeoutMs`). Every value is checked by
//! the core's parser for that option, under the name it has here; bad
//! values are `InvalidArgument` errors, never silently clamped. An option
//! left out takes the core's default.

use std::collections::HashMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use conch_core::artifact::ArtifactStore;
use conch_core::input::{
    TimeUnit, count_option, interval_option, max_bytes_option, parse_option, timeout_option,
};
use conch_core::process::env::EnvPolicy as CoreEnvPolicy;
use conch_core::shell::Snapshot;
use conch_core::{BadValue, defaults};
use napi_derive::napi;

use crate::errors::{JsResult, core_error};

/// Which host variables reach the shell, and which names are dropped.
#[napi(object, object_to_js = false)]
pub struct EnvPolicy {
    /// `'all'` (default), `'core'` (PATH, HOME, locale… only) or `'none'`.
    #[napi(ts_type = "'all' | 'core' | 'none'")]
    pub inherit: Option<String>,
    /// Glob patterns (`*`, `?`) of names to drop, e.g. `*_KEY`, `*SECRET*`.
    pub exclude: Option<Vec<String>>,
}

/// A text option parsed by the core; absent: the core's default.
fn parsed<T: FromStr<Err = BadValue> + Default>(name: &str, value: Option<&str>) -> JsResult<T> {
    value.map_or_else(
        || Ok(T::default()),
        |text| parse_option(name, text).map_err(core_error),
    )
}

pub fn env_policy(policy: Option<EnvPolicy>) -> JsResult<CoreEnvPolicy> {
    let Some(policy) = policy else {
        return Ok(CoreEnvPolicy::default());
    };
    Ok(CoreEnvPolicy {
        inherit: parsed("envPolicy.inherit", policy.inherit.as_deref())?,
        exclude: policy.exclude.unwrap_or_default(),
    })
}

/// `'auto'` (default: the user's ~/.bashrc), `'none'`, or a snapshot file path.
pub fn snapshot(value: Option<String>) -> JsResult<Snapshot> {
    parsed("snapshot", value.as_deref())
}

/// `nonInteractiveEnv`; absent: the core's default.
pub fn non_interactive_env(value: Option<bool>) -> bool {
    value.unwrap_or(defaults::NON_INTERACTIVE_ENV)
}

/// A JS object of variables as (name, value) pairs, sorted for a stable order.
pub fn env(vars: Option<HashMap<String, String>>) -> Vec<(String, String)> {
    let mut vars: Vec<(String, String)> = vars.unwrap_or_default().into_iter().collect();
    vars.sort();
    vars
}

/// `timeoutMs` as a duration: a positive number of milliseconds.
pub fn timeout(ms: Option<f64>) -> JsResult<Option<Duration>> {
    deadline("timeoutMs", ms)
}

/// A deadline option named `name` in milliseconds, checked as a timeout.
pub fn deadline(name: &str, ms: Option<f64>) -> JsResult<Option<Duration>> {
    ms.map(|ms| timeout_option(name, ms, TimeUnit::Milliseconds))
        .transpose()
        .map_err(core_error)
}

/// A wait in milliseconds (>= 0).
pub fn duration_ms(name: &str, ms: f64) -> JsResult<Duration> {
    interval_option(name, ms, TimeUnit::Milliseconds).map_err(core_error)
}

/// `updateIntervalMs` as a duration: a number of milliseconds >= 0.
pub fn interval(name: &str, ms: Option<f64>) -> JsResult<Option<Duration>> {
    ms.map(|ms| interval_option(name, ms, TimeUnit::Milliseconds))
        .transpose()
        .map_err(core_error)
}

/// A count (`head`, `tail`, a terminal size): a whole number >= 0.
pub fn lines(name: &str, value: Option<f64>) -> JsResult<Option<usize>> {
    value
        .map(|n| count_option(name, n))
        .transpose()
        .map_err(core_error)
}

/// `maxBytes`: a whole number >= 1; absent: the core's default.
pub fn max_bytes(value: Option<f64>) -> JsResult<usize> {
    value.map_or(Ok(defaults::MAX_BYTES), |n| {
        max_bytes_option("maxBytes", n).map_err(core_error)
    })
}

/// The store of `artifactsDir` (created and checked now), or the process's
/// private directory when none is given.
pub fn artifacts(dir: Option<String>) -> JsResult<Option<ArtifactStore>> {
    ArtifactStore::for_option(dir.map(PathBuf::from))
        .map(Some)
        .map_err(core_error)
}
