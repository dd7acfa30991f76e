//! Quoting for the text conch sends bash: a command, a path, a variable's
//! value, each safe to put in a line bash parses whatever it holds.

use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

/// `'…'` quoting for bash: safe for any text without NUL.
pub fn single_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Quoting for any bytes but NUL: `single_quote` for UTF-8, else `$'…'`
/// with each byte outside printable ASCII as `\xHH` (a host's variable
/// may hold any bytes, and the start-up text is UTF-8).
pub fn quote_bytes(bytes: &[u8]) -> String {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return single_quote(text);
    }
    let mut s = String::with_capacity(bytes.len() * 2 + 3);
    s.push_str("$'");
    for &b in bytes {
        match b {
            b'\\' | b'\'' => {
                s.push('\\');
                s.push(b as char);
            }
            b' '..=b'~' => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s.push('\'');
    s
}

/// A path quoted for bash, whatever bytes it holds ([`quote_bytes`]).
pub fn quote_path(path: &Path) -> String {
    quote_bytes(path.as_os_str().as_bytes())
}

/// `$'…'` quoting that keeps the line free of raw newlines and controls, so
/// the protocol stays one line whatever the command holds.
pub fn ansi_c_quote(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 8);
    s.push_str("$'");
    for c in text.chars() {
        match c {
            '\\' => s.push_str(r"\\"),
            '\'' => s.push_str(r"\'"),
            '\n' => s.push_str(r"\n"),
            '\t' => s.push_str(r"\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(s, "\\x{:02x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('\'');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_round_trips_through_bash() {
        let text = "a'b\"c\\d\n\te$f`g` \u{1}é";
        let out = std::process::Command::new("bash")
            .args([
                "-c",
                &format!(
                    "printf %s {}; printf '|'; printf %s {}",
                    single_quote(text),
                    ansi_c_quote(text)
                ),
            ])
            .output()
            .unwrap();
        let expected = format!("{text}|{text}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    }

    #[test]
    fn byte_quoting_round_trips_through_bash() {
        for bytes in [
            &b"plain 'x' \\ \xc3\xa9"[..],
            b"\xff\xfe'q\\ \x01\n\x7fa\xc3",
        ] {
            let out = std::process::Command::new("bash")
                .args(["-c", &format!("printf %s {}", quote_bytes(bytes))])
                .output()
                .unwrap();
            assert_eq!(out.stdout, bytes, "{}", quote_bytes(bytes));
        }
    }
}
