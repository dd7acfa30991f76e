//! The interceptor configuration file, shared by the CLI and the bindings:
//!
//! ```json
//! { "enabled": true,
//!   "rules": [ { "pattern": "^cat\\b", "flags": "i", "tool": "read",
//!                "message": "Use the read tool to read files" } ] }
//! ```
//!
//! `enabled` defaults to `true`; without `rules` the built-in
//! [`default_rules`](crate::command::intercept::default_rules) apply, and
//! `"rules": []` means no rule at all. Every rule is compiled when the file
//! is loaded, so a bad pattern is an error naming the file and the rule
//! rather than a rule silently skipped. Unknown top-level keys are errors
//! (a misspelt `"rule"` would otherwise turn the custom rules off); unknown
//! keys inside a rule are ignored, as hosts' rule files carry extras.

use std::path::Path;

use serde::Deserialize;

use crate::command::intercept::{Interceptor, Rule};
use crate::error::{Error, Result};

/// A parsed and checked interceptor configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterceptorConfig {
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
    /// `None`: the default rules.
    #[serde(default)]
    pub rules: Option<Vec<Rule>>,
}

fn enabled_by_default() -> bool {
    true
}

/// Reads and checks the interceptor configuration at `path`.
pub fn load_interceptor_config(path: impl AsRef<Path>) -> Result<InterceptorConfig> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::io(
            format!("cannot read interceptor config {}", path.display()),
            e,
        )
    })?;
    parse_interceptor_config(&text).map_err(|e| {
        Error::InvalidArgument(format!(
            "invalid interceptor config {}: {e}",
            path.display()
        ))
    })
}

/// Parses and checks an interceptor configuration given as JSON text.
pub fn parse_interceptor_config(text: &str) -> Result<InterceptorConfig> {
    let config: InterceptorConfig =
        serde_json::from_str(text).map_err(|e| Error::InvalidArgument(e.to_string()))?;
    if let Some(rules) = &config.rules {
        check_rules(rules)?;
    }
    Ok(config)
}

/// Compiles `rules`; an error names every rule that does not compile.
pub(crate) fn check_rules(rules: &[Rule]) -> Result<Interceptor> {
    let (interceptor, errors) = Interceptor::new(rules);
    if errors.is_empty() {
        return Ok(interceptor);
    }
    let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
    Err(Error::InvalidArgument(all.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_custom_rules() {
        let c = parse_interceptor_config("{}").unwrap();
        assert!(c.enabled);
        assert_eq!(c.rules, None);
        let c = parse_interceptor_config(
            r#"{"enabled": false, "rules": [{"pattern": "^ls", "tool": "glob",
                "message": "Use glob", "allowSubcommands": true}]}"#,
        )
        .unwrap();
        assert!(!c.enabled);
        assert_eq!(c.rules.unwrap()[0].tool, "glob");
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let e = parse_interceptor_config(r#"{"rule": []}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `rule`"), "{e}");
        let e = parse_interceptor_config(
            r#"{"rules": [{"pattern": "(", "tool": "t", "message": "m"}]}"#,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("interceptor rule 0 (`(`)"), "{e}");
        let e = parse_interceptor_config(
            r#"{"rules": [{"pattern": "x", "flags": "q", "tool": "t", "message": "m"}]}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown flag `q`"), "{e}");
        let e = parse_interceptor_config(r#"{"rules": [{"pattern": "x"}]}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `tool`"), "{e}");
        let e = load_interceptor_config("/nonexistent/conch.json").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot read interceptor config /nonexistent/conch.json"),
            "{e}"
        );
    }
}
