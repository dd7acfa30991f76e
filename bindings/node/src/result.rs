//! The core's results as JS objects: [`Js`] serializes a core type
//! (`BashResult`, `JobPoll`, `JobInfo`, `PtyResult`, `SandboxApplied`…) by
//! its serde derive and gives it in Node's spelling (camelCase keys,
//! durations and times in milliseconds, an absent value left out: the
//! field is `undefined`, as JS APIs give it), so
//! the binding names no field: one the core adds reaches JS with no change
//! here. Their TypeScript interfaces are generated from the same
//! definition (`schema.d.ts`).

use napi::ValueType;
use napi::bindgen_prelude::{ToNapiValue, TypeName, sys};
use serde::Serialize;
use serde_json::Value;

/// A core value on its way to JS.
pub struct Js<T>(pub T);

impl<T: Serialize> ToNapiValue for Js<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let value = serde_json::to_value(&val.0)
            .map_err(|err| napi::Error::from_reason(format!("conch result: {err}")))?;
        // SAFETY: forwarded from napi, which calls this with a live `env`.
        unsafe {
            serde_json::Value::to_napi_value(env, present(conch_core::wire::camel_case(value)))
        }
    }
}

/// `value` without the fields whose value is `null`.
fn present(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, present(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(present).collect()),
        other => other,
    }
}

impl<T> TypeName for Js<T> {
    fn type_name() -> &'static str {
        "object"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

/// A core count as a JS number.
pub fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
