//! The bash interceptor: steer the model from shell idioms to the host's
//! dedicated tools (`cat f` → `read`, `sed -i` → `edit`, …).
//!
//! A [`Rule`] is `{pattern, flags?, tool, message}`; it applies only when its
//! `tool` is among the host's tool names, and the first rule (in order) whose
//! pattern matches blocks the command with
//! `Blocked: <message>\n\nOriginal command: <command>` and the rule's tool as
//! `suggested_tool`.
//!
//! A pattern is matched against each simple command of the line (split with
//! the [tokenizer](super::tokenize) on `;`, `&&`, `||`, `|`, `|&`, `&`, line
//! breaks and parentheses), starting at its command word: leading variable
//! assignments and `!`, `{`, `time`, `if`, `then`, `elif`, `else`, `while`,
//! `until`, `do` are skipped, so `cd x && cat f`, `FOO=1 cat f` and `(cat f)`
//! are seen while `echo "cat f"` is not. The text a rule sees keeps quotes and
//! redirections (`echo x > f`, `cat <<EOF > f`) but not heredoc bodies or
//! comments. Commands fed by a pipe (`ps | grep node`) are not matched: they
//! filter the output of the command before them, which a file tool cannot do.
//! Wrappers (`sudo`, `xargs`, `env`) and the inside of `$(…)` are not looked
//! into; the interceptor steers, it is not a sandbox.
//!
//! Patterns use Rust `regex` syntax (no look-around or back-references; every
//! match runs in linear time). `flags` may hold `i` (case-insensitive), `m`
//! (multi-line `^`/`$`), `s` (`.` matches `\n`) and `x` (verbose). An invalid
//! pattern or an unknown flag is reported as a [`RuleError`]; the other rules
//! keep working.

use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

use super::segment::simple_commands;
use super::tokenize::tokenize;
use crate::error::{Error, Result};

/// One interception rule, as hosts store it (JSON/TOML `{pattern, flags?,
/// tool, message}`; unknown keys, such as an `allowSubcommands` list some
/// hosts keep, are ignored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rule {
    /// A regex matched against each simple command's text.
    pub pattern: String,
    /// Any of `i`, `m`, `s`, `x`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<String>,
    /// The host tool the model should use instead; the rule applies only when
    /// the host has it.
    pub tool: String,
    /// Why, shown after `Blocked: `.
    pub message: String,
}

/// A blocked command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Interception {
    /// Always `true` (kept for the hosts' `{block, message, suggestedTool}` shape).
    pub blocked: bool,
    /// `Blocked: <rule message>\n\nOriginal command: <trimmed command>`.
    pub message: String,
    /// The blocking rule's `tool`.
    pub suggested_tool: String,
}

/// A rule that could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("interceptor rule {index} (`{pattern}`): {reason}")]
pub struct RuleError {
    /// The rule's position in the list given.
    pub index: usize,
    pub pattern: String,
    /// The regex parser's message, or the unknown flag.
    pub reason: String,
}

