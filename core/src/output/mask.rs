//! Masking secrets: the values of the variables a host hands a command
//! whose names look secret never come back in what conch returns.
//!
//! A host gives bash its credentials through `env` (`GITHUB_TOKEN`,
//! `OPENAI_API_KEY`…); a command that prints one (`env`, `printenv`, a
//! `set -x` trace, a tool's debug log) would hand it to the model, into its
//! context, its logs and whatever it writes next. The [`Masker`] replaces
//! each such value by `[masked: NAME]` in the sanitized stream, before the
//! sink counts, keeps or spills it, so the chunks, the kept output, the
//! counts and the artifact all read the masked text.
//!
//! # Which values
//! [`Mask`] (the `mask` option) picks the variables: by default those whose
//! names contain (in any case) one of [`SECRET_WORDS`], plus the names a
//! host lists; `false` none. A value shorter than [`MIN_SECRET_BYTES`] is
//! never masked: `1`, `true` or `yes` would mask half the output and hide
//! nothing. Two names with one value mask it as the first.
//!
//! # Streaming
//! A value may arrive in two pieces (two writes of the command, any read
//! boundary). The masker holds back the end of a piece that could be the
//! start of a value (at most the longest value less one byte) and decides
//! once the next piece or the end comes, so the masked stream is the same
//! however it was cut. Matches are leftmost, and the longest value at one
//! position wins. Whoever ends a stream (a run's end, a job poll that
//! returns, a run moved to the background) calls [`Masker::finish`], which
//! lets the held text go.
//!
//! # Cost
//! With nothing to mask there is no masker at all ([`Mask::masker`] gives
//! `None`): the output path is the one it was. With values, each is found
//! by its own `memchr::memmem` searcher (SIMD), a pass over each piece per
//! value; a host passes a handful of secrets, not thousands.

use std::fmt;
use std::sync::Arc;

use memchr::memmem;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, Serializer};

use super::sanitize_text;

/// Words that make a variable's name look secret (matched in any case,
/// anywhere in the name: `GITHUB_TOKEN`, `db_password`, `AWS_SECRET_ACCESS_KEY`).
pub const SECRET_WORDS: &[&str] = &["TOKEN", "SECRET", "PASSWORD", "API_KEY", "ACCESS_KEY"];

/// Values shorter than this many bytes are never masked.
pub const MIN_SECRET_BYTES: usize = 8;

/// Whether a variable named `name` looks secret (see [`SECRET_WORDS`]).
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|word| upper.contains(word))
}

/// The `mask` option: which values of the environment a host gives a
/// command are masked in what conch returns. On the wire `true` (the
/// default: names that look secret), `false` (nothing is masked) or a list
/// of names (those that look secret, and these).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Mask {
    /// The values of variables whose names look secret ([`looks_secret`]).
    Secrets,
    /// Nothing is masked.
    Off,
    /// The values of variables whose names look secret, and of these.
    Also(Vec<String>),
}

/// [`crate::defaults::MASK`]: on.
impl Default for Mask {
    fn default() -> Self {
        if crate::defaults::MASK {
            Mask::Secrets
        } else {
            Mask::Off
        }
    }
}

impl Mask {
    /// Whether the value of the variable `name` is masked.
    pub fn covers(&self, name: &str) -> bool {
        match self {
            Mask::Off => false,
            Mask::Secrets => looks_secret(name),
            Mask::Also(names) => looks_secret(name) || names.iter().any(|n| n == name),
        }
    }

    /// The pairs of `env` whose values this mask hides: covered names with
    /// values of at least [`MIN_SECRET_BYTES`].
    pub fn secrets<'a>(
        &self,
        env: impl IntoIterator<Item = &'a (String, String)>,
    ) -> Vec<(String, String)> {
        if *self == Mask::Off {
            return Vec::new();
        }
        env.into_iter()
            .filter(|(name, value)| value.len() >= MIN_SECRET_BYTES && self.covers(name))
            .cloned()
            .collect()
    }

    /// The masker of `env`'s secrets; `None` when there is nothing to mask
    /// (the output then goes through no masking stage at all).
    pub fn masker<'a>(
        &self,
        env: impl IntoIterator<Item = &'a (String, String)>,
    ) -> Option<Masker> {
        Masker::of(self.secrets(env))
    }
}

