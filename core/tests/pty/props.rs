//! Property tests: key normalization and the virtual screen take any input
//! without panicking, and normalization leaves non-key input alone.

use conch_core::pty::Screen;
use conch_core::pty::keys::{Key, normalize_input};
use proptest::prelude::*;

/// Bytes rich in the characters key sequences are made of.
fn keyish_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            Just(0x1bu8),
            Just(b'['),
            Just(b'O'),
            Just(b';'),
            Just(b':'),
            Just(b'u'),
            Just(b'~'),
            Just(b'A'),
            b'0'..=b'9',
            any::<u8>(),
        ],
        0..64,
    )
}

proptest! {
    #[test]
    fn normalize_never_panics_and_keeps_text_without_escapes(
        input in keyish_bytes(),
        app_cursor: bool,
    ) {
        let out = normalize_input(&input, app_cursor);
        if !input.contains(&0x1b) {
            prop_assert_eq!(out.as_ref(), input.as_slice());
        }
    }

    #[test]
    fn key_names_never_panic(name in "\\PC{0,12}", app_cursor: bool) {
        if let Ok(key) = Key::parse(&name) {
            prop_assert!(!key.encode(app_cursor).is_empty());
        }
    }

    #[test]
    fn screen_takes_any_output_and_size(
        chunks in prop::collection::vec(keyish_bytes(), 0..8),
        cols in 0u16..500,
        rows in 0u16..300,
    ) {
        let mut screen = Screen::new(cols, rows);
        for chunk in &chunks {
            screen.process(chunk);
            // The transposed size: any size must do.
            screen.resize(rows, cols);
        }
        let (c, r) = screen.size();
        prop_assert!(c >= 1 && r >= 1);
        prop_assert!(screen.text().lines().count() <= r as usize);
        let _ = screen.take_replies();
    }
}
