//! The loop builtin's version guard, and the eval loop a session falls back
//! to (docs/engine.md): a build of `builtin/conch_loop.c` that accepts
//! another bash version only is refused by this bash, and sessions run the
//! eval loop with it, or fail to start when they ask for the builtin. A
//! binary of its own: it points `CONCH_LOOP_BUILTIN`, a variable of the
//! whole process, at that build.

use std::path::{Path, PathBuf};
use std::process::Command;

use conch_core::shell::{RunOptions, Shell, ShellOptions, Snapshot};
use conch_core::{Engine, EngineChoice};

/// `conch-loop.so` built to accept bash 4.9 only, in a directory of its own.
fn build_for_another_version() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("conch-engine-guard-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let so = dir.join("conch-loop.so");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../builtin/conch_loop.c");
    let built = Command::new("cc")
        .args([
            "-O2",
            "-shared",
            "-fPIC",
            r#"-DBASH_API_VERSIONS={"4.9"}"#,
            "-o",
        ])
        .arg(&so)
        .arg(&source)
        .status()
        .unwrap();
    assert!(built.success());
    so
}

fn session(engine: EngineChoice) -> conch_core::Result<Shell> {
    Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        engine,
        ..ShellOptions::default()
    })
}

#[test]
fn a_builtin_for_another_bash_is_refused_and_the_eval_loop_runs() {
    let so = build_for_another_version();
    // bash itself refuses it: the load function fails.
    let out = Command::new("bash")
        .args([
            "--noprofile",
            "--norc",
            "-c",
            r#"enable -f "$1" conch_loop"#,
            "bash",
        ])
        .arg(&so)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("conch_loop"), "{said}");

    // SAFETY: the only test of this binary sets it before any session
    // exists; no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("CONCH_LOOP_BUILTIN", &so) };
    unsafe { std::env::remove_var("CONCH_ENGINE") };
    let sh = session(EngineChoice::Auto).unwrap();
    assert_eq!(sh.engine().unwrap(), Engine::Eval);
    let r = sh.run(RunOptions::new("if then"), |_| {}).unwrap();
    assert!(
        r.output.starts_with("bash: eval: line 1:"),
        "{:?}",
        r.output
    );
    let r = sh.run(RunOptions::new("echo ok"), |_| {}).unwrap();
    assert_eq!(r.output, "ok\n");

    // Asked for, it is a failed start that names the file.
    let sh = session(EngineChoice::Builtin).unwrap();
    let e = sh
        .run(RunOptions::new("true"), |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("did not load the loop builtin"), "{e}");
    assert!(e.contains(&so.display().to_string()), "{e}");

    // Not found at all: the session cannot be made.
    unsafe { std::env::set_var("CONCH_LOOP_BUILTIN", "") };
    let e = session(EngineChoice::Builtin).err().unwrap().to_string();
    assert!(e.contains("is not installed"), "{e}");
    assert_eq!(
        session(EngineChoice::Auto).unwrap().engine().unwrap(),
        Engine::Eval
    );
    let _ = std::fs::remove_dir_all(so.parent().unwrap());
}
