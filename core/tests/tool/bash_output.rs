//! `BashTool`'s output end to end: a truncated output spills its whole
//! stream to an artifact with the notice (also when the command failed or
//! timed out), where the artifacts go (a job's too), and the head and tail
//! of the complete stream (`| head`, `| tail`, explicit limits).

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::Fixture;
use crate::bash::{config, exec, failed, tool};
use crate::common::{CUT, HANG};
use conch_core::ArtifactStore;
use conch_core::output::notice::{Direction, TruncatedBy};
use conch_core::tool::{BashTool, BashToolArgs, JobTool, JobToolArgs, ToolContext, expand_output};

fn tool_with_artifacts(name: &str) -> (Fixture, PathBuf) {
    let mut c = config(name);
    let dir = c.cwd.join("artifacts");
    c.artifacts_dir = Some(dir.clone());
    (Fixture::new(c), dir)
}

// ---- artifacts and truncation ----------------------------------------

fn artifact_file(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.bash.log"))
}

#[test]
fn truncated_output_spills_to_an_artifact_with_the_notice() {
    let (t, dir) = tool_with_artifacts("spill");
    let r = exec(&t, "printf 'a%.0s' {1..60000}").unwrap();
    let trunc = r.details.as_ref().unwrap().truncation().unwrap().clone();
    let id = trunc.artifact_id.clone().unwrap();
    assert!(r.text.ends_with(&format!(
        "\n\n[Showing lines 1-1 of 1 (50.0KB limit). Full: artifact://{id}]"
    )));
    assert_eq!(trunc.total_bytes, 60_000);
    assert_eq!(trunc.truncated_by, TruncatedBy::Bytes);
    assert_eq!(
        std::fs::read(artifact_file(&dir, &id)).unwrap().len(),
        60_000
    );
    let full = expand_output(t.artifacts().unwrap(), &r.text, r.details.as_ref()).unwrap();
    assert_eq!(full, "a".repeat(60_000));
    // an untruncated result expands to itself
    let small = exec(&t, "echo small").unwrap();
    assert_eq!(
        expand_output(t.artifacts().unwrap(), &small.text, small.details.as_ref()).unwrap(),
        "small"
    );
}

#[test]
fn a_failed_million_line_command_keeps_its_notice_and_artifact() {
    let (t, dir) = tool_with_artifacts("million");
    let e = failed(exec(&t, "seq 1 1000000; sh -c 'exit 1'"));
    let trunc = e.details().unwrap().truncation().unwrap().clone();
    let id = trunc.artifact_id.clone().unwrap();
    assert_eq!(trunc.total_lines, 1_000_000);
    let range = trunc.shown_range.unwrap();
    assert_eq!(range.end, 1_000_000);
    assert!(e.message().ends_with(&format!(
        "999999\n1000000\n\nCommand exited with code 1\n\n[Showing lines {}-1000000 of 1000000 (50.0KB limit). Full: artifact://{id}]",
        range.start
    )), "{}", &e.message()[e.message().len() - 200..]);
    let artifact = std::fs::read_to_string(artifact_file(&dir, &id)).unwrap();
    assert_eq!(artifact.lines().count(), 1_000_000);
    assert!(artifact.starts_with("1\n2\n3\n"));
    assert!(artifact.ends_with("999999\n1000000\n"));
}

#[test]
fn a_timed_out_flood_keeps_its_notice_and_artifact() {
    let (t, _dir) = tool_with_artifacts("timeout-flood");
    let mut args = BashToolArgs::new("seq 1 200000; /bin/sleep 100");
    args.timeout = Some(CUT.as_secs_f64());
    let e = failed(t.execute(args, ToolContext::default()));
    assert!(e.message().starts_with(&format!(
        "[Command timed out after {} seconds]\n",
        CUT.as_secs()
    )));
    let trunc = e.details().unwrap().truncation().unwrap();
    assert!(e.message().ends_with(&format!(
        "(50.0KB limit). Full: artifact://{}]",
        trunc.artifact_id.as_deref().unwrap()
    )));
}

#[test]
fn an_unusable_artifact_directory_is_an_error_when_the_tool_is_made() {
    let c = config("badartifacts");
    let file = c.cwd.join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let mut bad = c.clone();
    bad.artifacts_dir = Some(file.join("artifacts"));
    let err = BashTool::new(bad).err().expect("refused");
    assert!(
        err.to_string().starts_with(&format!(
            "artifacts directory {} cannot be used: ",
            file.join("artifacts").display()
        )),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&c.cwd);
}

#[test]
fn without_an_artifacts_directory_the_full_output_is_in_the_process_one() {
    let t = tool("default-artifacts");
    let r = exec(&t, "seq 1 100000").unwrap();
    let trunc = r.details.unwrap().meta.truncation.unwrap();
    let id = trunc.artifact_id.expect("spilled by default");
    assert!(
        r.text
            .ends_with(&format!("(50.0KB limit). Full: artifact://{id}]"))
    );
    let store = t.artifacts().expect("the process's store");
    assert_eq!(store.dir(), ArtifactStore::process_default().dir());
    assert_eq!(
        store.resolve(&format!("artifact://{id}")).unwrap(),
        (1..=100000).map(|n| format!("{n}\n")).collect::<String>()
    );
}

/// The id of the artifact `text` names last (`artifact://<id>`).
fn linked_id(text: &str) -> &str {
    let after = text.rsplit("artifact://").next().unwrap();
    let end = after
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(after.len());
    &after[..end]
}

