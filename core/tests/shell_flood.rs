//! Memory stays bounded whatever a command prints, and the artifact keeps
//! every byte. One test per binary: RSS is a process-wide figure.

use std::io::Read;
use std::time::Duration;

use conch_core::artifact::ArtifactStore;
use conch_core::shell::{RunOptions, Shell, ShellOptions, Snapshot};

fn status_kib(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap();
    text.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// Reads `path` in blocks, checking every byte with `ok(offset, byte)`;
/// returns the length.
fn check_file(path: &std::path::Path, ok: impl Fn(u64, u8) -> bool) -> u64 {
    let mut f = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            return len;
        }
        for (i, &b) in buf[..n].iter().enumerate() {
            assert!(
                ok(len + i as u64, b),
                "unexpected byte {b} at {}",
                len + i as u64
            );
        }
        len += n as u64;
    }
}

#[test]
fn floods_keep_memory_bounded_and_artifacts_complete() {
    let dir = std::env::temp_dir().join(format!("conch-flood-{}", std::process::id()));
    let store = ArtifactStore::new(&dir);
    let sh = Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        artifacts: Some(store.clone()),
        ..ShellOptions::default()
    })
    .unwrap();
    let rss_before = status_kib("VmRSS:");
    let mut seen = 0u64;
    let r = sh
        .run(RunOptions::new("head -c 2G /dev/zero | tr '\\0' x"), |c| {
            seen += c.len() as u64
        })
        .unwrap();
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(r.total_bytes, 2 << 30);
    assert_eq!(seen, 2 << 30, "every byte streamed");
    assert!(r.truncated && r.output_bytes <= 51_200);
    let id = r.artifact_id.clone().expect("spilled");
    let path = dir.join(format!("{id}.bash.log"));
    assert_eq!(check_file(&path, |_, b| b == b'x'), 2 << 30);
    std::fs::remove_file(&path).unwrap();

    let mut opts = RunOptions::new("yes");
    opts.timeout = Some(Duration::from_secs(2));
    let r = sh.run(opts, |_| {}).unwrap();
    assert!(r.timed_out);
    let id = r.artifact_id.clone().expect("spilled");
    let path = dir.join(format!("{id}.bash.log"));
    let len = check_file(&path, |i, b| b == if i % 2 == 0 { b'y' } else { b'\n' });
    assert_eq!(len, r.total_bytes);
    std::fs::remove_file(&path).unwrap();

    let growth_mib = status_kib("VmHWM:").saturating_sub(rss_before) / 1024;
    assert!(growth_mib < 32, "RSS grew by {growth_mib} MiB");
    let _ = std::fs::remove_dir_all(&dir);
}
