//! Secrets of the env a host gives (`mask`): with real bash, the values of
//! variables whose names look secret never come back, in the chunks, the
//! result, the artifact file or a job's polls; replays the commands of
//! `tests/vectors/mask.json` (its pushes are replayed by
//! `core/tests/output/vectors.rs`).

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::{CUT, HANG, RELEASE, gated, wait_until};
use conch_core::shell::{
    BashResult, ExecuteOptions, RunOptions, Shell, ShellOptions, Snapshot, execute_shell,
};
use conch_core::{ArtifactStore, JobOptions, JobStatus, Mask, PollOptions};
use regex::Regex;
use serde_json::Value;

const TOKEN: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
const MASKED: &str = "[masked: API_TOKEN]";

fn temp_dir() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("conch-mask-{}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

fn secret_env() -> Vec<(String, String)> {
    vec![("API_TOKEN".into(), TOKEN.into())]
}

/// A session with `API_TOKEN` in its env, masked as `mask` says, spilling
/// to `artifacts` past `max_bytes`.
fn shell_with(mask: Mask, max_bytes: usize, artifacts: &PathBuf) -> Shell {
    Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        session_env: secret_env(),
        mask,
        max_bytes,
        artifacts: Some(ArtifactStore::new(artifacts)),
        ..ShellOptions::default()
    })
    .unwrap()
}

/// Runs `command`, returning the result and what the chunks said.
fn run(sh: &Shell, opts: RunOptions) -> (BashResult, String) {
    let mut chunks = String::new();
    let r = sh.run(opts, |c| chunks.push_str(c)).unwrap();
    (r, chunks)
}

/// Everything a result and its artifact hold, as text.
fn everything(r: &BashResult, chunks: &str, artifacts: &PathBuf) -> String {
    let mut all = format!("{r:?}\n{}\n{chunks}", serde_json::to_string(r).unwrap());
    if let Some(id) = &r.artifact_id {
        let path = ArtifactStore::new(artifacts).path_of(id, "bash");
        all.push_str(&fs::read_to_string(path).unwrap());
    }
    all
}

#[test]
fn vector_commands() {
    let path = format!("{}/../tests/vectors/mask.json", env!("CARGO_MANIFEST_DIR"));
    let cases: Vec<Value> = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert!(!cases.is_empty());
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let env: Vec<(String, String)> = case["env"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        let mask: Mask =
            serde_json::from_value(case.get("mask").cloned().unwrap_or(Value::Null)).unwrap();
        let expect = case["expect"].as_str().unwrap();
        let mut commands = vec![case["command"].as_str().unwrap().to_string()];
        if let Some(cut) = case.get("cut") {
            let template = cut["command"].as_str().unwrap();
            for k in cut["from"].as_u64().unwrap()..cut["to"].as_u64().unwrap() {
                commands.push(template.replace("{k}", &k.to_string()));
            }
        }
        for command in commands {
            let mut chunks = String::new();
            let r = execute_shell(
                ExecuteOptions {
                    command: command.clone(),
                    env: env.clone(),
                    mask: mask.clone(),
                    ..ExecuteOptions::default()
                },
                |c| chunks.push_str(c),
            )
            .unwrap();
            assert_eq!(r.output, expect, "{name}: {command}");
            assert_eq!(chunks, expect, "{name}: {command} (chunks)");
            assert_eq!(r.total_bytes, expect.len() as u64, "{name}: {command}");
        }
    }
}