impl Serialize for Mask {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Mask::Secrets => s.serialize_bool(true),
            Mask::Off => s.serialize_bool(false),
            Mask::Also(names) => names.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Mask {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::wire::read::mask(d)
    }
}

impl JsonSchema for Mask {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Mask".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::wire::shape::mask(generator)
    }

    fn inline_schema() -> bool {
        true
    }
}

/// One value to mask.
struct Secret {
    value: Box<str>,
    finder: memmem::Finder<'static>,
    /// `[masked: NAME]`.
    marker: Box<str>,
}

/// The compiled values, shared by every masker made from them.
struct Patterns {
    /// Longest first: of two values found at one position, the first
    /// listed wins.
    secrets: Vec<Secret>,
    /// Bytes of the longest value.
    longest: usize,
    /// Which bytes start a value.
    starts: [bool; 256],
}

/// The streaming masking stage (see the module docs). Cloning one gives a
/// masker of the same values with nothing held (the values are shared).
#[derive(Clone)]
pub struct Masker {
    patterns: Arc<Patterns>,
    /// The end of the text pushed so far that could be the start of a
    /// value: at most the longest value less one byte.
    held: String,
    /// `held` and the new piece, when something was held.
    joined: String,
    /// The next position each value is found at in the text being scanned.
    next: Vec<usize>,
}

/// Names only: a masker's values never reach a log.
impl fmt::Debug for Masker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self
            .patterns
            .secrets
            .iter()
            .map(|s| &s.marker[9..s.marker.len() - 1])
            .collect();
        f.debug_struct("Masker")
            .field("names", &names)
            .field("held_bytes", &self.held.len())
            .finish()
    }
}

impl Masker {
    /// A masker of these `(name, value)` pairs: every value of at least
    /// [`MIN_SECRET_BYTES`] is replaced by `[masked: NAME]` (a value the
    /// sanitizer would change, such as one with a `\r`, in its sanitized
    /// form too, as the output shows it). Names are not checked here:
    /// [`Mask`] picks them.
    pub fn new<N: AsRef<str>, V: AsRef<str>>(pairs: impl IntoIterator<Item = (N, V)>) -> Masker {
        let mut secrets: Vec<Secret> = Vec::new();
        for (name, value) in pairs {
            let (name, value) = (name.as_ref(), value.as_ref());
            let clean = sanitize_text(value);
            for form in [value, clean.as_str()] {
                if form.len() < MIN_SECRET_BYTES || secrets.iter().any(|s| &*s.value == form) {
                    continue;
                }
                secrets.push(Secret {
                    value: form.into(),
                    finder: memmem::Finder::new(form.as_bytes()).into_owned(),
                    marker: format!("[masked: {name}]").into(),
                });
            }
        }
        // Stable: among values of one length, the first given stays first.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.value.len()));
        let mut starts = [false; 256];
        for s in &secrets {
            starts[usize::from(s.value.as_bytes()[0])] = true;
        }
        let longest = secrets.first().map_or(0, |s| s.value.len());
        let count = secrets.len();
        Masker {
            patterns: Arc::new(Patterns {
                secrets,
                longest,
                starts,
            }),
            held: String::new(),
            joined: String::new(),
            next: vec![usize::MAX; count],
        }
    }

