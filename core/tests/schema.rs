//! Every file generated from the core's types, regenerated and compared
//! with the checked-in copy, so a field cannot change without them (and
//! their review) changing too:
//!
//! - `docs/api/schema.json`: the JSON Schema of the options and results
//!   ([`conch_core::wire::schema`]);
//! - `bindings/python/python/conch/_types.py`: the Python face's result
//!   classes (frozen dataclasses the binding fills from the serialized
//!   result), made from that schema.
//!
//! - `bindings/node/schema.d.ts`: the Node face's option and result
//!   interfaces (see `schema/node.rs`);
//! - the result tables of `docs/api/python.md` and `docs/api/node.md`,
//!   between `<!-- schema: NAME FACE -->` and `<!-- /schema -->`, each
//!   field in the face's spelling and type, its meaning from the doc
//!   comment;
//!
//! and checks what is written by hand beside the types: the tools' input
//! schemas (`core/src/tool/definition.rs`, with descriptions for the
//! model) must take exactly the fields of `BashToolArgs` and `JobToolArgs`,
//! of the same types, the same required.
//!
//! `CONCH_BLESS=1 cargo test -p conch-core --test schema` rewrites them, on
//! a developer's machine only: with `CI` set, `CONCH_BLESS` fails the test.

use std::path::Path;

use serde_json::{Map, Value};

#[path = "schema/node.rs"]
mod node;

fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Whether this run rewrites the files: `CONCH_BLESS=1`; any other value,
/// or `CONCH_BLESS` under CI, fails.
fn bless() -> bool {
    let Some(value) = std::env::var_os("CONCH_BLESS") else {
        return false;
    };
    assert!(
        !in_ci(),
        "CONCH_BLESS is set while CI is set: CI checks the generated files, it never rewrites them"
    );
    assert!(
        value == "1",
        "CONCH_BLESS={value:?}: set it to 1 to rewrite the generated files, or unset it"
    );
    true
}

/// Compares (or, blessed, writes) the file at `path` (from the repository
/// root) with `generated`.
fn check(path: &str, generated: &str) {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    if bless() {
        std::fs::write(&full, generated).unwrap_or_else(|e| panic!("writing {path}: {e}"));
        return;
    }
    let current = std::fs::read_to_string(&full).unwrap_or_default();
    if current != generated {
        let first = current
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| current.lines().count().min(generated.lines().count()));
        let line = |text: &str| {
            text.lines()
                .nth(first)
                .unwrap_or("<end of file>")
                .to_string()
        };
        panic!(
            "{path} is stale: it differs from what the core's types generate.\n\
             first difference at line {}:\n  checked in: {}\n  generated:  {}\n\
             Regenerate it with: CONCH_BLESS=1 cargo test -p conch-core --test schema",
            first + 1,
            line(&current),
            line(generated),
        );
    }
}

fn defs() -> Map<String, Value> {
    match conch_core::wire::schema()["$defs"].take() {
        Value::Object(defs) => defs,
        other => panic!("$defs is not an object: {other}"),
    }
}

#[test]
fn checked_in_schema_is_up_to_date() {
    let schema = conch_core::wire::schema();
    check(
        "docs/api/schema.json",
        &(serde_json::to_string_pretty(&schema).unwrap() + "\n"),
    );
}

/// The plain dicts of the Python face (`ToolResult.details`), in this order.
const PYTHON_DICTS: &[&str] = &["Details", "Meta", "Truncation", "LineRange"];

/// The result classes of the Python face, in this order.
const PYTHON_RESULTS: &[&str] = &[
    "BashResult",
    "PtyResult",
    "JobPoll",
    "JobInfo",
    "SandboxApplied",
];

#[test]
fn python_result_classes_are_up_to_date() {
    check(
        "bindings/python/python/conch/_types.py",
        &python_types(&defs()),
    );
}