#[test]
fn a_job_spills_to_the_tools_store_with_ids_apart_from_its_runs() {
    let (t, dir) = tool_with_artifacts("job-artifacts");
    let jobs = JobTool::new(&t);
    let store = t.artifacts().unwrap();
    let poll = |job: u32| {
        let args = JobToolArgs {
            op: "poll".into(),
            job: Some(job),
            wait: Some(HANG.as_secs_f64()),
            ..JobToolArgs::default()
        };
        jobs.execute(args, None).unwrap().text
    };
    let start = |command: &str| {
        let mut args = BashToolArgs::new(command);
        args.run_async = true;
        t.execute(args, ToolContext::default()).unwrap()
    };
    start("seq 1 100000 | sed s/^/JOB/");
    let text = poll(1);
    assert!(
        text.contains(" skipped: the whole output is in artifact://"),
        "{text}"
    );
    let job_id = linked_id(&text).to_string();
    assert!(dir.join(format!("{job_id}.job.log")).is_file());
    assert_eq!(store.read(&job_id, 0, Some(2)).unwrap(), "JOB1\nJOB2\n");
    // A run spilling after it gets an id of its own in the same store.
    let run = exec(&t, "seq 1 100000").unwrap();
    let run_id = linked_id(&run.text);
    assert_ne!(run_id, job_id);
    assert_eq!(store.read(run_id, 0, Some(1)).unwrap(), "1\n");
    assert_eq!(store.read(&job_id, 0, Some(1)).unwrap(), "JOB1\n");
    // The session's bash ended and started again: its jobs still spill there.
    assert!(exec(&t, "kill -9 $$").is_err());
    start("seq 1 100000 | sed s/^/AGAIN/");
    let text = poll(2);
    let again = linked_id(&text);
    assert!(dir.join(format!("{again}.job.log")).is_file(), "{text}");
    assert_eq!(store.read(again, 0, Some(1)).unwrap(), "AGAIN1\n");
}

// ---- head and tail of the complete stream -----------------------------

#[test]
fn yes_piped_to_head_returns_at_once() {
    let t = tool("yes-head");
    let start = Instant::now();
    let r = exec(&t, "yes | head -n 5").unwrap();
    let took = start.elapsed();
    eprintln!("yes | head -n 5 through BashTool: {took:?}");
    assert_eq!(r.text, "y\ny\ny\ny\ny");
    assert_eq!(r.details, None);
    // `yes` never ends by itself.
    assert!(took < HANG, "{took:?}");
}

#[test]
fn head_of_a_long_stream_is_its_first_lines() {
    let (t, _dir) = tool_with_artifacts("seq-head");
    let r = exec(&t, "seq 1 1000000 | head -n 3").unwrap();
    assert_eq!(r.text, "1\n2\n3");
    assert_eq!(r.details, None);
    let r = exec(&t, "seq 1 1000000 | head -3").unwrap();
    assert_eq!(r.text, "1\n2\n3");
}

#[test]
fn explicit_limits_win_over_extracted_ones() {
    let t = tool("explicit");
    let mut args = BashToolArgs::new("seq 1 100 | tail -n 5");
    args.tail = Some(2);
    assert_eq!(
        t.execute(args, ToolContext::default()).unwrap().text,
        "99\n100"
    );
    let mut args = BashToolArgs::new("seq 1 100 | tail -n 5");
    args.head = Some(10);
    // explicit head, extracted tail: the last 5 of the first 10
    assert_eq!(
        t.execute(args, ToolContext::default()).unwrap().text,
        "6\n7\n8\n9\n10"
    );
    assert_eq!(exec(&t, "seq 1 10 | tail -2").unwrap().text, "9\n10");
}

#[test]
fn tail_of_a_long_head_comes_from_the_artifact() {
    let (t, _dir) = tool_with_artifacts("head-tail");
    let mut args = BashToolArgs::new("seq 1 1000000");
    args.head = Some(100_000);
    args.tail = Some(3);
    let r = t.execute(args, ToolContext::default()).unwrap();
    assert_eq!(r.text, "99998\n99999\n100000");
    assert_eq!(r.details, None);
}

#[test]
fn a_tail_longer_than_the_bound_is_truncated_with_its_real_lines() {
    let (t, _dir) = tool_with_artifacts("long-tail");
    let r = exec(&t, "seq 1 100000 | tail -n 50000").unwrap();
    let trunc = r.details.unwrap().meta.truncation.unwrap();
    let range = trunc.shown_range.unwrap();
    assert_eq!(range.end, 100_000);
    assert!(range.start > 50_000);
    assert!(r.text.starts_with(&format!("{}\n", range.start)));
    assert!(r.text.contains("\n100000\n\n[Showing lines "));
    assert!(trunc.artifact_id.is_some());
}

#[test]
fn a_long_head_is_truncated_from_line_one() {
    let (t, _dir) = tool_with_artifacts("long-head");
    let r = exec(&t, "seq 1 100000 | head -n 50000").unwrap();
    let trunc = r.details.unwrap().meta.truncation.unwrap();
    assert_eq!(trunc.direction, Direction::Head);
    let range = trunc.shown_range.unwrap();
    assert_eq!(range.start, 1);
    assert!(range.end < 50_000);
    assert!(r.text.starts_with("1\n2\n"));
    assert!(r.text.contains(&format!(
        "\n{}\n\n[Showing lines 1-{}",
        range.end, range.end
    )));
}
