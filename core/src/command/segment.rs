//! Splitting a command line into the simple commands it runs.
//!
//! The interceptor asks "which programs does this line start?", and the
//! answer is not at the start of the string: `cd x && cat f`, `FOO=1 cat f`,
//! `(cat f)` and `if grep -q x f; then …` all run a reader. From the tokens,
//! each simple command is found between control operators, with what only
//! prefixes it (variable assignments, `!`, `time`, `{`, `if`, `then`, `do`, …)
//! left out, so a rule sees the command word first.

use super::tokenize::{Op, Token, TokenKind, assignment_equals};

/// Reserved words that can come before a command word without being one.
const PREFIX_WORDS: [&str; 10] = [
    "!", "{", "time", "if", "then", "elif", "else", "while", "until", "do",
];

/// One simple command: its source text is `src[start..end]`, from the command
/// word (or a redirection before it) to its last word or redirection.
/// Heredoc bodies and comments are not part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimpleCommand {
    pub start: usize,
    pub end: usize,
    /// Its stdin is the previous command's output (`a | b`, `a |& b`).
    pub piped: bool,
}

impl SimpleCommand {
    /// The command's text in `src`.
    pub fn text<'a>(&self, src: &'a str) -> &'a str {
        &src[self.start..self.end]
    }
}

/// The simple commands of `tokens` (tokenized from `src`), in order. Words
/// inside substitutions (`$(…)`) belong to the word that holds them.
pub fn simple_commands(src: &str, tokens: &[Token]) -> Vec<SimpleCommand> {
    let mut commands = Vec::new();
    let mut current: Option<(usize, usize)> = None;
    let mut piped = false;
    for token in tokens {
        match token.kind {
            TokenKind::Word => {
                let text = token.text(src);
                if current.is_none()
                    && (assignment_equals(text).is_some() || PREFIX_WORDS.contains(&text))
                {
                    continue;
                }
                current = Some((current.map_or(token.start, |c| c.0), token.end));
            }
            TokenKind::Redirect(_) => {
                current = Some((current.map_or(token.start, |c| c.0), token.end));
            }
            TokenKind::HeredocBody | TokenKind::Comment => {}
            // A line break after `|`, `&&` or `||` (or a blank line) continues
            // the command line: the pipe still feeds what comes next.
            TokenKind::Op(Op::Newline) if current.is_none() => {}
            TokenKind::Op(op) => {
                if let Some((start, end)) = current.take() {
                    commands.push(SimpleCommand { start, end, piped });
                }
                // A subshell's first command reads the subshell's stdin.
                if op != Op::OpenParen {
                    piped = matches!(op, Op::Pipe | Op::PipeAll);
                }
            }
        }
    }
    if let Some((start, end)) = current {
        commands.push(SimpleCommand { start, end, piped });
    }
    commands
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::tokenize::tokenize;

    fn texts(src: &str) -> Vec<(&str, bool)> {
        let tokens = tokenize(src).tokens;
        simple_commands(src, &tokens)
            .iter()
            .map(|c| (c.text(src), c.piped))
            .collect()
    }

    #[test]
    fn splits_on_every_control_operator() {
        assert_eq!(
            texts("cd x && cat f; A=1 B=2 grep y f || (head z) & { ls; }\nwc"),
            [
                ("cd x", false),
                ("cat f", false),
                ("grep y f", false),
                ("head z", false),
                ("ls", false),
                ("}", false),
                ("wc", false),
            ]
        );
    }

    #[test]
    fn marks_piped_commands_across_line_breaks() {
        assert_eq!(
            texts("cat f | grep x |&\n  sort\nls"),
            [
                ("cat f", false),
                ("grep x", true),
                ("sort", true),
                ("ls", false)
            ]
        );
    }

    #[test]
    fn keeps_redirects_and_drops_bodies_and_comments() {
        assert_eq!(
            texts("cat <<EOF > out # note\nbody | x\nEOF\nif true; then echo 2>&1; fi"),
            [
                ("cat <<EOF > out", false),
                ("true", false),
                ("echo 2>&1", false),
                ("fi", false)
            ]
        );
    }
}
