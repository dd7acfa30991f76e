//! What the subcommands' command lines share, and how `conch` words one it
//! cannot parse.
//!
//! clap parses (see each subcommand's `Args`). For a command that takes a
//! shell command (`run`, `pty`), options end at `--` or at the first word
//! that is not an option, so `conch run ls -la` and `conch run -- ls --all`
//! both keep the command's own options; an option's value is the next
//! argument whatever it looks like (`--timeout -5`, `--head -1` reach the
//! value check). A repeated option keeps its last value. Errors are one
//! line, `conch <command>: <what>`, exit status 2: `unknown option --x`,
//! `--cwd needs a value`, `invalid value for --head: "x"`, `--json takes
//! no value`.
//!
//! clap reads a number only as a number (an `f64`, so `nan`, `-1` and
//! `1e300` get through); whether it is a valid value of its option is the
//! core's decision ([`timeout`], [`count`]), worded by the core (`--head must
//! be a whole number >= 0, got -1`), so every face accepts and refuses the
//! same values. Words and paths are read as the OS gives them (`OsString`,
//! `PathBuf`): one that is not UTF-8 never stops the parse; where the core
//! needs text ([`text`]) it is a usage error naming the argument.

use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use conch_core::command::bytes::command_from_bytes;
use conch_core::input::{TimeUnit, count_option, timeout_option};

/// The layout of a subcommand's help: its synopsis first (the usage as
/// written in each `Args`), then what it does, its arguments and options.
pub const HELP: &str = "{usage}\n\n{about}\n\n{all-args}{after-help}";

/// The words of a shell command as one command: a single word as is,
/// several joined by spaces. `Ok(None)` when there are none. Bytes that are
/// not UTF-8 reach bash as they are (`conch_core::command::bytes`).
pub fn command(words: &[OsString]) -> Result<Option<String>, String> {
    use std::os::unix::ffi::OsStrExt;
    if words.is_empty() {
        return Ok(None);
    }
    let mut line = OsString::new();
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            line.push(" ");
        }
        line.push(word);
    }
    Ok(Some(command_from_bytes(line.as_bytes()).into_owned()))
}

/// An argument the core takes as text; one that is not UTF-8 is a usage
/// error naming it (`--cwd is not valid UTF-8: "a\xFF"`).
pub fn text(name: &str, value: impl Into<OsString>) -> Result<String, String> {
    value
        .into()
        .into_string()
        .map_err(|value| format!("{name} is not valid UTF-8: {value:?}"))
}

/// A timeout in seconds, checked by the core (a positive, finite number not
/// too large); the value itself is kept, for the tool to clamp.
pub fn timeout(name: &str, seconds: Option<f64>) -> Result<Option<f64>, String> {
    match seconds {
        None => Ok(None),
        Some(s) => timeout_option(name, s, TimeUnit::Seconds)
            .map(|_| Some(s))
            .map_err(|e| e.to_string()),
    }
}

/// A count (lines, an offset, a terminal size), checked by the core: a
/// whole number >= 0.
pub fn count(name: &str, value: Option<f64>) -> Result<Option<usize>, String> {
    value
        .map(|n| count_option(name, n))
        .transpose()
        .map_err(|e| e.to_string())
}

/// `conch` and the subcommand named on the command line, if any: the
/// prefix of an error line.
pub fn prefix(root: &clap::Command) -> String {
    // `args_os`: a word that is not UTF-8 must not stop an error from being
    // told.
    match std::env::args_os().nth(1) {
        Some(name)
            if root
                .get_subcommands()
                .any(|c| !c.is_hide_set() && name == c.get_name()) =>
        {
            format!("conch {}", name.to_string_lossy())
        }
        _ => "conch".into(),
    }
}

/// Prints what a failed parse asks for (help, the version, or an error
/// line) and returns the exit status.
pub fn report(error: &clap::Error, mut root: clap::Command) -> i32 {
    match error.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = error.print();
            error.exit_code()
        }
        ErrorKind::InvalidSubcommand => {
            let help = root.render_help();
            crate::eprint_line(&format!("{}: {}\n\n{help}", prefix(&root), message(error)));
            2
        }
        _ => {
            crate::eprint_line(&format!("{}: {}", prefix(&root), message(error)));
            2
        }
    }
}

