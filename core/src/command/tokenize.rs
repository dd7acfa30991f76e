//! A bash tokenizer: enough of bash's lexical grammar to tell words from
//! operators.
//!
//! Normalization and interception both need the structure of a command line:
//! which `|` is a pipe and which sits in a string, where a heredoc body starts
//! and ends, where a comment runs. A regex over the raw text cannot know that.
//! This lexer follows bash's quoting (single, double, `$'…'`, `$"…"`,
//! backslash), its substitutions (`$(…)`, `$((…))`, `${…}`, backticks, `<(…)`,
//! `>(…)`), extglob and array parentheses, comments, heredoc bodies and the
//! control and redirection operators. Every token carries its byte span in the
//! original text, so callers can cut the text without re-quoting anything.
//!
//! It does not parse: reserved words (`if`, `{`, `done`, …) come out as plain
//! words, and nested substitutions are single words (their inner tokens are
//! only used to find where they end).

use std::fmt;

/// Nested constructs (`$(`, `"`, `${`, …) deeper than this are refused, so a
/// hostile command cannot exhaust the stack.
pub const MAX_NESTING: usize = 128;

/// One token: its kind and its byte span `start..end` in the tokenized text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub start: usize,
    pub end: usize,
}

impl Token {
    /// The token's text in `src` (the string that was tokenized).
    pub fn text<'a>(&self, src: &'a str) -> &'a str {
        &src[self.start..self.end]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A shell word, quotes and substitutions included (`"a b"`, `$(ls)`, `x=1`).
    Word,
    /// A control operator.
    Op(Op),
    /// A redirection operator, with its file-descriptor prefix (`2>`, `&>>`).
    /// Its target is the next word.
    Redirect(Redirect),
    /// The lines of a heredoc, closing delimiter line included. Data, not code.
    HeredocBody,
    /// `#` to the end of the line (newline excluded).
    Comment,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `|`
    Pipe,
    /// `|&` (stdout and stderr into the pipe)
    PipeAll,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `;`
    Semi,
    /// `;;`, `;&` or `;;&` (end of a `case` arm)
    CaseEnd,
    /// `&` (run in the background)
    Background,
    /// An unescaped line break outside quotes.
    Newline,
    /// `(`
    OpenParen,
    /// `)`
    CloseParen,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redirect {
    /// `<`
    Input,
    /// `>`
    Output,
    /// `>>`
    Append,
    /// `>|`
    Clobber,
    /// `<>`
    ReadWrite,
    /// `<<`
    Heredoc,
    /// `<<-` (leading tabs stripped from the body)
    HeredocStrip,
    /// `<<<`
    HereString,
    /// `<&`
    DupInput,
    /// `>&`
    DupOutput,
    /// `&>`
    OutputAll,
    /// `&>>`
    AppendAll,
}

/// Why the text could not be tokenized to its end. bash would refuse the
/// same text with a syntax error (or, for [`LexError::TooDeep`], it is not
/// worth the stack).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LexError {
    /// A quote or substitution opened at byte `start` is never closed.
    Unterminated {
        construct: &'static str,
        start: usize,
    },
    /// Constructs nested more than [`MAX_NESTING`] deep, at byte `start`.
    TooDeep { start: usize },
}

impl fmt::Display for LexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LexError::Unterminated { construct, start } => {
                write!(f, "unterminated `{construct}` starting at byte {start}")
            }
            LexError::TooDeep { start } => write!(
                f,
                "constructs nested deeper than {MAX_NESTING} levels at byte {start}"
            ),
        }
    }
}

impl std::error::Error for LexError {}

/// The tokens of a command line. On an error, `tokens` holds everything before
/// it and a last [`TokenKind::Word`] running from the unterminated word to the
/// end of the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    pub tokens: Vec<Token>,
    pub error: Option<LexError>,
}