/// A doc comment as plain text for another language: rustdoc links
/// (`` [`x`] ``, `` [`x`](y) ``) become the code they show, without the
/// crate path.
fn plain_doc(text: &str) -> String {
    let links = regex::Regex::new(r"\[(`[^`]*`)\](\([^)]*\))?").unwrap();
    links
        .replace_all(text, "$1")
        .replace("crate::", "")
        .replace("super::", "")
}

/// A definition's fields: those always present in declaration order (as
/// `required` lists them), with the long texts (`output`, `command`) last,
/// so a printed result shows its counts first; then those that may be
/// left out, each with `false`.
fn fields(def: &Value) -> Vec<(String, Value, bool)> {
    let props = def["properties"].as_object().expect("properties");
    let mut names: Vec<String> = def["required"]
        .as_array()
        .map(|r| r.iter().map(|n| n.as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    names.sort_by_key(|n| matches!(n.as_str(), "output" | "command"));
    let mut out: Vec<(String, Value, bool)> = names
        .iter()
        .map(|n| (n.clone(), props[n].clone(), true))
        .collect();
    for (name, prop) in props {
        if !names.contains(name) {
            out.push((name.clone(), prop.clone(), false));
        }
    }
    out
}

/// The names a definition's enum takes (`enum`, or `oneOf` of `const`s).
fn enum_values(def: &Value) -> Option<Vec<String>> {
    if let Some(values) = def["enum"].as_array() {
        return Some(values.iter().map(|v| v.to_string()).collect());
    }
    def["oneOf"].as_array().map(|variants| {
        variants
            .iter()
            .map(|v| v["const"].to_string())
            .collect::<Vec<_>>()
    })
}

fn python_type(prop: &Value) -> String {
    if let Some(members) = prop["anyOf"].as_array() {
        return members
            .iter()
            .map(python_type)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    if prop["type"] == "null" {
        return "None".into();
    }
    if let Some(target) = prop["$ref"].as_str() {
        return target.rsplit('/').next().unwrap().to_string();
    }
    let one = |kind: &str| match kind {
        "integer" => "int".to_string(),
        "number" => "float".to_string(),
        "string" => "str".to_string(),
        "boolean" => "bool".to_string(),
        "array" => format!("list[{}]", python_type(&prop["items"])),
        other => panic!("no Python type for {other}"),
    };
    match &prop["type"] {
        Value::String(kind) => one(kind),
        Value::Array(kinds) => {
            let kinds: Vec<&str> = kinds.iter().map(|k| k.as_str().unwrap()).collect();
            let mut text: Vec<String> = kinds
                .iter()
                .filter(|k| **k != "null")
                .map(|k| one(k))
                .collect();
            if kinds.contains(&"null") {
                text.push("None".into());
            }
            text.join(" | ")
        }
        other => panic!("no Python type for {other}"),
    }
}

fn python_docstring(text: &str, indent: &str) -> String {
    let text = plain_doc(text)
        .replace('\\', "\\\\")
        .replace("\"\"\"", "\\\"\\\"\\\"");
    let body: Vec<String> = text
        .lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{indent}{l}")
            }
        })
        .collect();
    if body.len() == 1 {
        format!("{indent}\"\"\"{}\"\"\"\n", text)
    } else {
        format!(
            "{indent}\"\"\"{}\n{indent}\"\"\"\n",
            body.join("\n").trim_start()
        )
    }
}