    /// [`Masker::new`], or `None` when no value is long enough to mask.
    pub fn of<N: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (N, V)>,
    ) -> Option<Masker> {
        let masker = Masker::new(pairs);
        (!masker.is_empty()).then_some(masker)
    }

    /// Whether it masks nothing (no value was long enough).
    pub fn is_empty(&self) -> bool {
        self.patterns.secrets.is_empty()
    }

    /// The text held back, not yet given out: the start of what may be a
    /// value (empty most of the time).
    pub fn held(&self) -> &str {
        &self.held
    }

    /// Takes the next piece of the stream; appends to `out` the masked text
    /// that is certain, holding back an end that may start a value.
    pub fn push(&mut self, text: &str, out: &mut String) {
        if self.is_empty() {
            out.push_str(text);
            return;
        }
        if self.held.is_empty() {
            let hold = self.scan(text, false, out);
            self.held.push_str(&text[hold..]);
            return;
        }
        let mut joined = std::mem::take(&mut self.joined);
        joined.clear();
        joined.push_str(&self.held);
        joined.push_str(text);
        self.held.clear();
        let hold = self.scan(&joined, false, out);
        self.held.push_str(&joined[hold..]);
        self.joined = joined;
    }

    /// The end of the stream (or of what a reader is given now): the held
    /// text is masked as a whole and appended to `out`. The masker is then
    /// as new.
    pub fn finish(&mut self, out: &mut String) {
        if self.held.is_empty() {
            return;
        }
        let held = std::mem::take(&mut self.held);
        self.scan(&held, true, out);
        self.held = held;
        self.held.clear();
    }

    /// Masks `text` into `out` up to where its held end starts (the text's
    /// end at the end of the stream), and returns that position.
    fn scan(&mut self, text: &str, at_end: bool, out: &mut String) -> usize {
        let patterns = &*self.patterns;
        let bytes = text.as_bytes();
        let mut hold = if at_end {
            bytes.len()
        } else {
            hold_start(patterns, bytes, 0)
        };
        for (next, secret) in self.next.iter_mut().zip(&patterns.secrets) {
            *next = secret.finder.find(bytes).unwrap_or(usize::MAX);
        }
        let mut pos = 0;
        // Leftmost; at one position the longest (listed first); only
        // before the held end, which may still become a longer match.
        while let Some((i, at)) = self
            .next
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(i, at)| (at, i))
            .filter(|&(_, at)| at < hold)
        {
            let secret = &patterns.secrets[i];
            out.push_str(&text[pos..at]);
            out.push_str(&secret.marker);
            pos = at + secret.value.len();
            if pos > hold {
                hold = if at_end {
                    bytes.len()
                } else {
                    hold_start(patterns, bytes, pos)
                };
            }
            for (next, secret) in self.next.iter_mut().zip(&patterns.secrets) {
                if *next < pos {
                    *next = secret
                        .finder
                        .find(&bytes[pos..])
                        .map_or(usize::MAX, |found| pos + found);
                }
            }
        }
        out.push_str(&text[pos..hold]);
        hold
    }
}

