//! Key input for a PTY: named keys and Kitty keyboard sequences become the
//! bytes a legacy (xterm) terminal would send.
//!
//! Why this exists: the host's own terminal may speak the Kitty keyboard
//! protocol (ctrl+c arrives as `CSI 99;5u`, with release events too), while
//! the program on our PTY expects what xterm sends (`0x03`). And the cursor
//! keys depend on the application-cursor mode (DECCKM) of the *virtual*
//! terminal the program talks to, not on the host's terminal: in that mode an
//! arrow is `ESC O A`, otherwise `ESC [ A`. So [`normalize_input`] rewrites
//! every key sequence it recognises (Kitty `CSI … u`, the functional forms
//! `CSI 1;m A` / `CSI n;m ~`, and bare cursor keys in either form) and passes
//! every other byte through unchanged; [`Key::parse`] turns names such as
//! `ctrl+c`, `up` or `f5` into the same encoding.
//!
//! The legacy encoding follows the tables of the Kitty protocol document
//! ("Legacy key event encoding") and the `xterm-256color` terminfo entry,
//! which is the `TERM` a PTY run gets.
//!
//! Input is taken one write at a time: a key sequence split across two
//! writes is passed through as the bytes it is (hosts send a key per write).

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

const ESC: u8 = 0x1b;

/// A key, without modifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyCode {
    /// A key that types a character (letters, digits, punctuation, space).
    Char(char),
    Enter,
    Tab,
    Backspace,
    Escape,
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    /// The keypad's middle key (5 with num lock off).
    Begin,
    PageUp,
    PageDown,
    Insert,
    Delete,
    /// F1 to F35.
    F(u8),
}

/// The modifiers a legacy terminal can express.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Modifiers {
    pub shift: bool,
    pub alt: bool,
    pub ctrl: bool,
}

impl Modifiers {
    /// The xterm modifier parameter: 1 + shift(1) + alt(2) + ctrl(4).
    fn param(self) -> u8 {
        1 + u8::from(self.shift) + 2 * u8::from(self.alt) + 4 * u8::from(self.ctrl)
    }

    fn any(self) -> bool {
        self.shift || self.alt || self.ctrl
    }
}

/// A key press: a key and its modifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: Modifiers,
}

impl Key {
    /// A key with no modifiers.
    pub fn new(code: KeyCode) -> Self {
        Key {
            code,
            mods: Modifiers::default(),
        }
    }

