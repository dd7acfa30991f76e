//! The serialized form of the core's options and results, defined once by
//! their serde derives, and the JSON Schema derived from it
//! ([`schema`], checked in as `docs/api/schema.json`): what every face
//! converts through instead of copying fields by hand.
//!
//! The rule on the wire: keys are the Rust field names (snake_case), or the
//! name every face gives the option where the two differ (`env`, `head`,
//! `artifacts_dir`); a duration is a number of seconds under the field's
//! own name (`timeout`, `elapsed`), a point in time the seconds since the
//! Unix epoch (`started`); an absent result value is `null`; an option left
//! out, or `null`, takes its default. A value the core checks is read by the
//! core's own parser for it (see [`crate::input`]), so a bad one is
//! refused with the text every face gives: `<name> must be …, got …`.
//!
//! The faces that speak camelCase and milliseconds (Node, the CLI's JSON
//! lines, the C face's JSON texts) take a serialized value through
//! [`camel_case`]: every key to camelCase, and each duration key
//! ([`DURATION_KEYS`]) to `<key>Ms` in milliseconds.

use std::any::TypeId;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use schemars::SchemaGenerator;
use schemars::generate::{Contract, SchemaSettings};
use serde::Serializer;
use serde_json::{Map, Value, json};

mod error;
mod given;
pub(crate) mod read;
pub(crate) mod shape;

pub use error::{error_from_wire, error_to_wire};
pub use given::{Given, Refused, read_options, read_value};
pub use read::Spelling;

/// The keys whose values are durations or times in seconds on the wire;
/// [`camel_case`] gives them as `<key>Ms` in milliseconds. A test checks
/// the list against the schema (each such field is marked
/// `"x-unit": "seconds"` there).
pub const DURATION_KEYS: &[&str] = &[
    "auto_background_after",
    "elapsed",
    "started",
    "timeout",
    "update_interval",
    "wait",
    "yield_after",
];

/// The keys whose values are maps of the user's own names (variables),
/// which neither mapping touches.
const VERBATIM_KEYS: &[&str] = &["env", "session_env"];

/// Variables as a face gives them, `{"NAME": "value"}` in the order given
/// (`null`: none), for an `env` option of a hand-written options object,
/// read with [`read_value`] as the option types read theirs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvVars(pub Vec<(String, String)>);

impl<'de> serde::Deserialize<'de> for EnvVars {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        read::env(d).map(EnvVars)
    }
}

/// `value`, serialized by the core's rule, for a face that speaks camelCase
/// and milliseconds: `total_lines` → `totalLines`, `elapsed: 1.5` →
/// `elapsedMs: 1500`. Values inside are kept as they are.
pub fn camel_case(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (key, item) in map {
                if DURATION_KEYS.contains(&key.as_str()) {
                    out.insert(format!("{}Ms", camel_key(&key)), millis(item));
                } else if VERBATIM_KEYS.contains(&key.as_str()) {
                    out.insert(key, item);
                } else {
                    out.insert(camel_key(&key), camel_case(item));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(camel_case).collect()),
        other => other,
    }
}