/// The error as one line in conch's words.
fn message(error: &clap::Error) -> String {
    let context = |kind| match error.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        Some(ContextValue::Strings(v)) => v.first().map(String::as_str),
        _ => None,
    };
    // clap names an option with its value (`--head <N>`) or as typed
    // (`--bogus=1`): the option alone.
    let arg = context(ContextKind::InvalidArg).map(|a| a.split([' ', '=']).next().unwrap_or(a));
    let value = context(ContextKind::InvalidValue);
    match (error.kind(), arg) {
        (ErrorKind::UnknownArgument, Some(arg)) if arg.starts_with('-') => {
            format!("unknown option {arg}")
        }
        (ErrorKind::UnknownArgument, Some(_)) => {
            let word = context(ContextKind::InvalidArg).unwrap_or_default();
            format!("unexpected argument {word:?}")
        }
        (ErrorKind::InvalidSubcommand, _) => format!(
            "unknown command `{}`",
            context(ContextKind::InvalidSubcommand).unwrap_or_default()
        ),
        (ErrorKind::InvalidValue, Some(arg)) if value.is_none_or(str::is_empty) => {
            format!("{arg} needs a value")
        }
        (ErrorKind::InvalidValue | ErrorKind::ValueValidation, Some(arg)) => {
            format!("invalid value for {arg}: {:?}", value.unwrap_or_default())
        }
        (ErrorKind::TooManyValues, Some(arg)) => format!("{arg} takes no value"),
        (ErrorKind::MissingRequiredArgument, Some(arg)) => {
            format!("missing {}", arg.trim_matches(['<', '>']))
        }
        // Anything else: clap's own sentence, without its `error: ` and hints.
        _ => {
            let text = error.render().to_string();
            let line = text.lines().next().unwrap_or_default();
            line.strip_prefix("error: ").unwrap_or(line).to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::message;
    use crate::Cli;

    /// The error line for a command line (after `conch`).
    fn error(line: &str) -> String {
        match Cli::try_parse_from(std::iter::once("conch").chain(line.split(' '))) {
            Ok(_) => panic!("{line:?} parsed"),
            Err(e) => message(&e),
        }
    }

    #[test]
    fn errors_name_the_option() {
        assert_eq!(error("run --nope"), "unknown option --nope");
        assert_eq!(error("run --nope=1 -- true"), "unknown option --nope");
        assert_eq!(error("run --cwd"), "--cwd needs a value");
        assert_eq!(error("run --json=1 -- true"), "--json takes no value");
        assert_eq!(
            error("run --head x -- true"),
            "invalid value for --head: \"x\""
        );
        assert_eq!(
            error("artifact --offset x 7"),
            "invalid value for --offset: \"x\""
        );
        assert_eq!(error("artifact"), "missing ID");
        assert_eq!(error("artifact 7 8"), "unexpected argument \"8\"");
        assert_eq!(error("rpc extra"), "unexpected argument \"extra\"");
        assert_eq!(error("frobnicate"), "unknown command `frobnicate`");
    }

    #[test]
    fn numbers_are_checked_by_the_core() {
        use super::{count, timeout};
        assert_eq!(timeout("--timeout", Some(99999.0)), Ok(Some(99999.0)));
        let nan = timeout("--timeout", Some(f64::NAN)).unwrap_err();
        assert!(
            nan.starts_with("--timeout must be a positive number of seconds")
                && nan.ends_with("got NaN"),
            "{nan}"
        );
        assert!(timeout("--timeout", Some(-1.0)).is_err());
        assert!(timeout("--timeout", Some(f64::INFINITY)).is_err());
        assert!(timeout("--timeout", Some(1e300)).is_err());
        assert_eq!(count("--head", Some(3.0)), Ok(Some(3)));
        assert_eq!(
            count("--head", Some(-1.0)).unwrap_err(),
            "--head must be a whole number >= 0, got -1"
        );
        assert!(count("--offset", Some(1.5)).is_err());
        assert!(count("--cols", Some(f64::NAN)).is_err());
    }

    #[test]
    fn commands_of_any_bytes_are_taken() {
        use std::ffi::OsString;
        use std::os::unix::ffi::OsStringExt;
        let raw = OsString::from_vec(b"echo \xff".to_vec());
        assert_eq!(
            super::command(&[raw]),
            Ok(Some("eval $'echo \\xff'".into()))
        );
        let words = [OsString::from("echo"), OsString::from("hi")];
        assert_eq!(super::command(&words), Ok(Some("echo hi".into())));
        assert_eq!(super::command(&[]), Ok(None));
    }
}
