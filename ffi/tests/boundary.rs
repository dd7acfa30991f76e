//! Every `extern "C"` function runs its body inside the panic boundary
//! (`boundary::status`, `boundary::pointer` or `boundary::quiet`, given the
//! function's own name), so no panic can unwind into C: read from the
//! source, so that a new function without it fails here, before any host
//! finds out.

use std::path::Path;

/// Functions that cannot panic and so need no boundary: they only return a
/// static string or the thread-local message (read with `try_with`).
const NO_BOUNDARY: [&str; 2] = ["conch_version", "conch_last_error"];

/// `(function, first statement of its body)` for every extern "C" fn.
fn extern_fns() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("extern \"C\" fn ") {
            rest = &rest[at + "extern \"C\" fn ".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // Parameters and return types hold no brace: the first one
            // opens the body.
            let body = &rest[rest.find('{').unwrap() + 1..];
            let first = body
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with("//"))
                .unwrap_or_default()
                .to_string();
            found.push((name, first));
        }
    }
    found
}

#[test]
fn every_extern_fn_runs_inside_the_panic_boundary() {
    let fns = extern_fns();
    assert!(fns.len() > 40, "found only {} functions", fns.len());
    let mut missing = Vec::new();
    for (name, first) in &fns {
        if NO_BOUNDARY.contains(&name.as_str()) {
            continue;
        }
        let inside = ["status", "pointer", "quiet"]
            .iter()
            .any(|kind| first.starts_with(&format!("boundary::{kind}(\"{name}\"")));
        if !inside {
            missing.push(format!("{name}: {first}"));
        }
    }
    assert!(
        missing.is_empty(),
        "extern \"C\" functions whose body is not boundary::status/pointer/quiet(\"<own name>\", …):\n{}",
        missing.join("\n")
    );
    for name in NO_BOUNDARY {
        assert!(
            fns.iter().any(|(n, _)| n == name),
            "{name} is gone: update NO_BOUNDARY"
        );
    }
}