/// The inverse of [`camel_case`], for what a camelCase face sends:
/// `maxBytes` → `max_bytes`, `timeoutMs: 1500` → `timeout: 1.5`.
pub fn from_camel_case(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (key, item) in map {
                let snake = snake_key(&key);
                match snake.strip_suffix("_ms") {
                    Some(base) if DURATION_KEYS.contains(&base) => {
                        out.insert(base.to_string(), seconds(item));
                    }
                    _ if VERBATIM_KEYS.contains(&snake.as_str()) => {
                        out.insert(snake, item);
                    }
                    _ => {
                        out.insert(snake, from_camel_case(item));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(from_camel_case).collect()),
        other => other,
    }
}

/// `truncatedBy` → `truncated_by`.
pub fn snake_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Milliseconds as seconds; anything else (`null`, a wrong type the
/// reader refuses) stays as it is.
fn seconds(millis: Value) -> Value {
    match millis.as_f64() {
        Some(ms) => Value::from(ms / 1000.0),
        None => millis,
    }
}

/// `truncated_by` → `truncatedBy`.
pub fn camel_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Seconds as whole milliseconds (the JSON faces' unit); `null` stays.
fn millis(seconds: Value) -> Value {
    match seconds.as_f64() {
        Some(s) => Value::from((s * 1000.0).round() as u64),
        None => seconds,
    }
}

/// The JSON Schema (draft 2020-12) of every option and result the faces
/// exchange with the core, each under `$defs` by its Rust name: options as
/// the core reads them, results as it writes them.
pub fn schema() -> Value {
    use crate::jobs::{JobInfo, JobOptions, JobPoll, PollOptions};
    use crate::process::sandbox::{Sandbox, SandboxApplied};
    use crate::pty::{PtyOptions, PtyResult};
    use crate::tool::{BashToolArgs, BashToolConfig, Details, JobToolArgs};
    use crate::{BashResult, ExecuteOptions, RunOptions, ShellOptions};

    let mut defs = Map::new();
    let mut options = generator(Contract::Deserialize);
    for_each_root(&mut options, &mut defs, |g| {
        vec![
            g.subschema_for::<ShellOptions>(),
            g.subschema_for::<RunOptions>(),
            g.subschema_for::<ExecuteOptions>(),
            g.subschema_for::<JobOptions>(),
            g.subschema_for::<PollOptions>(),
            g.subschema_for::<PtyOptions>(),
            g.subschema_for::<Sandbox>(),
            g.subschema_for::<BashToolArgs>(),
            g.subschema_for::<JobToolArgs>(),
            g.subschema_for::<BashToolConfig>(),
        ]
    });
    let mut results = generator(Contract::Serialize);
    for_each_root(&mut results, &mut defs, |g| {
        vec![
            g.subschema_for::<BashResult>(),
            g.subschema_for::<PtyResult>(),
            g.subschema_for::<JobPoll>(),
            g.subschema_for::<JobInfo>(),
            g.subschema_for::<SandboxApplied>(),
            g.subschema_for::<Details>(),
        ]
    });
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "conch options and results",
        "description": "Generated from the core's types (core/src/wire.rs); do not edit.",
        "$defs": Value::Object(defs),
    })
}

/// The names of the options `T` reads on the wire (the properties of its
/// schema, as [`schema`] lists them), so a face that takes options by name
/// (Python's keyword arguments) refuses a name the core has no option for,
/// as the language refuses an unknown argument, and knows every new one
/// with no change of its own. Made once per type: generating the schema
/// takes tens of microseconds, and a face asks on every call.
pub fn option_names<T: schemars::JsonSchema + 'static>() -> &'static BTreeSet<String> {
    static NAMES: Mutex<BTreeMap<TypeId, &'static BTreeSet<String>>> = Mutex::new(BTreeMap::new());
    let mut names = crate::sync::lock(&NAMES);
    names.entry(TypeId::of::<T>()).or_insert_with(|| {
        let schema = generator(Contract::Deserialize).into_root_schema_for::<T>();
        let props = match schema.get("properties") {
            Some(Value::Object(props)) => props.keys().cloned().collect(),
            _ => BTreeSet::new(),
        };
        // One set per option type, for the life of the process.
        Box::leak(Box::new(props))
    })
}

/// Every option of the option type `def` (`"ShellOptions"`,
/// `"RunOptions"`, `"JobOptions"`…) in [`schema`] but `command`, each with
/// a value it takes and one of a JSON type it does not: what each face's
/// test walks, so it proves the face takes every option the core type has,
/// one added later included. The values come from the schema's types, but
/// for a few a type cannot give (a bash to run, a snapshot choice, a
/// sandbox that starts where the kernel has none).
pub fn option_samples(def: &str) -> Vec<(String, Value, Value)> {
    let schema = schema();
    let defs = &schema["$defs"];
    let props = defs[def]["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    props
        .into_iter()
        .filter(|(key, _)| key != "command")
        .map(|(key, prop)| {
            let valid = match key.as_str() {
                "shell" => json!("bash"),
                "snapshot" => json!("none"),
                "sandbox" => json!({"best_effort": true}),
                _ => sample(&prop, defs),
            };
            let kinds = kinds(&prop, defs);
            let wrong = if !kinds.contains(&"string") {
                json!("x")
            } else if !kinds.contains(&"integer") && !kinds.contains(&"number") {
                json!(7)
            } else {
                json!(["x"])
            };
            (key, valid, wrong)
        })
        .collect()
}

/// The JSON types a property takes.
fn kinds<'a>(prop: &'a Value, defs: &'a Value) -> Vec<&'a str> {
    if let Some(target) = prop["$ref"].as_str() {
        return kinds(&defs[target.rsplit('/').next().unwrap_or_default()], defs);
    }
    if let Some(any) = prop["anyOf"].as_array().or(prop["oneOf"].as_array()) {
        return any.iter().flat_map(|p| kinds(p, defs)).collect();
    }
    match &prop["type"] {
        Value::String(kind) => vec![kind.as_str()],
        Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => vec!["object"],
    }
}

/// A value `prop` takes: its first constant, the smallest count, five
/// seconds, `true`, `"."` for a string, one variable for a map of them,
/// each property of an object.
fn sample(prop: &Value, defs: &Value) -> Value {
    if let Some(target) = prop["$ref"].as_str() {
        return sample(&defs[target.rsplit('/').next().unwrap_or_default()], defs);
    }
    if let Some(first) = prop["oneOf"].as_array().and_then(|v| v.first()) {
        return first["const"].clone();
    }
    if let Some(first) = prop["anyOf"].as_array().and_then(|v| v.first()) {
        return sample(first, defs);
    }
    let kind = kinds(prop, defs).into_iter().find(|k| *k != "null");
    match kind.unwrap_or("null") {
        "boolean" => json!(true),
        "integer" => json!(prop["minimum"].as_u64().unwrap_or(1).max(1)),
        "number" => json!(5.0),
        "string" => json!("."),
        "array" => json!([]),
        "object" => match prop["properties"].as_object() {
            Some(props) => props
                .iter()
                .map(|(key, p)| (key.clone(), sample(p, defs)))
                .collect(),
            None => json!({"CONCH_SAMPLE": "1"}),
        },
        _ => Value::Null,
    }
}

fn generator(contract: Contract) -> SchemaGenerator {
    let mut settings = SchemaSettings::draft2020_12();
    settings.contract = contract;
    settings.into_generator()
}

/// Adds the definitions `roots` makes to `defs`; a name both contracts
/// define must mean the same (a type read and written differently would
/// need two names).
fn for_each_root(
    generator: &mut SchemaGenerator,
    defs: &mut Map<String, Value>,
    roots: impl FnOnce(&mut SchemaGenerator) -> Vec<schemars::Schema>,
) {
    roots(generator);
    for (name, def) in generator.take_definitions(true) {
        if let Some(known) = defs.get(&name) {
            assert_eq!(known, &def, "{name} reads and writes differently");
        }
        defs.insert(name, def);
    }
}

/// Serializes a duration as seconds.
pub(crate) fn secs<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Serializes an optional duration as seconds, or `null`.
pub(crate) fn optional_secs<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => secs(d, s),
        None => s.serialize_none(),
    }
}