/// Where the end of `bytes` that may start a value begins (at `from` or
/// later): the first position whose rest is a proper start of some value.
/// `bytes.len()` when there is none. Only the last `longest - 1` bytes can
/// be one; a position is tried only when its byte starts a value.
fn hold_start(patterns: &Patterns, bytes: &[u8], from: usize) -> usize {
    let len = bytes.len();
    let first = from.max(len.saturating_sub(patterns.longest.saturating_sub(1)));
    (first..len)
        .find(|&at| {
            patterns.starts[usize::from(bytes[at])] && {
                let rest = &bytes[at..];
                patterns
                    .secrets
                    .iter()
                    .any(|s| s.value.len() > rest.len() && s.value.as_bytes().starts_with(rest))
            }
        })
        .unwrap_or(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(pairs: &[(&str, &str)], pieces: &[&str]) -> String {
        let mut masker = Masker::new(pairs.iter().copied());
        let mut out = String::new();
        for piece in pieces {
            masker.push(piece, &mut out);
        }
        masker.finish(&mut out);
        out
    }

    #[test]
    fn names_that_look_secret() {
        for name in [
            "GITHUB_TOKEN",
            "token",
            "AWS_SECRET_ACCESS_KEY",
            "db_password",
            "OPENAI_API_KEY",
            "MY_ACCESS_KEY_ID",
            "ClientSecret",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in ["PATH", "HOME", "APIKEY", "PASS", "KEY", "TOKE"] {
            assert!(!looks_secret(name), "{name}");
        }
    }

    #[test]
    fn mask_picks_names_and_long_values() {
        let env = vec![
            ("API_TOKEN".to_string(), "abcdefgh1234".to_string()),
            ("SHORT_TOKEN".to_string(), "1234567".to_string()),
            ("DB_URL".to_string(), "postgres://u:p@h/db".to_string()),
            ("HOME".to_string(), "/home/someone".to_string()),
        ];
        let names = |mask: &Mask| -> Vec<String> {
            mask.secrets(&env).into_iter().map(|(n, _)| n).collect()
        };
        assert_eq!(names(&Mask::Secrets), ["API_TOKEN"]);
        assert_eq!(
            names(&Mask::Also(vec!["DB_URL".into()])),
            ["API_TOKEN", "DB_URL"]
        );
        assert!(names(&Mask::Off).is_empty());
        assert!(Mask::Secrets.masker(&env[1..]).is_none());
    }

    #[test]
    fn replaces_every_occurrence() {
        let pairs = [("API_TOKEN", "s3cr3t-value")];
        assert_eq!(
            masked(&pairs, &["a s3cr3t-value b s3cr3t-values3cr3t-value\n"]),
            "a [masked: API_TOKEN] b [masked: API_TOKEN][masked: API_TOKEN]\n"
        );
        assert_eq!(masked(&pairs, &["nothing here\n"]), "nothing here\n");
    }

    #[test]
    fn short_values_are_left_alone() {
        assert!(Masker::new([("A_TOKEN", "1234567")]).is_empty());
        assert_eq!(masked(&[("A_TOKEN", "1234567")], &["1234567"]), "1234567");
        assert_eq!(
            masked(&[("A_TOKEN", "12345678")], &["12345678"]),
            "[masked: A_TOKEN]"
        );
    }

    #[test]
    fn a_value_split_anywhere_is_masked() {
        let pairs = [
            ("GH_TOKEN", "ghp_0123456789abcdef"),
            ("PASSWORD", "hünter2héllo"),
        ];
        let text = "x ghp_0123456789abcdef y hünter2héllo ghp_01 z\n";
        let want = "x [masked: GH_TOKEN] y [masked: PASSWORD] ghp_01 z\n";
        assert_eq!(masked(&pairs, &[text]), want);
        for cut in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            assert_eq!(masked(&pairs, &[&text[..cut], &text[cut..]]), want, "{cut}");
            for cut2 in (cut..=text.len()).filter(|&i| text.is_char_boundary(i)) {
                let pieces = [&text[..cut], &text[cut..cut2], &text[cut2..]];
                assert_eq!(masked(&pairs, &pieces), want, "{cut} {cut2}");
            }
        }
    }

    #[test]
    fn holds_back_only_what_may_start_a_value() {
        let mut masker = Masker::new([("API_KEY", "abcdefgh")]);
        let mut out = String::new();
        masker.push("xyz ab", &mut out);
        assert_eq!((out.as_str(), masker.held()), ("xyz ", "ab"));
        masker.push("cx", &mut out);
        assert_eq!((out.as_str(), masker.held()), ("xyz abcx", ""));
        masker.push("aaaaaaaaaaaaa", &mut out);
        assert_eq!(masker.held(), "a");
        masker.finish(&mut out);
        assert_eq!(out, "xyz abcxaaaaaaaaaaaaa");
    }

    #[test]
    fn leftmost_then_longest() {
        let pairs = [
            ("SHORT_TOKEN", "12345678"),
            ("LONG_TOKEN", "0123456789"),
            ("LONGER_TOKEN", "1234567890ab"),
        ];
        let cases = [
            ("0123456789", "[masked: LONG_TOKEN]"),
            ("1234567890ab", "[masked: LONGER_TOKEN]"),
            ("1234567890", "[masked: SHORT_TOKEN]90"),
            ("01234567890ab", "[masked: LONG_TOKEN]0ab"),
        ];
        for (text, want) in cases {
            for cut in 0..=text.len() {
                assert_eq!(
                    masked(&pairs, &[&text[..cut], &text[cut..]]),
                    want,
                    "{text} at {cut}"
                );
            }
        }
    }

    #[test]
    fn the_end_masks_what_was_held() {
        // Held as the start of the longer value, the shorter one inside it
        // is still masked at the end.
        let pairs = [("A_TOKEN", "xxxxxxxx1234567890"), ("B_TOKEN", "12345678")];
        assert_eq!(
            masked(&pairs, &["xxxxxxxx12345678"]),
            "xxxxxxxx[masked: B_TOKEN]"
        );
    }

    #[test]
    fn one_value_two_names_masks_as_the_first() {
        let pairs = [("A_TOKEN", "same-value-1"), ("B_TOKEN", "same-value-1")];
        assert_eq!(masked(&pairs, &["same-value-1"]), "[masked: A_TOKEN]");
    }

    #[test]
    fn a_value_the_sanitizer_changes_is_found_as_shown() {
        let pairs = [("A_SECRET", "line-one\r\nline-two")];
        assert_eq!(
            masked(&pairs, &["line-one\nline-two\n"]),
            "[masked: A_SECRET]\n"
        );
    }

    #[test]
    fn debug_shows_names_only() {
        let masker = Masker::new([("API_TOKEN", "do-not-print-me")]);
        let shown = format!("{masker:?}");
        assert!(shown.contains("API_TOKEN") && !shown.contains("do-not-print-me"));
    }
}
