//! Schemas of the wire forms the derives cannot see, for
//! `#[schemars(schema_with = …)]`.

use schemars::{Schema, SchemaGenerator, json_schema};

/// A duration or a time in seconds, marked with its unit so a face
/// knows to convert it.
pub fn seconds(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "number", "minimum": 0, "x-unit": "seconds"})
}

/// [`seconds`], or `null`.
pub fn optional_seconds(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["number", "null"], "exclusiveMinimum": 0, "x-unit": "seconds"})
}

/// A count, or `null`.
pub fn optional_count(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["integer", "null"], "minimum": 0})
}

/// A count of at least one, or `null` (the default).
pub fn positive(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["integer", "null"], "minimum": 1})
}

/// `{"NAME": "value"}`.
pub fn env(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["object", "null"], "additionalProperties": {"type": "string"}})
}

/// A terminal size, or `null`.
pub fn terminal(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": ["object", "null"],
        "properties": {
            "cols": {"type": "integer", "minimum": 0},
            "rows": {"type": "integer", "minimum": 0}
        },
        "required": ["cols", "rows"],
        "additionalProperties": false
    })
}

/// `"auto"`, `"none"` or the path of a snapshot file; its default
/// shown, as the derive shows the others' (`null` reads as it).
pub fn snapshot(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["string", "null"], "minLength": 1, "default": crate::defaults::SNAPSHOT})
}

/// A string, or `null`.
pub fn optional_string(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["string", "null"]})
}

/// TCP ports.
pub fn ports(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["array", "null"], "items": {"type": "integer", "minimum": 1, "maximum": 65535}})
}

/// A sandbox's `network`: `"allow"`, `"deny"`, or a domain policy.
pub fn network(_: &mut SchemaGenerator) -> Schema {
    let patterns = json_schema!({"type": "array", "items": {"type": "string", "minLength": 1}});
    json_schema!({
        "anyOf": [
            {"type": "string", "enum": ["allow", "deny"]},
            {
                "type": "object",
                "properties": {
                    "allow": patterns.clone(),
                    "deny": patterns,
                    "resolve": {"type": "object", "additionalProperties": {"type": "string"}}
                },
                "additionalProperties": false
            },
            {"type": "null"}
        ],
        "default": "deny"
    })
}

/// The `sandbox` option: a policy, `true`, `false` or `null`.
pub fn sandbox(generator: &mut SchemaGenerator) -> Schema {
    let policy = generator.subschema_for::<crate::process::sandbox::Sandbox>();
    json_schema!({"anyOf": [policy, {"type": ["boolean", "null"]}]})
}

/// The `mask` option: `true`, `false`, or a list of variable names; its
/// default shown (`null` reads as it).
pub fn mask(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": ["boolean", "array", "null"],
        "items": {"type": "string"},
        "default": true
    })
}