/// Serializes variables as the object `{"NAME": "value"}` they are read
/// from, in their order.
pub(crate) fn env_map<S: Serializer>(vars: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(vars.iter().map(|(k, v)| (k, v)))
}

/// Serializes a job's terminal size as `{"cols": C, "rows": R}`, as it is
/// read.
pub(crate) fn terminal<S: Serializer>(size: &Option<(u16, u16)>, s: S) -> Result<S::Ok, S::Error> {
    match size {
        Some((cols, rows)) => {
            use serde::Serialize;
            json!({"cols": cols, "rows": rows}).serialize(s)
        }
        None => s.serialize_none(),
    }
}

/// Serializes a pattern as its text.
pub(crate) fn pattern<S: Serializer>(re: &Option<regex::Regex>, s: S) -> Result<S::Ok, S::Error> {
    match re {
        Some(re) => s.serialize_str(re.as_str()),
        None => s.serialize_none(),
    }
}

/// Reads a duration serialized as seconds ([`secs`]).
pub(crate) fn read_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let secs = <f64 as serde::Deserialize>::deserialize(d)?;
    Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
}

/// Reads a time serialized as seconds since the Unix epoch ([`epoch_secs`]).
pub(crate) fn read_epoch_secs<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<SystemTime, D::Error> {
    Ok(SystemTime::UNIX_EPOCH + read_secs(d)?)
}