/// Tokenizes a command line. Never panics; linear in the length of `src`.
pub fn tokenize(src: &str) -> Tokens {
    let mut lexer = Lexer::new(src, 0, 0);
    let error = lexer.run(None).err();
    if error.is_some() {
        // The unfinished word (or operator run) reaches to the end: bash would
        // read the rest of the text as part of it.
        let start = lexer.token_start;
        if start < src.len() {
            lexer.tokens.push(Token {
                kind: TokenKind::Word,
                start,
                end: src.len(),
            });
        }
    }
    Tokens {
        tokens: lexer.tokens,
        error,
    }
}

/// The index of the `=` when `word` starts with a shell assignment:
/// `NAME=…`, `NAME+=…`, `NAME[subscript]=…`.
pub(crate) fn assignment_equals(word: &str) -> Option<usize> {
    let b = word.as_bytes();
    let first = *b.first()?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let mut i = 1;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    if b.get(i) == Some(&b'[') {
        i += b[i..].iter().position(|&c| c == b']')? + 1;
    }
    if b.get(i) == Some(&b'+') {
        i += 1;
    }
    (b.get(i) == Some(&b'=')).then_some(i)
}

/// A heredoc whose body starts after the next newline.
struct PendingHeredoc {
    delimiter: String,
    strip_tabs: bool,
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    depth: usize,
    /// Where the token being read started (for the error word).
    token_start: usize,
    tokens: Vec<Token>,
    heredocs: Vec<PendingHeredoc>,
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str, pos: usize, depth: usize) -> Self {
        Lexer {
            src,
            pos,
            depth,
            token_start: pos,
            tokens: Vec::new(),
            heredocs: Vec::new(),
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.src.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<u8> {
        self.bytes().get(self.pos + offset).copied()
    }

    fn rest_starts_with(&self, prefix: &[u8]) -> bool {
        self.bytes()[self.pos..].starts_with(prefix)
    }

    /// Skips a backslash and the byte it escapes (a backslash-newline is a
    /// line continuation; either way neither byte ends anything).
    fn skip_escape(&mut self) {
        self.pos = (self.pos + 2).min(self.src.len());
    }

    fn push(&mut self, kind: TokenKind, start: usize) {
        self.tokens.push(Token {
            kind,
            start,
            end: self.pos,
        });
    }

    /// Runs `f` one nesting level deeper, refusing to go past [`MAX_NESTING`].
    fn nested(
        &mut self,
        open: usize,
        f: impl FnOnce(&mut Self) -> Result<(), LexError>,
    ) -> Result<(), LexError> {
        if self.depth >= MAX_NESTING {
            return Err(LexError::TooDeep { start: open });
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    /// Reads tokens to the end of the text or, inside a command substitution
    /// opened at `open`, to its closing parenthesis. Returns the position
    /// after the last byte read.
    fn run(&mut self, open: Option<usize>) -> Result<usize, LexError> {
        // Inside `$(…)`: parentheses opened there, and `case` statements,
        // whose patterns end with an unbalanced `)`.
        let mut parens = 0usize;
        let mut cases = 0usize;
        loop {
            self.skip_blanks();
            let start = self.pos;
            self.token_start = start;
            let Some(c) = self.peek() else {
                return match open {
                    Some(open) => Err(LexError::Unterminated {
                        construct: construct_at(self.src, open),
                        start: open,
                    }),
                    None => Ok(self.pos),
                };
            };
            match c {
                b'\n' => {
                    self.pos += 1;
                    self.push(TokenKind::Op(Op::Newline), start);
                    self.heredoc_bodies();
                }
                b'#' => {
                    self.pos = self.line_end();
                    self.push(TokenKind::Comment, start);
                }
                b'|' => {
                    let op = if self.rest_starts_with(b"||") {
                        Op::Or
                    } else if self.rest_starts_with(b"|&") {
                        Op::PipeAll
                    } else {
                        Op::Pipe
                    };
                    self.pos += if op == Op::Pipe { 1 } else { 2 };
                    self.push(TokenKind::Op(op), start);
                }
                b'&' => {
                    let (kind, len) = if self.rest_starts_with(b"&&") {
                        (TokenKind::Op(Op::And), 2)
                    } else if self.rest_starts_with(b"&>>") {
                        (TokenKind::Redirect(Redirect::AppendAll), 3)
                    } else if self.rest_starts_with(b"&>") {
                        (TokenKind::Redirect(Redirect::OutputAll), 2)
                    } else {
                        (TokenKind::Op(Op::Background), 1)
                    };
                    self.pos += len;
                    self.push(kind, start);
                }
                b';' => {
                    let len = if self.rest_starts_with(b";;&") {
                        3
                    } else if self.rest_starts_with(b";;") || self.rest_starts_with(b";&") {
                        2
                    } else {
                        1
                    };
                    self.pos += len;
                    let op = if len == 1 { Op::Semi } else { Op::CaseEnd };
                    self.push(TokenKind::Op(op), start);
                }
                b'(' if self.peek_at(1) == Some(b'(') => {
                    // `(( … ))`: an arithmetic command, one word.
                    self.pos += 2;
                    self.balanced(start, 2, "((")?;
                    self.push(TokenKind::Word, start);
                }
                b'(' => {
                    self.pos += 1;
                    parens += 1;
                    self.push(TokenKind::Op(Op::OpenParen), start);
                }
                b')' => {
                    self.pos += 1;
                    if open.is_some() {
                        if parens > 0 {
                            parens -= 1;
                        } else if cases == 0 {
                            return Ok(self.pos);
                        }
                        // else: the `)` ending a case pattern
                    }
                    self.push(TokenKind::Op(Op::CloseParen), start);
                }
                b'<' | b'>' if self.peek_at(1) != Some(b'(') => self.redirect(start),
                _ => {
                    let command_position = self
                        .tokens
                        .last()
                        .is_none_or(|t| matches!(t.kind, TokenKind::Op(_)));
                    self.word(start)?;
                    if open.is_some() && command_position {
                        match &self.src[start..self.pos] {
                            "case" => cases += 1,
                            "esac" => cases = cases.saturating_sub(1),
                            _ => {}
                        }
                    }
                }
            }
        }
    }

    /// Skips blanks and backslash-newline line continuations between tokens.
    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t') => self.pos += 1,
                Some(b'\\') if self.peek_at(1) == Some(b'\n') => self.pos += 2,
                _ => return,
            }
        }
    }

    fn line_end(&self) -> usize {
        self.bytes()[self.pos..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(self.src.len(), |i| self.pos + i)
    }

    /// A redirection operator at `self.pos`; `start` is earlier when the
    /// operator has a file-descriptor number (`2>`).
    fn redirect(&mut self, start: usize) {
        const OPERATORS: [(&[u8], Redirect); 10] = [
            (b"<<<", Redirect::HereString),
            (b"<<-", Redirect::HeredocStrip),
            (b"<<", Redirect::Heredoc),
            (b"<&", Redirect::DupInput),
            (b"<>", Redirect::ReadWrite),
            (b"<", Redirect::Input),
            (b">>", Redirect::Append),
            (b">|", Redirect::Clobber),
            (b">&", Redirect::DupOutput),
            (b">", Redirect::Output),
        ];
        for (text, kind) in OPERATORS {
            if self.rest_starts_with(text) {
                self.pos += text.len();
                self.push(TokenKind::Redirect(kind), start);
                return;
            }
        }
    }

    /// A word starting at `start` (the current position).
    fn word(&mut self, start: usize) -> Result<(), LexError> {
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\n' | b'|' | b'&' | b';' | b')' => break,
                b'<' | b'>' if self.pos == start && self.peek_at(1) == Some(b'(') => {
                    // process substitution `<(…)` / `>(…)`
                    self.pos += 2;
                    self.substitution(start)?;
                }
                b'<' | b'>' => break,
                b'(' if self.opens_word_group(start) => {
                    let open = self.pos;
                    self.pos += 1;
                    self.balanced(open, 1, "(")?;
                }
                b'(' => break,
                b'\\' => self.skip_escape(),
                b'\'' => self.single_quote()?,
                b'"' => self.double_quote()?,
                b'`' => self.backtick()?,
                b'$' => self.dollar(false)?,
                _ => self.pos += 1,
            }
        }
        let text = &self.src[start..self.pos];
        let io_number = text.bytes().all(|b| b.is_ascii_digit())
            && matches!(self.peek(), Some(b'<' | b'>'))
            && self.peek_at(1) != Some(b'(');
        if io_number {
            self.redirect(start);
        } else {
            self.push_word(start);
        }
        Ok(())
    }

    /// Whether a `(` inside a word belongs to it: an extglob (`@(…)`, `!(…)`,
    /// `+(…)`, `*(…)`, `?(…)`) or an array assignment (`a=(…)`).
    fn opens_word_group(&self, start: usize) -> bool {
        let so_far = &self.src[start..self.pos];
        matches!(
            so_far.as_bytes().last(),
            Some(b'@' | b'!' | b'+' | b'*' | b'?')
        ) || assignment_equals(so_far).is_some_and(|eq| eq + 1 == so_far.len())
    }

    fn push_word(&mut self, start: usize) {
        let strip_tabs = match self.tokens.last().map(|t| t.kind) {
            Some(TokenKind::Redirect(Redirect::Heredoc)) => Some(false),
            Some(TokenKind::Redirect(Redirect::HeredocStrip)) => Some(true),
            _ => None,
        };
        self.push(TokenKind::Word, start);
        if let Some(strip_tabs) = strip_tabs {
            self.heredocs.push(PendingHeredoc {
                delimiter: heredoc_delimiter(&self.src[start..self.pos]),
                strip_tabs,
            });
        }
    }

    /// After a newline: the bodies of the heredocs opened on the line just
    /// ended, in order. A body without its delimiter runs to the end of the
    /// text (bash warns and accepts it).
    fn heredoc_bodies(&mut self) {
        for doc in std::mem::take(&mut self.heredocs) {
            let start = self.pos;
            while self.pos < self.src.len() {
                let end = self.line_end();
                let line = &self.src[self.pos..end];
                let line = if doc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                self.pos = (end + 1).min(self.src.len());
                if line == doc.delimiter {
                    break;
                }
            }
            if self.pos > start {
                self.push(TokenKind::HeredocBody, start);
            }
        }
    }

    fn single_quote(&mut self) -> Result<(), LexError> {
        let open = self.pos;
        match self.bytes()[open + 1..].iter().position(|&b| b == b'\'') {
            Some(i) => {
                self.pos = open + 1 + i + 1;
                Ok(())
            }
            None => Err(LexError::Unterminated {
                construct: "'",
                start: open,
            }),
        }
    }

    fn double_quote(&mut self) -> Result<(), LexError> {
        let open = self.pos;
        self.pos += 1;
        self.nested(open, |l| {
            while let Some(c) = l.peek() {
                match c {
                    b'"' => {
                        l.pos += 1;
                        return Ok(());
                    }
                    b'\\' => l.skip_escape(),
                    b'`' => l.backtick()?,
                    b'$' => l.dollar(true)?,
                    _ => l.pos += 1,
                }
            }
            Err(LexError::Unterminated {
                construct: "\"",
                start: open,
            })
        })
    }

    fn backtick(&mut self) -> Result<(), LexError> {
        let open = self.pos;
        self.pos += 1;
        while let Some(c) = self.peek() {
            match c {
                b'`' => {
                    self.pos += 1;
                    return Ok(());
                }
                b'\\' => self.skip_escape(),
                _ => self.pos += 1,
            }
        }
        Err(LexError::Unterminated {
            construct: "`",
            start: open,
        })
    }

    /// `$` and what it introduces. Inside double quotes `$'` and `$"` are
    /// not quotes.
    fn dollar(&mut self, in_double_quotes: bool) -> Result<(), LexError> {
        let open = self.pos;
        match self.peek_at(1) {
            Some(b'\'') if !in_double_quotes => {
                self.pos += 2;
                while let Some(c) = self.peek() {
                    match c {
                        b'\'' => {
                            self.pos += 1;
                            return Ok(());
                        }
                        b'\\' => self.skip_escape(),
                        _ => self.pos += 1,
                    }
                }
                Err(LexError::Unterminated {
                    construct: "$'",
                    start: open,
                })
            }
            Some(b'"') if !in_double_quotes => {
                self.pos += 1;
                self.double_quote()
            }
            Some(b'(') if self.peek_at(2) == Some(b'(') => {
                self.pos += 3;
                self.balanced(open, 2, "$((")
            }
            Some(b'(') => {
                self.pos += 2;
                self.substitution(open)
            }
            Some(b'{') => {
                self.pos += 2;
                self.parameter(open, in_double_quotes)
            }
            _ => {
                self.pos += 1;
                Ok(())
            }
        }
    }

    /// `$(…)`, `<(…)`, `>(…)`: commands, so read with a lexer of their own,
    /// which understands quotes, comments, heredocs and `case` inside.
    fn substitution(&mut self, open: usize) -> Result<(), LexError> {
        self.nested(open, |l| {
            let mut inner = Lexer::new(l.src, l.pos, l.depth);
            l.pos = inner.run(Some(open))?;
            Ok(())
        })
    }

    /// `${…}`: ends at the first `}` outside quotes and nested expansions.
    fn parameter(&mut self, open: usize, in_double_quotes: bool) -> Result<(), LexError> {
        self.nested(open, |l| {
            while let Some(c) = l.peek() {
                match c {
                    b'}' => {
                        l.pos += 1;
                        return Ok(());
                    }
                    b'\\' => l.skip_escape(),
                    b'\'' if !in_double_quotes => l.single_quote()?,
                    b'"' => l.double_quote()?,
                    b'`' => l.backtick()?,
                    b'$' => l.dollar(in_double_quotes)?,
                    _ => l.pos += 1,
                }
            }
            Err(LexError::Unterminated {
                construct: "${",
                start: open,
            })
        })
    }

    /// Text up to the `)` that balances `depth` already-open parentheses
    /// (arithmetic, extglob, array literal), quotes and expansions skipped.
    fn balanced(
        &mut self,
        open: usize,
        mut depth: usize,
        construct: &'static str,
    ) -> Result<(), LexError> {
        self.nested(open, |l| {
            while let Some(c) = l.peek() {
                match c {
                    b'(' => {
                        depth += 1;
                        l.pos += 1;
                    }
                    b')' => {
                        l.pos += 1;
                        depth -= 1;
                        if depth == 0 {
                            return Ok(());
                        }
                    }
                    b'\\' => l.skip_escape(),
                    b'\'' => l.single_quote()?,
                    b'"' => l.double_quote()?,
                    b'`' => l.backtick()?,
                    b'$' => l.dollar(false)?,
                    _ => l.pos += 1,
                }
            }
            Err(LexError::Unterminated {
                construct,
                start: open,
            })
        })
    }
}

/// The name of the substitution opened at `open`, for error messages.
fn construct_at(src: &str, open: usize) -> &'static str {
    match src.as_bytes().get(open) {
        Some(b'<') => "<(",
        Some(b'>') => ">(",
        _ => "$(",
    }
}

/// A heredoc delimiter word with its quoting removed (`'EOF'`, `"EOF"`,
/// `\EOF` all mean `EOF`).
fn heredoc_delimiter(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {}
            '\\' => out.extend(chars.next()),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
