//! Options objects as the core's option types.
//!
//! [`read`] takes an options object apart into [`Given`] values and reads
//! them as the core type (`ShellOptions`, `RunOptions`, `JobOptions`…)
//! through its serde derive, in Node's spelling: camelCase, durations in
//! milliseconds (`timeoutMs`). The binding names no option, so an option
//! the core adds is taken here with no change; only what is no JSON value
//! (callbacks, signals) is picked out by the caller. [`Read`] does the same
//! for one option value inside a hand-written options object.
//!
//! Errors are Node's usual ones: a value of the wrong type is a `TypeError`
//! with `code: 'InvalidArg'` naming the option, a value the core's check
//! refuses an `InvalidArgument` error with the core's text (`maxBytes must
//! be a whole number >= 1, got 0`). An option left out, `undefined` or
//! `null` takes the core's default; a name no option has is ignored, as
//! JavaScript options objects go.

use std::marker::PhantomData;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use conch_core::EngineChoice;
use conch_core::artifact::ArtifactStore;
use conch_core::defaults;
use conch_core::error::BadValue;
use conch_core::input::{TimeUnit, count_option, interval_option, max_bytes_option, parse_option};
use conch_core::shell::Snapshot;
use conch_core::wire::{Given, Spelling, read_options, read_value};
use napi::ValueType;
use napi::bindgen_prelude::{
    Env, FromNapiValue, JsObjectValue, JsValue, Object, TypeName, Unknown, ValidateNapiValue, sys,
};
use serde::de::DeserializeOwned;

use crate::errors::{JsResult, core_error, from_napi, refused};

/// The options object `object` as the core type `T`, leaving out the
/// `js_only` names (read by the caller).
pub fn read<T: DeserializeOwned>(
    env: &Env,
    object: Option<&Object<'_>>,
    js_only: &[&str],
) -> JsResult<T> {
    read_options(fields(object, js_only)?, Spelling::CamelCase).map_err(|err| refused(env, err))
}

/// The options object `object` as JSON, as given (camelCase,
/// milliseconds), for a remote server to read with the core's readers in
/// Node's spelling, leaving out the `js_only` names (read by the caller).
pub fn to_send(
    object: Option<&Object<'_>>,
    js_only: &[&str],
) -> JsResult<serde_json::Map<String, serde_json::Value>> {
    fields(object, js_only)?
        .into_iter()
        .map(|(name, value)| match value.to_json() {
            Some(json) => Ok((name, json)),
            None => Err(crate::errors::invalid(format!(
                "{name} must be a value JSON can carry"
            ))),
        })
        .collect()
}

/// The fields `object` gives (`undefined` ones left out), but the
/// `js_only` names.
fn fields(object: Option<&Object<'_>>, js_only: &[&str]) -> JsResult<Vec<(String, Given)>> {
    let mut fields = Vec::new();
    if let Some(object) = object {
        for name in Object::keys(object).map_err(from_napi)? {
            if js_only.contains(&name.as_str()) {
                continue;
            }
            let value: Unknown = object.get_named_property(&name).map_err(from_napi)?;
            if let Some(value) = given(value).map_err(from_napi)? {
                fields.push((name, value));
            }
        }
    }
    Ok(fields)
}

/// `value` as a [`Given`]; `None` for `undefined` (an option left out).
pub fn given(value: Unknown<'_>) -> napi::Result<Option<Given>> {
    Ok(Some(match value.get_type()? {
        ValueType::Undefined => return Ok(None),
        ValueType::Null => Given::Null,
        ValueType::Boolean => Given::Bool(bool::from_unknown(value)?),
        ValueType::Number => Given::Number(f64::from_unknown(value)?),
        ValueType::String => Given::Text(String::from_unknown(value)?),
        ValueType::Object => {
            // SAFETY: checked to be an object just above.
            let object: Object = unsafe { value.cast() }?;
            if object.is_array()? {
                let len = object.get_array_length()?;
                let mut items = Vec::with_capacity(len as usize);
                for i in 0..len {
                    let item: Unknown = object.get_element(i)?;
                    items.push(given(item)?.unwrap_or(Given::Null));
                }
                Given::List(items)
            } else {
                let mut fields = Vec::new();
                for name in Object::keys(&object)? {
                    let item: Unknown = object.get_named_property(&name)?;
                    if let Some(item) = given(item)? {
                        fields.push((name, item));
                    }
                }
                Given::Map(fields)
            }
        }
        ValueType::Function => Given::Other("function".into()),
        ValueType::Symbol => Given::Other("symbol".into()),
        ValueType::BigInt => Given::Other("bigint".into()),
        _ => Given::Other("external".into()),
    }))
}

/// One option of a hand-written options object (a `sandbox`, an
/// `envPolicy`), read as the core type `T` when the call asks for it
/// ([`Read::get`]): its error is then reported as any other option's.
pub struct Read<T>(Given, PhantomData<T>);

impl<T: DeserializeOwned + Default> Read<T> {
    /// The value of option `name`, the default when absent, or its error.
    pub fn get(env: &Env, name: &str, arg: Option<Read<T>>) -> JsResult<T> {
        match arg {
            None => Ok(T::default()),
            Some(Read(value, _)) => {
                read_value(name, value, Spelling::CamelCase).map_err(|err| refused(env, err))
            }
        }
    }
}

impl<T> TypeName for Read<T> {
    fn type_name() -> &'static str {
        "object"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl<T> ValidateNapiValue for Read<T> {}

impl<T> FromNapiValue for Read<T> {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        // SAFETY: forwarded from napi, which hands us a live value of `env`.
        let value = unsafe { Unknown::from_napi_value(env, value) }?;
        Ok(Read(given(value)?.unwrap_or(Given::Null), PhantomData))
    }
}

/// `'auto'` (default: the user's ~/.bashrc), `'none'`, or a snapshot file path.
pub fn snapshot(value: Option<String>) -> JsResult<Snapshot> {
    word("snapshot", value)
}

/// `engine`: `'auto'` (absent), `'builtin'` or `'eval'`.
pub fn engine(value: Option<String>) -> JsResult<EngineChoice> {
    word("engine", value)
}

/// The option `name` given as a word the core parses; absent: its default.
fn word<T: FromStr<Err = BadValue> + Default>(name: &str, value: Option<String>) -> JsResult<T> {
    value.map_or_else(
        || Ok(T::default()),
        |text| parse_option(name, &text).map_err(core_error),
    )
}

/// `nonInteractiveEnv`; absent: the core's default.
pub fn non_interactive_env(value: Option<bool>) -> bool {
    value.unwrap_or(defaults::NON_INTERACTIVE_ENV)
}

/// `timeoutMs` as a duration: a positive number of milliseconds.
pub fn timeout(ms: Option<f64>) -> JsResult<Option<Duration>> {
    deadline("timeoutMs", ms)
}

/// A deadline option named `name` in milliseconds, checked as a timeout.
pub fn deadline(name: &str, ms: Option<f64>) -> JsResult<Option<Duration>> {
    ms.map(|ms| conch_core::input::timeout_option(name, ms, TimeUnit::Milliseconds))
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