fn python_types(defs: &Map<String, Value>) -> String {
    let mut out = String::from(
        "\"\"\"The results of the core as Python classes: generated from docs/api/schema.json\n\
         by core/tests/schema.rs, do not edit (regenerate with\n\
         ``CONCH_BLESS=1 cargo test -p conch-core --test schema``). The binding\n\
         fills them from the core's serialized result.\"\"\"\n\n\
         from __future__ import annotations\n\n\
         from dataclasses import dataclass\n\
         from typing import TYPE_CHECKING, Literal, TypedDict\n\n\
         if TYPE_CHECKING:\n    \
         from typing_extensions import NotRequired\n",
    );
    let mut aliases = std::collections::BTreeSet::new();
    for name in PYTHON_RESULTS.iter().chain(PYTHON_DICTS) {
        for (_, prop, _) in fields(&defs[*name]) {
            if let Some(target) = prop["$ref"].as_str() {
                let target = target.rsplit('/').next().unwrap().to_string();
                if enum_values(&defs[&target]).is_some() {
                    aliases.insert(target);
                }
            }
        }
    }
    for alias in &aliases {
        let values = enum_values(&defs[alias]).expect("a referenced type is an enum");
        out.push_str(&format!(
            "\n{alias} = Literal[{}]\n{}",
            values.join(", "),
            python_docstring(defs[alias]["description"].as_str().unwrap_or(alias), ""),
        ));
    }
    for name in PYTHON_RESULTS {
        let def = &defs[*name];
        out.push_str(&format!("\n\n@dataclass(frozen=True)\nclass {name}:\n"));
        out.push_str(&python_docstring(
            def["description"].as_str().unwrap_or(name),
            "    ",
        ));
        for (field, prop, _) in fields(def) {
            out.push_str(&format!("\n    {field}: {}\n", python_type(&prop)));
            let mut doc = prop["description"].as_str().unwrap_or_default().to_string();
            if prop["x-unit"] == "seconds" {
                doc.push_str(if field == "started" {
                    " In seconds since the Unix epoch."
                } else {
                    " In seconds."
                });
            }
            if !doc.trim().is_empty() {
                out.push_str(&python_docstring(doc.trim(), "    "));
            }
        }
    }
    for name in PYTHON_DICTS {
        let def = &defs[*name];
        out.push_str(&format!("\n\nclass {name}(TypedDict):\n"));
        out.push_str(&python_docstring(
            def["description"].as_str().unwrap_or(name),
            "    ",
        ));
        for (field, prop, present) in fields(def) {
            let kind = python_type(&prop);
            // Left out when absent, never `null`.
            let kind = if present {
                kind
            } else {
                format!("NotRequired[{}]", kind.trim_end_matches(" | None"))
            };
            out.push_str(&format!("\n    {field}: {kind}\n"));
            if let Some(doc) = prop["description"].as_str() {
                out.push_str(&python_docstring(doc.trim(), "    "));
            }
        }
    }
    out.push_str(&format!(
        "\n\n__all__ = [{}]\n",
        aliases
            .iter()
            .map(String::as_str)
            .chain(PYTHON_RESULTS.iter().copied())
            .chain(PYTHON_DICTS.iter().copied())
            .map(|n| format!("\"{n}\""))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out
}

#[test]
fn node_interfaces_are_up_to_date() {
    check("bindings/node/schema.d.ts", &node::node_types(&defs()));
}

/// The markdown table of definition `name` for `face` (`python`, `node`):
/// each in the types the face's declarations (generated here) give it.
fn doc_table(defs: &Map<String, Value>, name: &str, face: &str) -> String {
    let node = node::ts_fields(defs, name);
    let mut out = String::from("| field | type | meaning |\n|---|---|---|\n");
    for (field, prop, _) in fields(&defs[name]) {
        let seconds = prop["x-unit"] == "seconds";
        let (field, kind) = match face {
            "python" => {
                let kind = match prop["$ref"].as_str() {
                    Some(target) => {
                        let values = enum_values(&defs[target.rsplit('/').next().unwrap()]);
                        values.expect("an enum").join(" | ")
                    }
                    None => python_type(&prop),
                };
                let kind = if seconds {
                    kind.replace("int", "float")
                } else {
                    kind
                };
                (field, kind)
            }
            "node" => {
                let key = conch_core::wire::camel_key(&field);
                let key = if seconds { format!("{key}Ms") } else { key };
                let (optional, declared) = node.get(&key).cloned().unwrap_or_default();
                let shown = if optional && !declared.contains("null") {
                    format!("{key}?")
                } else {
                    key
                };
                (shown, declared)
            }
            other => panic!("no face {other}"),
        };
        let mut meaning = plain_doc(prop["description"].as_str().unwrap_or_default())
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace('|', "\\|");
        if seconds {
            let unit = if face == "node" {
                "milliseconds"
            } else {
                "seconds"
            };
            meaning.push_str(&format!(" In {unit}."));
        }
        out.push_str(&format!(
            "| `{field}` | `{}` | {meaning} |\n",
            kind.replace('|', "\\|")
        ));
    }
    out
}

/// `text` with every `<!-- schema: NAME FACE -->` block filled anew.
fn fill_tables(text: &str, defs: &Map<String, Value>) -> String {
    let block =
        regex::Regex::new(r"(?s)<!-- schema: (\w+) (\w+) -->\n.*?<!-- /schema -->").unwrap();
    block
        .replace_all(text, |c: &regex::Captures<'_>| {
            format!(
                "<!-- schema: {} {} -->\n{}<!-- /schema -->",
                &c[1],
                &c[2],
                doc_table(defs, &c[1], &c[2])
            )
        })
        .into_owned()
}

#[test]
fn doc_tables_are_up_to_date() {
    let defs = defs();
    for path in ["docs/api/python.md", "docs/api/node.md"] {
        let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
        let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(
            text.contains("<!-- schema: "),
            "{path} has no generated table"
        );
        check(path, &fill_tables(&text, &defs));
    }
}

/// The JSON types a property takes, `null` aside.
fn kinds(prop: &Value) -> Vec<String> {
    let mut kinds: Vec<String> = match &prop["type"] {
        Value::String(kind) => vec![kind.clone()],
        Value::Array(list) => list
            .iter()
            .map(|k| k.as_str().unwrap().to_string())
            .collect(),
        _ => Vec::new(),
    };
    kinds.retain(|k| k != "null");
    kinds
}

/// `(name, kinds, minimum)` of each property, and the required names.
type Shape = (Vec<(String, Vec<String>, Value)>, Value);

fn shape(schema: &Value) -> Shape {
    let props = schema["properties"].as_object().expect("properties");
    let fields = props
        .iter()
        .map(|(name, prop)| (name.clone(), kinds(prop), prop["minimum"].clone()))
        .collect();
    let mut required: Vec<Value> = schema["required"].as_array().cloned().unwrap_or_default();
    required.sort_by_key(Value::to_string);
    (fields, Value::Array(required))
}

#[test]
fn tool_input_schemas_take_the_argument_types() {
    use conch_core::tool::{BashTool, BashToolConfig, JobTool};
    let defs = defs();
    let bash = BashTool::new(BashToolConfig::default()).expect("a bash tool");
    let job = JobTool::new(&bash);
    for (tool, args) in [
        (bash.definition(), "BashToolArgs"),
        (job.definition(), "JobToolArgs"),
    ] {
        assert_eq!(
            shape(&tool.input_schema),
            shape(&defs[args]),
            "the {} tool's input_schema and {args} differ (core/src/tool/definition.rs)",
            tool.name
        );
    }
}

/// The option types the Python face takes as keyword arguments, each with
/// the name of the macro of `bindings/python/src/option_signatures.rs` that holds
/// their text signature.
const PYTHON_OPTIONS: &[(&str, &str)] = &[
    ("ShellOptions", "shell_options"),
    ("RunOptions", "run_options"),
    ("ExecuteOptions", "execute_options"),
    ("JobOptions", "job_options"),
    ("PtyOptions", "pty_options"),
];

/// An option's keyword parameters as the Python face takes them: every
/// property of the type but `command` (a positional parameter), by name.
fn python_options(def: &Value) -> Vec<(String, Value)> {
    let props = def["properties"].as_object().expect("properties");
    props
        .iter()
        .filter(|(name, _)| name.as_str() != "command")
        .map(|(name, prop)| (name.clone(), prop.clone()))
        .collect()
}

/// The Python type of an option in the stub: the schema's, but where
/// Python takes more (a path, any mapping, a tuple for a terminal size) or
/// names the shape (`_EnvPolicy`, `_Sandbox`) the stub's own alias.
fn python_option_type(name: &str, prop: &Value) -> String {
    match name {
        "cwd" | "shell" => "_Path | None".into(),
        "env" => "_Env | None".into(),
        "snapshot" => "_Snapshot".into(),
        "artifacts_dir" => "_Path | ArtifactStore | None".into(),
        "env_policy" => "_EnvPolicy | None".into(),
        "sandbox" => "_Sandbox".into(),
        "mask" => "_Mask".into(),
        "carriage_return" => "_CarriageReturn".into(),
        "engine" => "_EngineChoice".into(),
        "pty" => "tuple[int, int] | None".into(),
        "rules" => "Sequence[_InterceptorRule | Mapping[str, Any]] | None".into(),
        "tool_names" => "Sequence[str]".into(),
        _ => python_type(prop),
    }
}

/// An option's default as Python source: the schema's when it is a
/// scalar; a duration (serialized as `{secs, nanos}`) as its seconds; an
/// empty list of a list that takes no `None` as `()`; otherwise (a nested
/// object, none) `None`, which reads as the core's default.
fn python_default(prop: &Value) -> String {
    match &prop["default"] {
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("'{s}'"),
        Value::Object(d) if prop["x-unit"] == "seconds" => {
            let part = |key: &str| d[key].as_f64().expect("a duration's secs and nanos");
            (part("secs") + part("nanos") / 1e9).to_string()
        }
        Value::Array(items) if items.is_empty() && prop["type"] == "array" => "()".into(),
        _ => "None".into(),
    }
}

/// The text signatures of the option parameters, as macros the binding
/// splices into its `text_signature!`s.
fn python_signatures(defs: &Map<String, Value>) -> String {
    let mut out = String::from(
        "//! The keyword parameters of the Python face's option types as text\n\
         //! signatures: generated from docs/api/schema.json by\n\
         //! core/tests/schema.rs (`CONCH_BLESS=1 cargo test -p conch-core --test\n\
         //! schema`); do not edit. `#[doc]` takes only literals and macros, so\n\
         //! each is a macro giving a literal.\n",
    );
    for (def, name) in PYTHON_OPTIONS {
        let params: Vec<String> = python_options(&defs[*def])
            .iter()
            .map(|(key, prop)| format!("{key}={}", python_default(prop)))
            .collect();
        out.push_str(&format!(
            "\n/// The keyword parameters of `{def}`.\nmacro_rules! {name} {{\n    () => {{\n        \"{}\"\n    }};\n}}\npub(crate) use {name};\n",
            params.join(", ")
        ));
    }
    out
}

/// `stub` with every `# schema: NAME` … `# /schema` block of parameters
/// filled anew.
fn fill_stub(stub: &str, defs: &Map<String, Value>) -> String {
    let block = regex::Regex::new(r"(?s)( *)# schema: (\w+)\n.*?# /schema").unwrap();
    block
        .replace_all(stub, |c: &regex::Captures<'_>| {
            let indent = &c[1];
            let mut out = format!("{indent}# schema: {}\n", &c[2]);
            for (key, prop) in python_options(&defs[&c[2]]) {
                out.push_str(&format!(
                    "{indent}{key}: {} = {},\n",
                    python_option_type(&key, &prop),
                    python_default(&prop).replace('\'', "\"")
                ));
            }
            out.push_str(&format!("{indent}# /schema"));
            out
        })
        .into_owned()
}

#[test]
fn python_option_parameters_are_up_to_date() {
    let defs = defs();
    check(
        "bindings/python/src/option_signatures.rs",
        &python_signatures(&defs),
    );
    let path = "bindings/python/python/conch/__init__.pyi";
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let stub = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"));
    for (def, _) in PYTHON_OPTIONS {
        assert!(
            stub.contains(&format!("# schema: {def}\n")),
            "{path} has no parameters of {def}"
        );
    }
    check(path, &fill_stub(&stub, &defs));
}
