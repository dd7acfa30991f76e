//! `include/conch.h` is generated from the extern functions of this crate;
//! this test regenerates it and fails when the checked-in copy differs, so a
//! signature cannot change without the header (and its review) changing too.
//! `CONCH_BLESS=1 cargo test -p conch-ffi --test header` rewrites it.

use std::path::Path;

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

    if std::env::var_os("CONCH_BLESS").is_some_and(|v| v == "1") {
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
