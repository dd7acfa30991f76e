//! Key normalization against the shared vectors in `tests/vectors/keys.json`.

use conch_core::pty::keys::{Key, normalize_input};
use serde_json::Value;

const VECTORS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/vectors/keys.json"
));

#[test]
fn key_vectors() {
    let cases: Vec<Value> = serde_json::from_str(VECTORS).expect("keys.json parses");
    assert!(cases.len() > 50, "vectors present");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().expect("name");
        let app_cursor = case["app_cursor"].as_bool().expect("app_cursor");
        let got: Result<Vec<u8>, String> = if let Some(input) = case["input"].as_str() {
            Ok(normalize_input(input.as_bytes(), app_cursor).into_owned())
        } else {
            let key = case["key"].as_str().expect("input or key");
            Key::parse(key)
                .map(|k| k.encode(app_cursor))
                .map_err(|e| e.to_string())
        };
        match (
            &got,
            case["expect"].as_str(),
            case["error_starts_with"].as_str(),
        ) {
            (Ok(bytes), Some(expect), None) if bytes == expect.as_bytes() => {}
            (Err(msg), None, Some(prefix)) if msg.starts_with(prefix) => {}
            _ => failures.push(format!(
                "{name}: got {got:?}, expected {:?} / error {:?}",
                case["expect"], case["error_starts_with"]
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