    /// Parses a key name: optional `ctrl+`, `alt+` (or `meta+`, `option+`)
    /// and `shift+` prefixes, then a single character or one of `enter`
    /// (`return`), `tab`, `space`, `backspace` (`bs`), `esc` (`escape`),
    /// `up`, `down`, `left`, `right`, `home`, `end`, `pageup` (`pgup`),
    /// `pagedown` (`pgdn`), `insert` (`ins`), `delete` (`del`), `f1`–`f35`.
    /// Names and modifiers are case-insensitive; a single character is taken
    /// as is (`A` is a capital A).
    pub fn parse(name: &str) -> Result<Key> {
        let (mods_part, key_part) = split_key_name(name);
        let mut mods = Modifiers::default();
        if let Some(mods_part) = mods_part {
            for m in mods_part.split('+') {
                match m.to_ascii_lowercase().as_str() {
                    "ctrl" | "control" => mods.ctrl = true,
                    "alt" | "meta" | "option" | "opt" => mods.alt = true,
                    "shift" => mods.shift = true,
                    _ => {
                        return Err(Error::InvalidArgument(format!(
                            "Unknown key modifier \"{m}\" in \"{name}\" (expected ctrl, alt or shift)"
                        )));
                    }
                }
            }
        }
        let code = key_code_by_name(key_part).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "Unknown key \"{name}\" (expected a single character or one of enter, tab, \
                 space, backspace, esc, up, down, left, right, home, end, pageup, pagedown, \
                 insert, delete, f1-f35, optionally prefixed by ctrl+, alt+, shift+)"
            ))
        })?;
        Ok(Key { code, mods })
    }

    /// The bytes an xterm sends for this key. `app_cursor` is the
    /// application-cursor mode (DECCKM) of the terminal the program sees.
    pub fn encode(&self, app_cursor: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(8);
        self.encode_into(app_cursor, &mut out);
        out
    }

    fn encode_into(&self, app_cursor: bool, out: &mut Vec<u8>) {
        let m = self.mods;
        match self.code {
            KeyCode::Up => cursor_key(b'A', m, app_cursor, out),
            KeyCode::Down => cursor_key(b'B', m, app_cursor, out),
            KeyCode::Right => cursor_key(b'C', m, app_cursor, out),
            KeyCode::Left => cursor_key(b'D', m, app_cursor, out),
            KeyCode::Begin => cursor_key(b'E', m, app_cursor, out),
            KeyCode::End => cursor_key(b'F', m, app_cursor, out),
            KeyCode::Home => cursor_key(b'H', m, app_cursor, out),
            KeyCode::Insert => tilde_key(2, m, out),
            KeyCode::Delete => tilde_key(3, m, out),
            KeyCode::PageUp => tilde_key(5, m, out),
            KeyCode::PageDown => tilde_key(6, m, out),
            KeyCode::F(n) => function_key(n, m, out),
            // The "C0 controls" table: alt prefixes ESC, ctrl and shift
            // change the byte only where a legacy terminal could tell.
            KeyCode::Enter => alt_prefixed(m, b"\r", out),
            KeyCode::Escape => alt_prefixed(m, &[ESC], out),
            KeyCode::Backspace => alt_prefixed(m, if m.ctrl { &[0x08] } else { &[0x7f] }, out),
            KeyCode::Tab => alt_prefixed(m, if m.shift { b"\x1b[Z" } else { b"\t" }, out),
            KeyCode::Char(c) => {
                if m.alt {
                    out.push(ESC);
                }
                if m.ctrl
                    && let Some(b) = ctrl_byte(c)
                {
                    out.push(b);
                    return;
                }
                let c = if m.shift { shifted(c) } else { c };
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

impl FromStr for Key {
    type Err = Error;

    fn from_str(s: &str) -> Result<Key> {
        Key::parse(s)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.ctrl {
            f.write_str("ctrl+")?;
        }
        if self.mods.alt {
            f.write_str("alt+")?;
        }
        if self.mods.shift {
            f.write_str("shift+")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Escape => f.write_str("esc"),
            KeyCode::Up => f.write_str("up"),
            KeyCode::Down => f.write_str("down"),
            KeyCode::Left => f.write_str("left"),
            KeyCode::Right => f.write_str("right"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::Begin => f.write_str("begin"),
            KeyCode::PageUp => f.write_str("pageup"),
            KeyCode::PageDown => f.write_str("pagedown"),
            KeyCode::Insert => f.write_str("insert"),
            KeyCode::Delete => f.write_str("delete"),
            KeyCode::F(n) => write!(f, "f{n}"),
        }
    }
}

/// Splits `ctrl+alt+x` into (`Some("ctrl+alt")`, `"x"`), keeping `+` usable
/// as a key (`+`, `ctrl++`).
fn split_key_name(name: &str) -> (Option<&str>, &str) {
    if name.len() > 1
        && let Some(mods) = name.strip_suffix("++")
    {
        return (Some(mods), "+");
    }
    match name.rsplit_once('+') {
        Some((mods, key)) if !mods.is_empty() && !key.is_empty() => (Some(mods), key),
        _ => (None, name),
    }
}

fn key_code_by_name(name: &str) -> Option<KeyCode> {
    let mut chars = name.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return Some(KeyCode::Char(c));
    }
    let lower = name.to_ascii_lowercase();
    let code = match lower.as_str() {
        "enter" | "return" => KeyCode::Enter,
        "tab" => KeyCode::Tab,
        "space" => KeyCode::Char(' '),
        "backspace" | "bs" => KeyCode::Backspace,
        "esc" | "escape" => KeyCode::Escape,
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "pageup" | "pgup" | "page_up" => KeyCode::PageUp,
        "pagedown" | "pgdn" | "page_down" => KeyCode::PageDown,
        "insert" | "ins" => KeyCode::Insert,
        "delete" | "del" => KeyCode::Delete,
        _ => {
            let n: u8 = lower.strip_prefix('f')?.parse().ok()?;
            if !(1..=35).contains(&n) || lower.starts_with("f0") {
                return None;
            }
            KeyCode::F(n)
        }
    };
    Some(code)
}

/// Arrows, Home, End, Begin: `ESC O x` in application-cursor mode and
/// `ESC [ x` otherwise when unmodified; `ESC [ 1 ; m x` with modifiers.
fn cursor_key(letter: u8, m: Modifiers, app_cursor: bool, out: &mut Vec<u8>) {
    if m.any() {
        out.extend_from_slice(b"\x1b[1;");
        push_decimal(m.param(), out);
        out.push(letter);
    } else {
        out.extend_from_slice(if app_cursor { b"\x1bO" } else { b"\x1b[" });
        out.push(letter);
    }
}

/// `ESC [ n ~`, or `ESC [ n ; m ~` with modifiers.
fn tilde_key(n: u8, m: Modifiers, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\x1b[");
    push_decimal(n, out);
    if m.any() {
        out.push(b';');
        push_decimal(m.param(), out);
    }
    out.push(b'~');
}

/// F1–F4 are `ESC O P`…`S` (`ESC [ 1 ; m P` modified), F5–F12 tilde keys;
/// as in the xterm terminfo, F13–F24 are shift+F1–F12 and F25–F35
/// ctrl+F1–F11.
fn function_key(n: u8, mut m: Modifiers, out: &mut Vec<u8>) {
    let base = match n {
        13..=24 => {
            m.shift = true;
            n - 12
        }
        25..=35 => {
            m.ctrl = true;
            n - 24
        }
        _ => n,
    };
    match base {
        1..=4 => {
            let letter = b'P' + (base - 1);
            if m.any() {
                out.extend_from_slice(b"\x1b[1;");
                push_decimal(m.param(), out);
            } else {
                out.extend_from_slice(b"\x1bO");
            }
            out.push(letter);
        }
        _ => {
            const TILDE: [u8; 8] = [15, 17, 18, 19, 20, 21, 23, 24];
            let idx = usize::from(base.clamp(5, 12) - 5);
            tilde_key(TILDE[idx], m, out);
        }
    }
}

fn alt_prefixed(m: Modifiers, bytes: &[u8], out: &mut Vec<u8>) {
    if m.alt {
        out.push(ESC);
    }
    out.extend_from_slice(bytes);
}

/// The legacy ctrl mapping of ASCII keys (the Kitty document's table, a
/// superset of the VT100 one); `None` for keys ctrl leaves untouched.
fn ctrl_byte(c: char) -> Option<u8> {
    let c = c.to_ascii_lowercase();
    Some(match c {
        'a'..='z' => c as u8 - b'a' + 1,
        ' ' | '@' | '2' => 0,
        '[' | '3' => 27,
        '\\' | '4' => 28,
        ']' | '5' => 29,
        '^' | '6' | '~' => 30,
        '_' | '/' | '7' => 31,
        '?' | '8' => 127,
        _ => return None,
    })
}

/// The character shift produces, where that does not depend on the layout.
fn shifted(c: char) -> char {
    let mut upper = c.to_uppercase();
    match (upper.next(), upper.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

fn push_decimal(n: u8, out: &mut Vec<u8>) {
    if n >= 10 {
        push_decimal(n / 10, out);
    }
    out.push(b'0' + n % 10);
}

/// Rewrites key sequences in `input` to legacy bytes (see the module doc):
/// Kitty `CSI … u` keys, functional keys with Kitty event types, and cursor
/// keys (re-encoded for `app_cursor`); key release events are dropped, as are
/// keys a legacy terminal cannot send (modifier keys alone, media keys).
/// Everything else passes through unchanged.
pub fn normalize_input(input: &[u8], app_cursor: bool) -> Cow<'_, [u8]> {
    let Some(first) = input.iter().position(|&b| b == ESC) else {
        return Cow::Borrowed(input);
    };
    let mut out = Vec::with_capacity(input.len());
    out.extend_from_slice(&input[..first]);
    let mut i = first;
    while i < input.len() {
        if input[i] == ESC
            && let Some((len, key)) = parse_key_sequence(&input[i..])
        {
            match key {
                Decoded::Key(key) => key.encode_into(app_cursor, &mut out),
                Decoded::Text { text, alt } => {
                    if alt {
                        out.push(ESC);
                    }
                    out.extend_from_slice(text.as_bytes());
                }
                Decoded::Nothing => {}
            }
            i += len;
        } else {
            out.push(input[i]);
            i += 1;
        }
    }
    Cow::Owned(out)
}

/// What a recognised key sequence stands for.
enum Decoded {
    Key(Key),
    /// Text the terminal reported with the key (Kitty "associated text").
    Text {
        text: String,
        alt: bool,
    },
    /// A release event, or a key with no legacy encoding.
    Nothing,
}

/// Kitty modifier bits beyond what [`Modifiers`] holds.
const KITTY_SHIFT: u32 = 1;
const KITTY_ALT: u32 = 2;
const KITTY_CTRL: u32 = 4;
const KITTY_META: u32 = 32;
const KITTY_CAPS_LOCK: u32 = 64;
const KITTY_RELEASE: u32 = 3;

/// Parses a key sequence at the start of `s` (which starts with ESC):
/// returns its length and meaning, or `None` if it is not one.
fn parse_key_sequence(s: &[u8]) -> Option<(usize, Decoded)> {
    match *s.get(1)? {
        b'O' => {
            let code = letter_key(*s.get(2)?)?;
            Some((3, Decoded::Key(Key::new(code))))
        }
        b'[' => {
            let params_len = s[2..]
                .iter()
                .position(|b| !matches!(b, b'0'..=b'9' | b':' | b';'))?;
            let final_byte = s[2 + params_len];
            let params = std::str::from_utf8(&s[2..2 + params_len]).ok()?;
            let decoded = parse_csi_key(params, final_byte)?;
            Some((3 + params_len, decoded))
        }
        _ => None,
    }
}

/// The key a final letter names in `ESC O x` and `CSI 1 ; m x` sequences.
fn letter_key(letter: u8) -> Option<KeyCode> {
    Some(match letter {
        b'A' => KeyCode::Up,
        b'B' => KeyCode::Down,
        b'C' => KeyCode::Right,
        b'D' => KeyCode::Left,
        b'E' => KeyCode::Begin,
        b'F' => KeyCode::End,
        b'H' => KeyCode::Home,
        b'P' => KeyCode::F(1),
        b'Q' => KeyCode::F(2),
        b'R' => KeyCode::F(3),
        b'S' => KeyCode::F(4),
        _ => return None,
    })
}

/// A CSI parameter string split into fields (`;`) of sub-fields (`:`), each
/// an optional number.
fn csi_fields(params: &str) -> Option<Vec<Vec<Option<u32>>>> {
    params
        .split(';')
        .map(|field| {
            field
                .split(':')
                .map(|sub| {
                    if sub.is_empty() {
                        Some(None)
                    } else {
                        sub.parse::<u32>().ok().map(Some)
                    }
                })
                .collect()
        })
        .collect()
}

fn parse_csi_key(params: &str, final_byte: u8) -> Option<Decoded> {
    let fields = csi_fields(params)?;
    let field = |i: usize, sub: usize| -> Option<u32> {
        fields.get(i).and_then(|f| f.get(sub).copied().flatten())
    };
    let number = field(0, 0);
    let mod_bits = field(1, 0).unwrap_or(1).max(1) - 1;
    let event = field(1, 1).unwrap_or(1);
    if !(1..=3).contains(&event) || fields.get(1).is_some_and(|f| f.len() > 2) {
        return None;
    }
    let code = match final_byte {
        b'A' | b'B' | b'C' | b'D' | b'E' | b'F' | b'H' | b'P' | b'Q' | b'R' | b'S' => {
            // `CSI 1 ; m x`: the number is 1 or absent, nothing else follows.
            if fields.len() > 2 || fields[0].len() > 1 || !matches!(number, None | Some(1)) {
                return None;
            }
            letter_key(final_byte)?
        }
        b'~' => {
            if fields.len() > 2 || fields[0].len() > 1 {
                return None;
            }
            match number? {
                2 => KeyCode::Insert,
                3 => KeyCode::Delete,
                5 => KeyCode::PageUp,
                6 => KeyCode::PageDown,
                7 => KeyCode::Home,
                8 => KeyCode::End,
                11..=15 => KeyCode::F((number? - 10) as u8),
                17..=21 => KeyCode::F((number? - 11) as u8),
                23 | 24 => KeyCode::F((number? - 12) as u8),
                57427 => KeyCode::Begin,
                // Bracketed paste markers (200~, 201~) and the rest are not keys.
                _ => return None,
            }
        }
        b'u' => return parse_kitty_u(&fields, mod_bits, event),
        _ => return None,
    };
    if event == KITTY_RELEASE {
        return Some(Decoded::Nothing);
    }
    Some(Decoded::Key(Key {
        code,
        mods: legacy_mods(mod_bits),
    }))
}

fn legacy_mods(bits: u32) -> Modifiers {
    Modifiers {
        shift: bits & KITTY_SHIFT != 0,
        alt: bits & (KITTY_ALT | KITTY_META) != 0,
        ctrl: bits & KITTY_CTRL != 0,
    }
}

/// `CSI code[:shifted[:base]] ; mods[:event] ; text u`.
fn parse_kitty_u(fields: &[Vec<Option<u32>>], mod_bits: u32, event: u32) -> Option<Decoded> {
    if fields.len() > 3 || fields[0].len() > 3 {
        return None;
    }
    let number = fields[0][0]?;
    let shifted_alt = fields[0].get(1).copied().flatten();
    let text: Option<String> = match fields.get(2) {
        Some(points) => Some(
            points
                .iter()
                .map(|p| p.and_then(char::from_u32))
                .collect::<Option<String>>()?,
        ),
        None => None,
    };
    if event == KITTY_RELEASE {
        return Some(Decoded::Nothing);
    }
    let mut mods = legacy_mods(mod_bits);
    if let Some(text) = text.filter(|t| !t.is_empty() && !mods.ctrl) {
        return Some(Decoded::Text {
            text,
            alt: mods.alt,
        });
    }
    let code = match number {
        9 => KeyCode::Tab,
        13 | 57414 => KeyCode::Enter,
        27 => KeyCode::Escape,
        127 => KeyCode::Backspace,
        57376..=57398 => KeyCode::F((number - 57376 + 13) as u8),
        57399..=57408 => KeyCode::Char(char::from(b'0' + (number - 57399) as u8)),
        57409 => KeyCode::Char('.'),
        57410 => KeyCode::Char('/'),
        57411 => KeyCode::Char('*'),
        57412 => KeyCode::Char('-'),
        57413 => KeyCode::Char('+'),
        57415 => KeyCode::Char('='),
        57416 => KeyCode::Char(','),
        57417 => KeyCode::Left,
        57418 => KeyCode::Right,
        57419 => KeyCode::Up,
        57420 => KeyCode::Down,
        57421 => KeyCode::PageUp,
        57422 => KeyCode::PageDown,
        57423 => KeyCode::Home,
        57424 => KeyCode::End,
        57425 => KeyCode::Insert,
        57426 => KeyCode::Delete,
        57427 => KeyCode::Begin,
        // Lock, media and modifier keys, the rest of the private use area,
        // other controls and "no key" (0): nothing a legacy terminal sends.
        0..=31 | 57344..=63743 => return Some(Decoded::Nothing),
        _ => {
            let c = char::from_u32(number)?;
            let caps = mod_bits & KITTY_CAPS_LOCK != 0;
            let c = match shifted_alt.and_then(char::from_u32) {
                Some(s) if mods.shift => s,
                _ if c.is_alphabetic() && (mods.shift ^ caps) => shifted(c),
                _ => c,
            };
            // The shift is now in the character.
            mods.shift = false;
            KeyCode::Char(c)
        }
    };
    Some(Decoded::Key(Key { code, mods }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str, app: bool) -> String {
        String::from_utf8(normalize_input(s.as_bytes(), app).into_owned()).unwrap()
    }

    #[test]
    fn plain_input_is_borrowed() {
        assert!(matches!(
            normalize_input(b"echo hi\r", false),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn display_round_trips_through_parse() {
        for name in [
            "ctrl+c",
            "alt+shift+x",
            "f12",
            "space",
            "pageup",
            "esc",
            "ctrl++",
        ] {
            let key = Key::parse(name).unwrap();
            assert_eq!(Key::parse(&key.to_string()).unwrap(), key, "{name}");
        }
    }

    #[test]
    fn truncated_sequences_pass_through() {
        assert_eq!(norm("\x1b[99;5", false), "\x1b[99;5");
        assert_eq!(norm("a\x1b", false), "a\x1b");
        assert_eq!(norm("\x1bO", true), "\x1bO");
    }

    #[test]
    fn huge_numbers_are_not_keys() {
        let s = "\x1b[99999999999999999999;5u";
        assert_eq!(norm(s, false), s);
    }
}