#[test]
fn env_printenv_and_traces_of_the_session_are_masked() {
    let dir = temp_dir();
    let sh = shell_with(Mask::default(), 51_200, &dir);
    let (r, chunks) = run(&sh, RunOptions::new("printenv API_TOKEN"));
    assert_eq!(
        (r.output.as_str(), chunks.as_str()),
        ("[masked: API_TOKEN]\n", "[masked: API_TOKEN]\n")
    );
    let (r, _) = run(&sh, RunOptions::new("env | grep '^API_TOKEN='"));
    assert_eq!(r.output, format!("API_TOKEN={MASKED}\n"));
    // The trace goes to stderr, merged into the output (`+` once per
    // level of the session's `eval`).
    let (r, _) = run(&sh, RunOptions::new("set -x; echo \"$API_TOKEN\"; set +x"));
    let traced =
        Regex::new(r"^\++ echo \[masked: API_TOKEN\]\n\[masked: API_TOKEN\]\n\++ set \+x\n$");
    assert!(traced.unwrap().is_match(&r.output), "{:?}", r.output);
    assert!(!everything(&r, "", &dir).contains(TOKEN));
    sh.close();
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_value_written_in_two_pieces_is_masked_at_every_cut() {
    let dir = temp_dir();
    let sh = shell_with(Mask::default(), 51_200, &dir);
    for k in 1..TOKEN.len() {
        let command = format!(
            "printf '%s' \"${{API_TOKEN:0:{k}}}\"; /bin/sleep 0.01; printf '%s\\n' \"${{API_TOKEN:{k}}}\""
        );
        let (r, chunks) = run(&sh, RunOptions::new(command));
        assert_eq!(r.output, format!("{MASKED}\n"), "cut at {k}");
        assert_eq!(chunks, r.output, "cut at {k}");
    }
    sh.close();
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn the_value_is_nowhere_in_a_spilled_result_or_its_artifact() {
    let dir = temp_dir();
    let sh = shell_with(Mask::default(), 200, &dir);
    // Past max_bytes: the head is dropped, the whole stream spills.
    let command = "for i in $(seq 1 50); do echo \"line $i $API_TOKEN\"; done; \
                   printf '%s' \"${API_TOKEN:0:7}\"; printf '%s\\n' \"${API_TOKEN:7}\"";
    let (r, chunks) = run(&sh, RunOptions::new(command));
    assert!(r.truncated, "{r:?}");
    let id = r.artifact_id.clone().expect("spilled");
    let artifact = fs::read_to_string(ArtifactStore::new(&dir).path_of(&id, "bash")).unwrap();
    let expected: String = (1..=50)
        .map(|i| format!("line {i} {MASKED}\n"))
        .chain([format!("{MASKED}\n")])
        .collect();
    assert_eq!(artifact, expected);
    assert_eq!(chunks, expected);
    assert_eq!(r.total_bytes, expected.len() as u64);
    assert!(expected.ends_with(&r.output));
    assert!(!everything(&r, &chunks, &dir).contains(TOKEN));
    sh.close();
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn mask_false_shows_the_value_and_a_list_adds_names() {
    let dir = temp_dir();
    let sh = shell_with(Mask::Off, 51_200, &dir);
    let (r, _) = run(&sh, RunOptions::new("printenv API_TOKEN"));
    assert_eq!(r.output, format!("{TOKEN}\n"));
    sh.close();

    let sh = shell_with(Mask::Also(vec!["DB_URL".into()]), 51_200, &dir);
    let opts = RunOptions {
        env: vec![
            ("DB_URL".into(), "postgres://app:pw@db/app".into()),
            ("OTHER".into(), "not-a-secret-value".into()),
        ],
        ..RunOptions::new("echo \"$DB_URL\" \"$OTHER\" \"$API_TOKEN\"")
    };
    let (r, _) = run(&sh, opts);
    assert_eq!(
        r.output,
        format!("[masked: DB_URL] not-a-secret-value {MASKED}\n")
    );
    sh.close();
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_short_value_is_not_masked_and_a_run_env_is() {
    let dir = temp_dir();
    let sh = shell_with(Mask::default(), 51_200, &dir);
    let opts = RunOptions {
        env: vec![
            ("PIN_TOKEN".into(), "1234567".into()),
            ("RUN_SECRET".into(), "only-for-this-run".into()),
        ],
        ..RunOptions::new("echo \"$PIN_TOKEN\" \"$RUN_SECRET\" \"$API_TOKEN\"")
    };
    let (r, _) = run(&sh, opts);
    assert_eq!(r.output, format!("1234567 [masked: RUN_SECRET] {MASKED}\n"));
    sh.close();
    let _ = fs::remove_dir_all(&dir);
}

/// The whole output of `job`, once it has ended.
fn poll_to_end(sh: &Shell, job: conch_core::JobId) -> String {
    crate::poll_to_end(sh, job, Instant::now() + 3 * HANG).0
}

#[test]
fn job_output_is_masked() {
    let dir = temp_dir();
    let sh = shell_with(Mask::default(), 51_200, &dir);
    // A started job, with a secret of its own.
    let job = sh
        .start(JobOptions {
            env: vec![("JOB_PASSWORD".into(), "job-password-1".into())],
            ..JobOptions::new(
                "printf '%s' \"${API_TOKEN:0:9}\"; /bin/sleep 0.05; \
                 printf '%s %s\\n' \"${API_TOKEN:9}\" \"$JOB_PASSWORD\"",
            )
        })
        .unwrap();
    assert_eq!(
        poll_to_end(&sh, job),
        format!("{MASKED} [masked: JOB_PASSWORD]\n")
    );
    // What a run left writing in the background.
    let command = format!("{} echo started", gated("echo \"late $API_TOKEN\""));
    let (r, _) = run(&sh, RunOptions::new(&command));
    assert_eq!(r.output, "started\n");
    run(&sh, RunOptions::new(RELEASE));
    let left = sh.jobs().last().unwrap().job;
    assert_eq!(poll_to_end(&sh, left), format!("late {MASKED}\n"));
    // A run moved to the background at its yield_after.
    let opts = RunOptions {
        yield_after: Some(Duration::from_millis(300)),
        ..RunOptions::new("echo \"$API_TOKEN\"; /bin/sleep 1; echo \"after $API_TOKEN\"")
    };
    let (r, chunks) = run(&sh, opts);
    let job = r.backgrounded.expect("moved to the background");
    assert!(r.output.ends_with(&format!("]\n{MASKED}\n")), "{r:?}");
    assert!(!everything(&r, &chunks, &dir).contains(TOKEN));
    assert_eq!(poll_to_end(&sh, job), format!("after {MASKED}\n"));
    sh.close();
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_poll_gives_out_what_could_start_a_value() {
    let dir = temp_dir();
    let sh = shell_with(Mask::default(), 51_200, &dir);
    // The job's last output is the start of the value: held back by the
    // masker until a poll returns, which gives it out; an `until` sees it.
    let job = sh
        .start(JobOptions::new(
            "printf 'prompt %s' \"${API_TOKEN:0:6}\"; /bin/sleep 30",
        ))
        .unwrap();
    let p = sh
        .poll(
            job,
            &PollOptions {
                wait: HANG,
                until: Some(Regex::new("prompt ghp_16$").unwrap()),
                ..PollOptions::default()
            },
            None,
        )
        .unwrap();
    assert_eq!(p.output, "prompt ghp_16");
    assert_eq!(p.status, JobStatus::Running);
    assert!(wait_until(CUT, || {
        sh.jobs()
            .iter()
            .any(|j| j.job == job && j.total_bytes == 13)
    }));
    sh.kill(job).unwrap();
    sh.close();
    let _ = fs::remove_dir_all(&dir);
}
