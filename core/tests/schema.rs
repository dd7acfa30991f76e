//! `docs/api/schema.json` is the JSON Schema of the core's options and
//! results, generated from their serde form ([`conch_core::wire::schema`]);
//! this test regenerates it and fails when the checked-in copy differs, so
//! a field cannot change without the schema (and the faces' types made
//! from it) changing too. `CONCH_BLESS=1 cargo test -p conch-core --test
//! schema` rewrites it, on a developer's machine only: with `CI` set,
//! `CONCH_BLESS` fails the test.

use std::path::Path;

fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Whether this run rewrites the file: `CONCH_BLESS=1`; any other value,
/// or `CONCH_BLESS` under CI, fails.
fn bless() -> bool {
    let Some(value) = std::env::var_os("CONCH_BLESS") else {
        return false;
    };
    assert!(
        !in_ci(),
        "CONCH_BLESS is set while CI is set: CI never rewrites docs/api/schema.json"
    );
    assert!(
        value == "1",
        "CONCH_BLESS={value:?}: set it to 1 to rewrite docs/api/schema.json, or unset it"
    );
    true
}

#[test]
fn checked_in_schema_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/api/schema.json");
    let generated = serde_json::to_string_pretty(&conch_core::wire::schema()).unwrap() + "\n";
    if bless() {
        std::fs::write(&path, &generated).expect("writing docs/api/schema.json");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
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
            "docs/api/schema.json is stale: it differs from what the core's types generate.\n\
             first difference at line {}:\n  checked in: {}\n  generated:  {}\n\
             Regenerate it with: CONCH_BLESS=1 cargo test -p conch-core --test schema",
            first + 1,
            line(&current),
            line(&generated),
        );
    }
}
