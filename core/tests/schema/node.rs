//! The Node face's option and result interfaces, generated from the schema
//! into `bindings/node/schema.d.ts`, which `napi build` puts at the head of
//! `index.d.ts` (`dtsHeaderFile` in `package.json`): the binding reads the
//! options through the core's serde derives and gives the results through
//! them (camelCase, durations as `<name>Ms` in milliseconds), so these
//! declarations are the whole of what it takes and gives.

use serde_json::{Map, Value};

use super::{enum_values, fields, plain_doc};

/// The interfaces, by their Node name, and the definitions they show.
pub const NODE_TYPES: &[(&str, &str)] = &[
    ("ShellOptions", "ShellOptions"),
    ("RunOptions", "RunOptions"),
    ("ExecuteShellOptions", "ExecuteOptions"),
    ("StartOptions", "JobOptions"),
    ("PollOptions", "PollOptions"),
    ("PtyStartOptions", "PtyOptions"),
    ("SandboxOptions", "Sandbox"),
    ("SandboxLimits", "Limits"),
    ("EnvPolicy", "EnvPolicy"),
    ("BashResult", "BashResult"),
    ("PtyResult", "PtyResult"),
    ("JobPoll", "JobPoll"),
    ("JobInfo", "JobInfo"),
    ("SandboxApplied", "SandboxApplied"),
    ("ToolDetails", "Details"),
    ("ToolMeta", "Meta"),
    ("Truncation", "Truncation"),
    ("LineRange", "LineRange"),
];

/// A field's name in Node: camelCase, a duration as `<name>Ms`.
pub fn node_name(field: &str, prop: &Value) -> String {
    let key = conch_core::wire::camel_key(field);
    if prop["x-unit"] == "seconds" {
        format!("{key}Ms")
    } else {
        key
    }
}

/// The TypeScript type of a property.
pub fn ts_type(prop: &Value, defs: &Map<String, Value>) -> String {
    if let Some(members) = prop["anyOf"].as_array() {
        let mut kinds: Vec<String> = Vec::new();
        for kind in members.iter().map(|m| ts_type(m, defs)) {
            for one in kind.split(" | ") {
                if !kinds.iter().any(|k| k == one) {
                    kinds.push(one.to_string());
                }
            }
        }
        return kinds.join(" | ");
    }
    if let Some(target) = prop["$ref"].as_str() {
        let def = target.rsplit('/').next().unwrap();
        if let Some(values) = enum_values(&defs[def]) {
            return values
                .iter()
                .map(|v| format!("'{}'", v.trim_matches('"')))
                .collect::<Vec<_>>()
                .join(" | ");
        }
        return NODE_TYPES
            .iter()
            .find(|(_, d)| *d == def)
            .unwrap_or_else(|| panic!("{def} has no Node interface: add it to NODE_TYPES"))
            .0
            .to_string();
    }
    let one = |kind: &str| match kind {
        "integer" | "number" => "number".to_string(),
        "string" => "string".to_string(),
        "boolean" => "boolean".to_string(),
        "null" => "null".to_string(),
        "array" => format!("Array<{}>", ts_type(&prop["items"], defs)),
        "object" => match (
            prop["properties"].as_object(),
            prop.get("additionalProperties"),
        ) {
            (Some(props), _) => {
                let required = prop["required"].as_array().cloned().unwrap_or_default();
                let members: Vec<String> = props
                    .iter()
                    .map(|(name, p)| {
                        let mark = if required.iter().any(|r| r == name) {
                            ""
                        } else {
                            "?"
                        };
                        format!("{}{mark}: {}", node_name(name, p), ts_type(p, defs))
                    })
                    .collect();
                format!("{{ {} }}", members.join("; "))
            }
            (None, Some(values)) => format!("Record<string, {}>", ts_type(values, defs)),
            (None, None) => "Record<string, unknown>".to_string(),
        },
        other => panic!("no TypeScript type for {other}"),
    };
    match &prop["type"] {
        Value::String(kind) => one(kind),
        Value::Array(kinds) => {
            // `null` last, as TypeScript declarations usually read.
            let mut kinds: Vec<&str> = kinds.iter().map(|k| k.as_str().unwrap()).collect();
            kinds.sort_by_key(|k| *k == "null");
            kinds.iter().map(|k| one(k)).collect::<Vec<_>>().join(" | ")
        }
        _ => "unknown".to_string(),
    }
}

/// A JSDoc comment indented by `indent`.
fn jsdoc(text: &str, indent: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    match lines.as_slice() {
        [] => String::new(),
        [one] => format!("{indent}/** {one} */\n"),
        many => {
            let mut out = format!("{indent}/**\n");
            for line in many {
                if line.is_empty() {
                    out.push_str(&format!("{indent} *\n"));
                } else {
                    out.push_str(&format!("{indent} * {line}\n"));
                }
            }
            out.push_str(&format!("{indent} */\n"));
            out
        }
    }
}

/// The declarations of every interface of [`NODE_TYPES`].
pub fn node_types(defs: &Map<String, Value>) -> String {
    let mut out = String::from(
        "/* auto-generated by NAPI-RS */\n/* eslint-disable */\n\
         // The options and results below are generated from the core's types\n\
         // (docs/api/schema.json) by core/tests/schema/node.rs:\n\
         // CONCH_BLESS=1 cargo test -p conch-core --test schema. The rest of\n\
         // index.d.ts is written by `napi build` from the binding.\n",
    );
    for (name, def) in NODE_TYPES {
        let def = &defs[*def];
        out.push('\n');
        out.push_str(&jsdoc(
            &plain_doc(def["description"].as_str().unwrap_or_default()),
            "",
        ));
        out.push_str(&format!("export interface {name} {{\n"));
        for (field, prop, present) in fields(def) {
            let mut doc = plain_doc(prop["description"].as_str().unwrap_or_default());
            if prop["x-unit"] == "seconds" {
                doc.push_str(if doc.is_empty() { "" } else { "\n" });
                doc.push_str("In milliseconds.");
            }
            out.push_str(&jsdoc(&doc, "  "));
            let (mark, kind) = declared(present, ts_type(&prop, defs));
            out.push_str(&format!("  {}{mark}: {kind}\n", node_name(&field, &prop)));
        }
        out.push_str("}\n");
    }
    out
}

/// How a field is declared: an option may be left out or `null`; a
/// result's absent value is left out of the object (`undefined`, as a JS
/// API gives it), so its field is optional and never `null`.
fn declared(present: bool, kind: String) -> (&'static str, String) {
    match (present, kind.strip_suffix(" | null")) {
        (false, _) => ("?", kind),
        (true, Some(value)) => ("?", value.to_string()),
        (true, None) => ("", kind),
    }
}

/// The fields of `interface` as [`node_types`] declares them: name →
/// (optional: `name?:` or a type with `null`; the declared type).
pub fn ts_fields(
    defs: &Map<String, Value>,
    interface: &str,
) -> std::collections::BTreeMap<String, (bool, String)> {
    let def = NODE_TYPES
        .iter()
        .find(|(name, _)| *name == interface)
        .unwrap_or_else(|| panic!("no Node interface {interface}"))
        .1;
    fields(&defs[def])
        .into_iter()
        .map(|(field, prop, present)| {
            let (mark, kind) = declared(present, ts_type(&prop, defs));
            (node_name(&field, &prop), (!mark.is_empty(), kind))
        })
        .collect()
}
