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
//! `--cwd needs a value`, `invalid value for --head: "-1"`, `--json takes
//! no value`.

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// The layout of a subcommand's help: its synopsis first (the usage as
/// written in each `Args`), then what it does, its arguments and options.
pub const HELP: &str = "{usage}\n\n{about}\n\n{all-args}{after-help}";

/// The words of a shell command as one command: a single word as is,
/// several joined by spaces. `None` when there are none.
pub fn command(words: &[String]) -> Option<String> {
    (!words.is_empty()).then(|| words.join(" "))
}

/// `conch` and the subcommand named on the command line, if any: the
/// prefix of an error line.
pub fn prefix(root: &clap::Command) -> String {
    match std::env::args().nth(1) {
        Some(name)
            if root
                .get_subcommands()
                .any(|c| !c.is_hide_set() && c.get_name() == name) =>
        {
            format!("conch {name}")
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
            eprintln!("{}: {}\n\n{help}", prefix(&root), message(error));
            2
        }
        _ => {
            eprintln!("{}: {}", prefix(&root), message(error));
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
            error("run --head -1 -- true"),
            "invalid value for --head: \"-1\""
        );
        assert_eq!(
            error("artifact --offset -2 7"),
            "invalid value for --offset: \"-2\""
        );
        assert_eq!(error("artifact"), "missing ID");
        assert_eq!(error("artifact 7 8"), "unexpected argument \"8\"");
        assert_eq!(error("rpc extra"), "unexpected argument \"extra\"");
        assert_eq!(error("frobnicate"), "unknown command `frobnicate`");
    }
}
