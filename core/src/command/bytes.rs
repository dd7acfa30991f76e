//! A command given as bytes that are not UTF-8 (a command line's argv).
//!
//! The engines take a command as text, and bash reads whatever bytes it is
//! given; so a command that is not valid UTF-8 is handed over as an ASCII
//! command that makes bash run exactly those bytes: `eval $'…'`, every
//! byte outside printable ASCII written `\xHH`. Nothing is replaced (a
//! file named `caf\xe9` is still found), and a command that is valid UTF-8
//! is left as it is.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `bytes` as a command the engines take (see the module docs).
pub fn command_from_bytes(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Cow::Borrowed(text);
    }
    let mut command = String::with_capacity(bytes.len() * 2 + 8);
    command.push_str("eval $'");
    for &b in bytes {
        match b {
            b'\\' => command.push_str(r"\\"),
            b'\'' => command.push_str(r"\'"),
            b' '..=b'~' => command.push(b as char),
            _ => {
                let _ = write!(command, "\\x{b:02x}");
            }
        }
    }
    command.push('\'');
    Cow::Owned(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_stays_and_other_bytes_reach_bash_as_they_are() {
        assert_eq!(command_from_bytes("echo é".as_bytes()), "echo é");
        let raw = b"printf '%s\\n' caf\xe9 | od -An -tx1; echo 'a\tb'\n";
        let command = command_from_bytes(raw);
        assert!(command.is_ascii(), "{command}");
        let out = std::process::Command::new("bash")
            .args(["-c", &command])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            " 63 61 66 e9 0a\na\tb\n"
        );
    }
}
