//! A small parser for `conch <command> [--option value | --option=value |
//! --flag]... [--] [words...]`. For commands that take a shell command,
//! options end at `--` or at the first word that is not an option, so
//! `conch run ls -la` and `conch run -- ls --all` both keep the command's
//! own options; other commands take options anywhere ([`Mode::Anywhere`]).

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

/// Options and words of one command line.
#[derive(Debug, Default)]
pub struct Parsed {
    values: HashMap<&'static str, String>,
    flags: HashSet<&'static str>,
    /// The words after the options.
    pub words: Vec<String>,
}

/// Where options may appear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Before the words only (the words are a shell command).
    Leading,
    /// Anywhere before `--`.
    Anywhere,
}

/// Parses `args` for a command whose options taking a value are `valued`
/// and whose switches are `flags` (names without the leading `--`).
pub fn parse(
    args: impl Iterator<Item = String>,
    valued: &[&'static str],
    flags: &[&'static str],
    mode: Mode,
) -> Result<Parsed, String> {
    let mut parsed = Parsed::default();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if arg == "--" {
            break;
        }
        let Some(option) = arg.strip_prefix("--") else {
            parsed.words.push(arg);
            if mode == Mode::Leading {
                break;
            }
            continue;
        };
        let (name, inline) = match option.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (option, None),
        };
        if let Some(&known) = valued.iter().find(|&&v| v == name) {
            let value = match inline {
                Some(value) => value,
                None => args
                    .next()
                    .ok_or_else(|| format!("--{name} needs a value"))?,
            };
            parsed.values.insert(known, value);
        } else if let Some(&known) = flags.iter().find(|&&f| f == name) {
            if inline.is_some() {
                return Err(format!("--{name} takes no value"));
            }
            parsed.flags.insert(known);
        } else {
            return Err(format!("unknown option --{name}"));
        }
    }
    parsed.words.extend(args);
    Ok(parsed)
}

impl Parsed {
    /// The value of `--name`, parsed.
    pub fn value<T: FromStr>(&self, name: &str) -> Result<Option<T>, String> {
        self.values
            .get(name)
            .map(|v| {
                v.parse()
                    .map_err(|_| format!("invalid value for --{name}: {v:?}"))
            })
            .transpose()
    }

    /// The text of `--name`.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    pub fn flag(&self, name: &str) -> bool {
        self.flags.contains(name)
    }

    /// The words as one command: a single word as is, several joined by spaces.
    pub fn command(&self) -> Option<String> {
        (!self.words.is_empty()).then(|| self.words.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> impl Iterator<Item = String> {
        s.split(' ')
            .map(String::from)
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn options_end_at_the_first_word_or_double_dash() {
        let p = parse(
            words("--cwd /tmp --json ls -la --x"),
            &["cwd"],
            &["json"],
            Mode::Leading,
        )
        .unwrap();
        assert_eq!(p.text("cwd"), Some("/tmp"));
        assert!(p.flag("json"));
        assert_eq!(p.command().unwrap(), "ls -la --x");
        let p = parse(
            words("--timeout=5 -- --weird"),
            &["timeout"],
            &[],
            Mode::Leading,
        )
        .unwrap();
        assert_eq!(p.value::<f64>("timeout").unwrap(), Some(5.0));
        assert_eq!(p.words, ["--weird"]);
        let p = parse(words("7 --limit 2 8"), &["limit"], &[], Mode::Anywhere).unwrap();
        assert_eq!(p.text("limit"), Some("2"));
        assert_eq!(p.words, ["7", "8"]);
    }

    #[test]
    fn errors_name_the_option() {
        let fail = |line: &str, valued: &[&'static str], flags: &[&'static str]| {
            parse(words(line), valued, flags, Mode::Leading).unwrap_err()
        };
        assert_eq!(fail("--nope", &[], &[]), "unknown option --nope");
        assert_eq!(fail("--cwd", &["cwd"], &[]), "--cwd needs a value");
        assert_eq!(fail("--json=1", &[], &["json"]), "--json takes no value");
        let p = parse(words("--head x"), &["head"], &[], Mode::Leading).unwrap();
        assert_eq!(
            p.value::<usize>("head").unwrap_err(),
            "invalid value for --head: \"x\""
        );
    }
}
