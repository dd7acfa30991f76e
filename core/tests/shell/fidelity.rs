//! Differential fidelity: every script of `tests/fidelity/` gives the same
//! output and status through a persistent `Shell` as through `bash -c`.

use std::io::Read;
use std::process::{Command, Stdio};

use conch_core::{RunOptions, Shell, ShellOptions, Snapshot};

fn bash_c(script: &str) -> (String, Option<i32>) {
    let (mut r, w) = std::io::pipe().unwrap();
    let mut child = Command::new("bash")
        .args(["--noprofile", "--norc", "-c", script])
        .stdin(Stdio::null())
        .stdout(w.try_clone().unwrap())
        .stderr(w)
        .spawn()
        .unwrap();
    let mut out = String::new();
    r.read_to_string(&mut out).unwrap();
    (out, child.wait().unwrap().code())
}

#[test]
fn the_corpus_behaves_as_in_bash_c() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fidelity");
    let mut scripts: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sh"))
        .collect();
    scripts.sort();
    assert!(scripts.len() >= 10, "corpus present");
    let mut failures = Vec::new();
    for path in &scripts {
        let script = std::fs::read_to_string(path).unwrap();
        let expected = bash_c(&script);
        let sh = Shell::new(ShellOptions {
            snapshot: Snapshot::None,
            non_interactive_env: false,
            ..ShellOptions::default()
        })
        .unwrap();
        let r = sh.run(RunOptions::new(script.clone()), |_| {}).unwrap();
        let got = (r.output.clone(), r.exit_code);
        if got != expected {
            failures.push(format!(
                "{}:\n  bash -c: {expected:?}\n  conch:   {got:?}",
                path.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
