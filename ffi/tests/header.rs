//! `include/conch.h` is generated from the extern functions of this crate;
//! this test regenerates it and fails when the checked-in copy differs, so a
//! signature cannot change without the header (and its review) changing too.
//! `CONCH_BLESS=1 cargo test -p conch-ffi --test header` rewrites it, on a
//! developer's machine only: with `CI` set, `CONCH_BLESS` fails the test, so
//! a CI run can never bless a stale header into passing.

use std::ffi::OsStr;
use std::path::Path;

/// Whether the `CI` variable says this runs in continuous integration (CI
/// services set it to `true`; unset, empty, `0` or `false` say no).
fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Whether this run should rewrite the header: `CONCH_BLESS=1`. Any other
/// value of `CONCH_BLESS`, or `CONCH_BLESS` under CI, fails the test rather
/// than being ignored.
fn bless() -> bool {
    let Some(value) = std::env::var_os("CONCH_BLESS") else {
        return false;
    };
    assert!(
        !in_ci(),
        "CONCH_BLESS is set while CI is set: CI checks include/conch.h, it never rewrites it. \
         Regenerate the header on a development machine and commit it."
    );
    assert!(
        value == OsStr::new("1"),
        "CONCH_BLESS={value:?}: set it to 1 to rewrite include/conch.h, or unset it"
    );
    true
}

#[test]
fn checked_in_header_is_up_to_date() {
    let crate_dir = env!("CARGO_MANIFEST_DIR");
    let header = Path::new(crate_dir).join("../include/conch.h");
    let config = cbindgen::Config::from_file(Path::new(crate_dir).join("cbindgen.toml"))
        .expect("ffi/cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).expect("cbindgen wrote UTF-8");

    if bless() {
        std::fs::write(&header, &generated).expect("writing include/conch.h");
        return;
    }
    let current = std::fs::read_to_string(&header).unwrap_or_default();
    if current != generated {
        let first = current
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| current.lines().count().min(generated.lines().count()));
        let line = |text: &str| {
            text.lines()
                .nth(first)
                .unwrap_or("<end of file>")
                .to_string()
        };
        panic!(
            "include/conch.h is stale: it differs from what ffi/src generates.\n\
             first difference at line {}:\n  checked in: {}\n  generated:  {}\n\
             Regenerate it with: CONCH_BLESS=1 cargo test -p conch-ffi --test header",
            first + 1,
            line(&current),
            line(&generated),
        );
    }
}