/// Serializes a time as seconds since the Unix epoch, to the millisecond
/// (0 for a time before it).
pub(crate) fn epoch_secs<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(crate::jobs::epoch_ms(*t) as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_maps_keys_and_durations() {
        let value = json!({"total_lines": 3, "elapsed": 1.5, "started": 1700000000.123,
                           "meta": {"truncated_by": "bytes", "shown_range": {"start": 1}},
                           "list": [{"exit_code": null}], "timeout": null,
                           "env": {"MY_VAR": "1"}});
        assert_eq!(
            camel_case(value),
            json!({"totalLines": 3, "elapsedMs": 1500, "startedMs": 1700000000123u64,
                   "meta": {"truncatedBy": "bytes", "shownRange": {"start": 1}},
                   "list": [{"exitCode": null}], "timeoutMs": null,
                   "env": {"MY_VAR": "1"}})
        );
        assert_eq!(
            from_camel_case(
                json!({"maxBytes": 5, "yieldAfterMs": 1500, "envPolicy": {"inherit": "all"},
                                   "env": {"myVar": "x"}})
            ),
            json!({"max_bytes": 5, "yield_after": 1.5, "env_policy": {"inherit": "all"},
                   "env": {"myVar": "x"}})
        );
    }

    /// The options read off the wire, checked by the core's own parsers:
    /// a bad value gets the text every face gives.
    #[test]
    fn options_are_read_with_the_core_checks() {
        use crate::{RunOptions, Sandbox, ShellOptions};
        let run: RunOptions = serde_json::from_str(
            r#"{"command": "ls", "timeout": 1.5, "head": 3, "tail": null, "env": {"B": "1", "A": "2"}}"#,
        )
        .unwrap();
        assert_eq!(run.timeout, Some(Duration::from_millis(1500)));
        assert_eq!((run.head_lines, run.tail_lines), (Some(3), None));
        assert_eq!(
            run.env,
            [("B".into(), "1".into()), ("A".into(), "2".into())]
        );
        let error = |value: Value| {
            serde_json::from_value::<RunOptions>(value)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            error(json!({"command": "ls", "timeout": -1})),
            "timeout must be a positive number of seconds up to 2147483.647, got -1"
        );
        assert_eq!(
            error(json!({"command": "ls", "head": 1.5})),
            "head must be a whole number >= 0, got 1.5"
        );
        let shell: ShellOptions = serde_json::from_value(json!({
            "snapshot": "none", "max_bytes": 10, "env_policy": {"inherit": "core"},
            "sandbox": {"network": "allow", "limits": {"cpu_seconds": 5}}
        }))
        .unwrap();
        assert_eq!(shell.snapshot, crate::shell::Snapshot::None);
        assert_eq!(shell.max_bytes, 10);
        assert_eq!(shell.max_jobs, crate::defaults::MAX_JOBS);
        assert_eq!(shell.sandbox.unwrap().limits.cpu_seconds, Some(5));
        let bad = serde_json::from_value::<Sandbox>(json!({"network": "off"})).unwrap_err();
        assert_eq!(
            bad.to_string(),
            r#"network must be "allow" or "deny", got "off""#
        );
        let bad = serde_json::from_value::<ShellOptions>(json!({"max_bytes": 0})).unwrap_err();
        assert_eq!(
            bad.to_string(),
            "max_bytes must be a whole number >= 1, got 0"
        );
    }

    #[test]
    fn duration_keys_are_the_schemas_seconds() {
        fn walk(value: &Value, found: &mut std::collections::BTreeSet<String>) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::Object(props)) = map.get("properties") {
                        for (key, prop) in props {
                            if prop.to_string().contains("\"x-unit\":\"seconds\"") {
                                found.insert(key.clone());
                            }
                        }
                    }
                    map.values().for_each(|v| walk(v, found));
                }
                Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
                _ => {}
            }
        }
        let mut found = std::collections::BTreeSet::new();
        walk(&schema(), &mut found);
        let listed: std::collections::BTreeSet<String> =
            DURATION_KEYS.iter().map(|k| k.to_string()).collect();
        assert_eq!(found, listed);
    }
}
