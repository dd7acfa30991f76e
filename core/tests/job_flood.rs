//! A job that never stops printing (`yes`) keeps the host's memory
//! bounded, its artifact stops at the cap, polls stay within `max_bytes`
//! and say what they skipped, and a kill returns promptly. One test per
//! binary: RSS is a process-wide figure.

use std::time::{Duration, Instant};

use conch_core::artifact::ArtifactStore;
use conch_core::shell::{Shell, ShellOptions, Snapshot};
use conch_core::{JobOptions, JobStatus, PollOptions};

fn rss_kib() -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap();
    text.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap()
}

#[test]
fn yes_for_twenty_seconds_stays_bounded() {
    let dir = std::env::temp_dir().join(format!("conch-job-flood-{}", std::process::id()));
    let cap = 10u64 << 20;
    let sh = Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        artifacts: Some(ArtifactStore::new(&dir)),
        job_artifact_cap: cap,
        ..ShellOptions::default()
    })
    .unwrap();
    let before = rss_kib();
    let job = sh.start(JobOptions::new("yes")).unwrap();
    let opts = PollOptions {
        wait: Duration::from_secs(1),
        max_bytes: Some(4096),
        ..PollOptions::default()
    };
    let end = Instant::now() + Duration::from_secs(20);
    let mut peak = before;
    let mut last = None;
    while Instant::now() < end {
        let p = sh.poll(job, &opts, None).unwrap();
        assert!(p.output.len() <= 4096, "{}", p.output.len());
        assert_eq!(p.status, JobStatus::Running);
        peak = peak.max(rss_kib());
        last = Some(p);
    }
    let last = last.unwrap();
    assert!(last.omitted_bytes > 0, "{last:?}");
    assert!(last.artifact_truncated, "{last:?}");
    assert!(
        last.total_bytes > 2 * cap,
        "yes wrote only {}",
        last.total_bytes
    );
    let growth_mib = (peak - before) / 1024;
    assert!(growth_mib < 32, "RSS grew {growth_mib} MiB");
    let artifact = last.artifact_id.unwrap();
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{artifact}."))
        })
        .unwrap();
    assert_eq!(file.metadata().unwrap().len(), cap);
    let t = Instant::now();
    let fin = sh.kill(job).unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_eq!(fin.status, JobStatus::Killed);
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}
