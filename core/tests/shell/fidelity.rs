//! Differential fidelity: every script of `tests/fidelity/` gives the same
//! output and status through a persistent `Shell` as through `bash -c`.
//! A script with lines `# --- next run ---` is run by the `Shell` as one
//! run per part, in order: the parts' outputs, one after the other, and
//! the last part's status must be what `bash -c` gives for the whole file.

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

/// The line that splits a script into runs.
const NEXT_RUN: &str = "\n# --- next run ---\n";

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
        let mut got = (String::new(), None);
        for part in script.split(NEXT_RUN) {
            let mut opts = RunOptions::new(part.to_string());
            opts.timeout = Some(std::time::Duration::from_secs(20));
            let r = sh.run(opts, |_| {}).unwrap();
            got.0.push_str(&r.output);
            got.1 = r.exit_code;
        }
        if got != expected {
            // A hung session repeats its text: the start is enough.
            let cut = |s: String| s.chars().take(2000).collect::<String>();
            failures.push(format!(
                "{}:\n  bash -c: {:?}\n  conch:   {:?}",
                path.display(),
                (cut(expected.0), expected.1),
                (cut(got.0), got.1)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
