//! Builds the loop builtin (`builtin/`, a bash loadable builtin under
//! GPL-3.0-or-later) beside conch, never into it: `make` leaves
//! `conch-loop.so` in `OUT_DIR`, and the core keeps that path as the last
//! place it looks for the file (`shell::engine`). Packages carry their own
//! copy beside the library (`scripts/build.sh`). Not built when cross
//! compiling (the type-check for other systems): sessions there run the
//! eval loop until a native build.

use std::env;
use std::process::Command;

fn main() {
    for file in ["conch_loop.c", "bash_api.h", "Makefile"] {
        println!("cargo:rerun-if-changed=../builtin/{file}");
    }
    println!("cargo:rerun-if-env-changed=CC");
    let var = |name: &str| env::var(name).unwrap_or_default();
    if var("TARGET") != var("HOST") || var("CARGO_CFG_TARGET_FAMILY") != "unix" {
        return;
    }
    let out = var("OUT_DIR");
    let built = Command::new("make")
        .args(["-s", "-C", "../builtin", &format!("OUT={out}")])
        .status();
    match built {
        Ok(status) if status.success() => {
            println!("cargo:rustc-env=CONCH_LOOP_BUILT={out}/conch-loop.so");
        }
        other => println!(
            "cargo:warning=the loop builtin was not built ({other:?}): sessions run the eval loop"
        ),
    }
}