// Pieces of the default patterns. A rule sees one simple command, quotes
// included, so patterns that look past the command word step over whole
// quoted strings: an `-i` or a `>` inside quotes is text, not syntax.
macro_rules! quoted_or_plain {
    ($plain:literal) => {
        concat!($plain, r#"|\\[\s\S]|'[^']*'|"(?:[^"\\]|\\[\s\S])*""#)
    };
}
/// One shell word.
macro_rules! word {
    () => {
        concat!("(?:", quoted_or_plain!(r#"[^\s'"\\]"#), ")+")
    };
}

/// `perl` switches before the one that turns in-place editing on: any
/// switch word, and the code or path after `-e`, `-E`, `-I`.
const PERL_SWITCHES: &str = concat!(
    r#"(?:\s+(?:-[^\s'"]*[eEI]\s+"#,
    word!(),
    "|-",
    word!(),
    "))*?"
);

/// The seven default rules (their order, tools and messages are the ones
/// listed in docs/behaviour.md §6). Each pattern is written so that it
/// blocks only what its message is about:
/// - readers: `cat <<EOF` and `cat > f` are writes, not reads;
/// - `sed`: an `-i`/`-Ei`/`-i.bak`/`--in-place` option anywhere, not only first;
/// - `perl`: only a real in-place switch (`-i`, `-pi`, `-0777 -pi`, `-i.bak`)
///   among perl's own switches, not any later `-…i` (`--ignore`, `'-i'` in
///   code, an argument of the script);
/// - `awk`: also `gawk`, and not `-i inplace` inside the program text;
/// - writes: `cat <<EOF > f` and `cat > f <<EOF` count; `>&2`, `2>&1`,
///   `> /dev/…` and a `>` inside quotes do not (no file is written).
pub fn default_rules() -> Vec<Rule> {
    let rule = |pattern: String, tool: &str, message: &str| Rule {
        pattern,
        flags: None,
        tool: tool.to_owned(),
        message: message.to_owned(),
    };
    vec![
        rule(
            r"^\s*(cat|head|tail|less|more)\s+(?:[^\s<>]|<\s*[^\s<(])".into(),
            "read",
            "Use the `read` tool instead of cat/head/tail. It provides better context and handles binary files.",
        ),
        rule(
            r"^\s*(grep|rg|ripgrep|ag|ack)\s+".into(),
            "grep",
            "Use the `grep` tool instead of grep/rg. It respects .gitignore and provides structured output.",
        ),
        rule(
            r"^\s*(find|fd|locate)\s+.*(-name|-iname|-type|--type|-glob)".into(),
            "find",
            "Use the `find` tool instead of find/fd. It respects .gitignore and is faster for glob patterns.",
        ),
        rule(
            concat!(
                r"^\s*sed(?:\s+",
                word!(),
                r")*?\s+(?:-[A-Za-z]*i|--in-place)"
            )
            .into(),
            "edit",
            "Use the `edit` tool instead of sed -i. It provides diff preview and fuzzy matching.",
        ),
        rule(
            format!(r"^\s*perl{PERL_SWITCHES}\s+-[0-9aclnpstTuUwWX]*i"),
            "edit",
            "Use the `edit` tool instead of perl -i. It provides diff preview and fuzzy matching.",
        ),
        rule(
            concat!(
                r"^\s*g?awk(?:\s+",
                word!(),
                r#")*?\s+(?:-i\s*|--include(?:=|\s+))['"]?inplace\b"#
            )
            .into(),
            "edit",
            "Use the `edit` tool instead of awk -i inplace. It provides diff preview and fuzzy matching.",
        ),
        rule(
            concat!(
                r"^\s*(?:echo|printf|cat)(?:[\s<](?:",
                quoted_or_plain!(r#"[^'"\\>]"#),
                // not file writes: `>/dev/…`, `>&2`, `2>&1`
                r"|>[>|]?\s*/dev/|>&)*?)?",
                // a write: `>`, `>>`, `>|`, `&>` (the `&` and a fd number are
                // plain text before it) to a target that is not `&…`,
                // `(…)` or `/dev/…`
                r">[>|]?\s*(?:[^\s&(/<>|]|/(?:[^d\s]|d[^e\s]|de[^v\s]|dev[^/\s]))"
            )
            .into(),
            "write",
            "Use the `write` tool instead of echo/cat redirection. It handles encoding and provides confirmation.",
        ),
    ]
}

struct CompiledRule {
    regex: Regex,
    rule: Rule,
}

/// Compiled rules, ready to check many commands.
pub struct Interceptor {
    rules: Vec<CompiledRule>,
}

static DEFAULT_INTERCEPTOR: LazyLock<Interceptor> =
    LazyLock::new(|| Interceptor::new(&default_rules()).0);

impl Interceptor {
    /// Compiles `rules`. Rules that fail are left out of the interceptor and
    /// reported, one [`RuleError`] each; the others work.
    pub fn new(rules: &[Rule]) -> (Interceptor, Vec<RuleError>) {
        let mut compiled = Vec::with_capacity(rules.len());
        let mut errors = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            match compile(rule) {
                Ok(regex) => compiled.push(CompiledRule {
                    regex,
                    rule: rule.clone(),
                }),
                Err(reason) => errors.push(RuleError {
                    index,
                    pattern: rule.pattern.clone(),
                    reason,
                }),
            }
        }
        (Interceptor { rules: compiled }, errors)
    }

    /// The rules that apply for a host with `tool_names` (those whose tool
    /// it has), in order: what a tool definition lists as refused.
    pub fn active_rules<'a, S: AsRef<str>>(
        &'a self,
        tool_names: &'a [S],
    ) -> impl Iterator<Item = &'a Rule> + 'a {
        self.rules
            .iter()
            .map(|r| &r.rule)
            .filter(|r| tool_names.iter().any(|t| t.as_ref() == r.tool))
    }

    /// The [`default_rules`], compiled once per process.
    pub fn defaults() -> &'static Interceptor {
        &DEFAULT_INTERCEPTOR
    }

    /// The first rule whose tool is in `tool_names` and whose pattern matches
    /// a simple command of `command`, as an [`Interception`].
    pub fn check<S: AsRef<str>>(&self, command: &str, tool_names: &[S]) -> Option<Interception> {
        let has_tool = |tool: &str| tool_names.iter().any(|t| t.as_ref() == tool);
        let mut active = self
            .rules
            .iter()
            .filter(|r| has_tool(&r.rule.tool))
            .peekable();
        active.peek()?;
        let command = command.trim();
        let tokens = tokenize(command).tokens;
        let segments: Vec<&str> = simple_commands(command, &tokens)
            .into_iter()
            .filter(|c| !c.piped)
            .map(|c| c.text(command))
            .collect();
        let hit = active.find(|r| segments.iter().any(|s| r.regex.is_match(s)))?;
        Some(Interception {
            blocked: true,
            message: format!(
                "Blocked: {}\n\nOriginal command: {command}",
                hit.rule.message
            ),
            suggested_tool: hit.rule.tool.clone(),
        })
    }
}

/// Checks `command` against `rules` (`None`: the [`default_rules`], compiled
/// once) for a host that has the tools `tool_names`. An invalid rule is an
/// [`Error::InvalidArgument`] naming every bad rule; to keep the valid rules
/// working despite bad ones, or to check many commands against custom rules,
/// build an [`Interceptor`] once.
pub fn check_bash_interception<S: AsRef<str>>(
    command: &str,
    tool_names: &[S],
    rules: Option<&[Rule]>,
) -> Result<Option<Interception>> {
    let Some(rules) = rules else {
        return Ok(Interceptor::defaults().check(command, tool_names));
    };
    let (interceptor, errors) = Interceptor::new(rules);
    if !errors.is_empty() {
        let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
        return Err(Error::InvalidArgument(all.join("; ")));
    }
    Ok(interceptor.check(command, tool_names))
}

fn compile(rule: &Rule) -> std::result::Result<Regex, String> {
    let mut builder = RegexBuilder::new(&rule.pattern);
    for flag in rule.flags.as_deref().unwrap_or("").chars() {
        match flag {
            'i' => builder.case_insensitive(true),
            'm' => builder.multi_line(true),
            's' => builder.dot_matches_new_line(true),
            'x' => builder.ignore_whitespace(true),
            other => {
                return Err(format!("unknown flag `{other}` (supported: i, m, s, x)"));
            }
        };
    }
    builder.build().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [&str; 5] = ["read", "grep", "find", "edit", "write"];

    fn tool_for(command: &str) -> Option<String> {
        Interceptor::defaults()
            .check(command, &ALL)
            .map(|i| i.suggested_tool)
    }

    #[test]
    fn default_rules_compile() {
        let (interceptor, errors) = Interceptor::new(&default_rules());
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(interceptor.rules.len(), 7);
    }

    #[test]
    fn perl_in_place_only() {
        for blocked in [
            "perl -pi -e 's/a/b/' f",
            "perl -i -pe 's/a/b/' f",
            "perl -i.bak -p -e 's/a/b/' f",
            "perl -0777 -pi -e 's/a/b/' f",
            "perl -pie 's/a/b/' f",
            "perl -I lib -wpi -e 1 f",
        ] {
            assert_eq!(tool_for(blocked).as_deref(), Some("edit"), "{blocked}");
        }
        for allowed in [
            "perl -ne 'print if /-i/' f",
            "perl script.pl --ignore",
            "perl -e 'print \"-hi\"'",
            "perl -w script.pl -i",
            "perl -ne 'print' f -i",
            "perl -Mstrict -e 1",
        ] {
            assert_eq!(tool_for(allowed), None, "{allowed}");
        }
    }

    #[test]
    fn writes_but_not_dev_or_fd_redirects() {
        for blocked in [
            "echo x > f",
            "echo x>>f",
            "printf '%s' x >| f",
            "echo x &> f",
            "echo x 2>&1 > f",
            "echo>f",
            "cat <<EOF > f\nhi\nEOF",
            "cat<<'EOF' >f\nhi\nEOF",
            "cat > f <<EOF\nhi\nEOF",
        ] {
            assert_eq!(tool_for(blocked).as_deref(), Some("write"), "{blocked}");
        }
        for allowed in [
            "echo x >&2",
            "echo x 2>&1",
            "echo x > /dev/null",
            "echo x >>/dev/stderr",
            "echo 'a > b'",
            "echo \"a > b\"",
            "echo x >(tee f)",
            "cat <<EOF\na > b\nEOF",
        ] {
            assert_eq!(tool_for(allowed), None, "{allowed}");
        }
    }

    #[test]
    fn flags_and_errors() {
        let rules = [
            Rule {
                pattern: "(".into(),
                flags: None,
                tool: "t".into(),
                message: "m".into(),
            },
            Rule {
                pattern: "^CURL".into(),
                flags: Some("g".into()),
                tool: "t".into(),
                message: "m".into(),
            },
            Rule {
                pattern: "^CURL".into(),
                flags: Some("i".into()),
                tool: "t".into(),
                message: "no curl".into(),
            },
        ];
        let (interceptor, errors) = Interceptor::new(&rules);
        assert_eq!(errors.iter().map(|e| e.index).collect::<Vec<_>>(), [0, 1]);
        assert!(errors[1].reason.contains("unknown flag `g`"));
        let hit = interceptor.check("curl x", &["t"]).unwrap();
        assert_eq!(hit.message, "Blocked: no curl\n\nOriginal command: curl x");
        let err = check_bash_interception("curl x", &["t"], Some(&rules)).unwrap_err();
        assert!(
            err.to_string().contains("interceptor rule 0 (`(`)"),
            "{err}"
        );
    }
}
