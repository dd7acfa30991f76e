//! Extraction keeps meaning: for each pipeline, real bash running the
//! original prints what bash running the normalized command prints once
//! `apply_head_tail` has applied the extracted limits (up to the final
//! newline, which `apply_head_tail` keeps only with the text's last line).

use std::process::Command;

use conch_core::command::{apply_head_tail, normalize_bash_command};

fn bash(command: &str) -> String {
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-c", command])
        .output()
        .expect("bash runs");
    String::from_utf8(out.stdout).expect("utf-8 output")
}

#[test]
fn limits_equal_the_pipeline_they_replace() {
    let commands = [
        "seq 100 | head -5",
        "seq 100 | head -n 5 | tail -2",
        "seq 100 | tail -20 | head -5",
        "seq 100 | head -50 | tail -n 10 | tail -4",
        "seq 100 | head -n7 | head -3",
        "seq 100 | tail -3 | tail -9",
        "seq 5 | head -n 0",
        "seq 5 | tail -0",
        "seq 3 | head -10",
        "printf 'a\\nb\\nc' | tail -2",
        "printf '\\n\\n\\n' | tail -n 1",
        "for i in 1 2 3 4; do echo $i; done | head -3",
        "{ echo a; echo b; } | tail -1",
        "(echo x; echo y) | head --lines=1",
        "cat <<EOF | head -1\na | b\nc\nEOF",
        "seq 10 |& tail -2",
        "echo $'it\\'s' | head -1",
        "seq 10 |\n  tail -n 3",
        "true && seq 20 | tail -4;",
    ];
    for command in commands {
        let n = normalize_bash_command(command);
        assert!(
            n.head_lines.is_some() || n.tail_lines.is_some(),
            "nothing extracted from {command:?}"
        );
        let expected = bash(command);
        let actual = apply_head_tail(&bash(&n.command), n.head_lines, n.tail_lines);
        assert_eq!(
            actual.strip_suffix('\n').unwrap_or(&actual),
            expected.strip_suffix('\n').unwrap_or(&expected),
            "{command:?} normalized to {n:?}"
        );
    }
}
