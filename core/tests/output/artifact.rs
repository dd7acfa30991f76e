//! ArtifactStore and the sink's spill, on a real directory.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use conch_core::artifact::ArtifactStore;
use conch_core::error::Error;
use conch_core::output::{OutputSink, SinkOptions};

/// A fresh directory path under the system temp dir (not created).
fn temp_dir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "conch-output-artifact-{}-{name}-{n}",
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&dir);
    dir
}

#[test]
fn allocates_sequential_ids_after_existing_files_reserving_each() {
    let dir = temp_dir("seq");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("4.bash.log"), "x").unwrap();
    fs::write(dir.join("9.log"), "not an artifact name").unwrap();
    fs::write(dir.join("12.read.txt"), "not a log").unwrap();
    let store = ArtifactStore::new(&dir);
    let a = store.allocate("bash").unwrap();
    let b = store.clone().allocate("bash").unwrap();
    assert_eq!((a.id.as_str(), b.id.as_str()), ("5", "6"));
    assert_eq!(a.path, dir.join("5.bash.log"));
    assert_eq!(fs::read(&a.path).unwrap(), b"", "reserved, empty");
    assert_eq!(a.url(), "artifact://5");
    // An id another process took meanwhile is skipped, and so is every id
    // below the largest one in the directory by then.
    fs::write(dir.join("7.bash.log"), "").unwrap();
    fs::write(dir.join("9.bash.log"), "taken").unwrap();
    assert_eq!(store.allocate("bash").unwrap().id, "10");
    a.release();
    assert!(!a.path.exists(), "an unused reservation is given back");
    let taken = conch_core::Artifact {
        id: "9".into(),
        path: dir.join("9.bash.log"),
    };
    taken.release();
    assert!(taken.path.exists(), "a file with output is never removed");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn open_checks_the_directory_at_once() {
    let dir = temp_dir("open").join("nested");
    let store = ArtifactStore::open(&dir).unwrap();
    assert!(dir.is_dir(), "created by open");
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 0, "the probe is gone");
    assert_eq!(store.allocate("bash").unwrap().id, "0");
    // Under a plain file, no directory can be made.
    let file = dir.join("plain");
    fs::write(&file, "x").unwrap();
    let err = ArtifactStore::open(file.join("artifacts")).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with(&format!(
            "artifacts directory {} cannot be used: ",
            file.join("artifacts").display()
        )),
        "{err}"
    );
    // A read-only file system cannot be written.
    assert!(ArtifactStore::open("/proc/self").is_err());
    fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

#[test]
fn creates_the_directory_lazily_and_starts_at_zero() {
    let dir = temp_dir("lazy").join("nested");
    let store = ArtifactStore::new(&dir);
    assert!(!dir.exists());
    assert_eq!(store.allocate("bash").unwrap().id, "0");
    assert!(dir.is_dir());
    assert!(matches!(
        store.allocate("../x"),
        Err(Error::InvalidArgument(_))
    ));
    fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

#[test]
fn ids_are_unique_across_threads() {
    let dir = temp_dir("threads");
    let store = ArtifactStore::new(&dir);
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            std::thread::spawn(move || {
                (0..50)
                    .map(|_| store.allocate("bash").unwrap().id)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut ids: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .map(|id| id.parse().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, (0..400).collect::<Vec<u64>>());
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn resolve_errors_use_the_reference_texts() {
    let dir = temp_dir("errors");
    let store = ArtifactStore::new(&dir);
    let text = |r: conch_core::Result<String>| r.unwrap_err().to_string();
    assert_eq!(
        text(store.resolve("artifact://1")),
        "No artifacts directory found"
    );
    fs::create_dir_all(&dir).unwrap();
    assert_eq!(
        text(store.resolve("artifact://1")),
        "Artifact 1 not found. Available: none"
    );
    fs::write(dir.join("10.bash.log"), "ten").unwrap();
    fs::write(dir.join("2.tool.txt"), "two").unwrap();
    fs::write(dir.join("note.txt"), "ignored").unwrap();
    assert_eq!(
        text(store.resolve("artifact://3")),
        "Artifact 3 not found. Available: 2, 10"
    );
    assert!(matches!(
        store.resolve("artifact://3"),
        Err(Error::NotFound(_))
    ));
    assert_eq!(
        text(store.resolve("artifact://")),
        "artifact:// URL requires a numeric ID: artifact://0"
    );
    assert_eq!(
        text(store.resolve("artifact://x1")),
        "artifact:// ID must be numeric, got: x1"
    );
    assert!(matches!(
        store.resolve("artifact://x1"),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(store.resolve("artifact://2").unwrap(), "two");
    assert_eq!(store.resolve("artifact://10").unwrap(), "ten");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_link_or_a_fifo_in_the_directory_is_refused_not_followed() {
    let dir = temp_dir("links");
    fs::create_dir_all(&dir).unwrap();
    let secret = dir.join("outside.txt");
    fs::write(&secret, "secret\n").unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("3.bash.log")).unwrap();
    let fifo = dir.join("4.bash.log");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path this test owns.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let store = ArtifactStore::new(&dir);
    for id in ["3", "4"] {
        let refused = format!("Artifact {id} is not a regular file: refused");
        let url = format!("artifact://{id}");
        assert_eq!(store.resolve(&url).unwrap_err().to_string(), refused);
        assert_eq!(store.read(id, 0, None).unwrap_err().to_string(), refused);
        let page = store.read_page(&url, 0, None, 1024);
        assert_eq!(page.unwrap_err().to_string(), refused);
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn another_scheme_is_not_an_artifact_url() {
    let store = ArtifactStore::new(temp_dir("scheme"));
    for read in [
        store.read("file:///etc/passwd", 0, None),
        store
            .read_page("file:///etc/passwd", 0, None, 1024)
            .map(|p| p.text),
        store.resolve("file:///etc/passwd"),
    ] {
        assert_eq!(
            read.unwrap_err().to_string(),
            "Not an artifact:// URL: file:///etc/passwd"
        );
    }
}

#[test]
fn read_returns_line_ranges() {
    let dir = temp_dir("read");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("0.bash.log"), "a\nb\nc\nd").unwrap();
    fs::write(dir.join("1.bash.log"), "").unwrap();
    let store = ArtifactStore::new(&dir);
    assert_eq!(store.read("0", 0, None).unwrap(), "a\nb\nc\nd");
    assert_eq!(store.read("0", 1, Some(2)).unwrap(), "b\nc\n");
    assert_eq!(store.read("artifact://0", 3, Some(10)).unwrap(), "d");
    assert_eq!(store.read("0", 3, Some(0)).unwrap(), "");
    assert_eq!(
        store.read("0", 4, None).unwrap_err().to_string(),
        "Offset 4 is beyond the end of artifact 0 (4 lines)"
    );
    // The largest offset, with or without a limit, is only out of range.
    for limit in [None, Some(0), Some(1), Some(usize::MAX)] {
        assert_eq!(
            store.read("0", usize::MAX, limit).unwrap_err().to_string(),
            format!(
                "Offset {} is beyond the end of artifact 0 (4 lines)",
                usize::MAX
            )
        );
    }
    assert_eq!(store.read("1", 0, None).unwrap(), "");
    assert!(store.read("1", 1, None).is_err());
    assert_eq!(
        store.read("7", 0, None).unwrap_err().to_string(),
        "Artifact 7 not found. Available: 0, 1"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn read_page_bounds_the_text_and_counts_every_line() {
    let dir = temp_dir("page");
    fs::create_dir_all(&dir).unwrap();
    // Lines "0\n" .. "99\n", then a long line of multi-byte characters
    // without a line end, then nothing.
    let mut text: String = (0..100).map(|i| format!("{i}\n")).collect();
    text.push_str(&"é".repeat(40_000));
    fs::write(dir.join("0.bash.log"), &text).unwrap();
    let store = ArtifactStore::new(&dir);
    let page = |offset, limit, max| store.read_page("artifact://0", offset, limit, max).unwrap();

    // Within the bound: the lines asked for, the whole artifact counted.
    let p = page(0, Some(3), 1000);
    assert_eq!(
        (p.text.as_str(), p.lines, p.total_lines, p.cut),
        ("0\n1\n2\n", 3, 101, false)
    );
    // The bound ends the page at the last whole line that fits ("0\n".."3\n"
    // are 8 bytes; "4\n" would make 10 > 9).
    let p = page(0, None, 9);
    assert_eq!((p.text.as_str(), p.lines, p.cut), ("0\n1\n2\n3\n", 4, true));
    let p = page(4, Some(2), 9);
    assert_eq!(
        (p.text.as_str(), p.offset_line, p.lines, p.cut),
        ("4\n5\n", 4, 2, false)
    );
    // A first line longer than the bound: its start, cut between characters
    // (é is two bytes: 5 bytes of room hold two of them).
    let p = page(100, None, 5);
    assert_eq!(
        (p.text.as_str(), p.lines, p.total_lines, p.cut),
        ("éé", 1, 101, true)
    );
    // The last lines, with no bound in the way.
    let p = page(99, None, usize::MAX);
    assert_eq!(p.text, format!("99\n{}", "é".repeat(40_000)));
    assert_eq!((p.lines, p.cut), (2, false));
    assert_eq!(
        store.read_page("0", 101, None, 10).unwrap_err().to_string(),
        "Offset 101 is beyond the end of artifact 0 (101 lines)"
    );
    // A read in the middle of a huge file holds no more than its page.
    assert_eq!(store.read("0", 100, None).unwrap(), "é".repeat(40_000));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sink_spills_the_whole_stream_once_it_overflows() {
    let dir = temp_dir("spill");
    let store = ArtifactStore::new(&dir);
    let artifact = store.allocate("bash").unwrap();
    let mut sink = OutputSink::new(SinkOptions {
        max_bytes: 100,
        artifact: Some(artifact.clone().into()),
        ..SinkOptions::default()
    });
    let mut expected = String::new();
    for i in 0..50 {
        let line = format!("\x1b[1mline {i}\x1b[0m\r\n");
        expected.push_str(&format!("line {i}\n"));
        sink.push(line.as_bytes());
    }
    let summary = sink.dump(None);
    assert!(summary.truncated);
    assert_eq!(summary.artifact_id.as_deref(), Some(artifact.id.as_str()));
    assert_eq!(fs::read_to_string(&artifact.path).unwrap(), expected);
    assert_eq!(store.resolve(&artifact.url()).unwrap(), expected);
    assert!(expected.ends_with(&summary.output));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&artifact.path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sink_without_overflow_creates_no_file() {
    let dir = temp_dir("nospill");
    let store = ArtifactStore::new(&dir);
    let artifact = store.allocate("bash").unwrap();
    let mut sink = OutputSink::new(SinkOptions {
        artifact: Some(artifact.clone().into()),
        ..SinkOptions::default()
    });
    sink.push(b"small\n");
    let summary = sink.dump(None);
    assert_eq!(summary.artifact_id, None);
    assert!(!artifact.path.exists(), "the reservation was given back");
    // Dropped without a dump (a run that failed), likewise.
    let unused = store.allocate("bash").unwrap();
    drop(OutputSink::new(SinkOptions {
        artifact: Some(unused.clone().into()),
        ..SinkOptions::default()
    }));
    assert!(!unused.path.exists());
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unopenable_artifact_means_no_artifact_not_an_error() {
    let dir = temp_dir("unopenable");
    let store = ArtifactStore::new(&dir);
    let artifact = store.allocate("bash").unwrap();
    // The path is taken by a directory: the file cannot be created.
    fs::remove_file(&artifact.path).unwrap();
    fs::create_dir(&artifact.path).unwrap();
    let mut sink = OutputSink::new(SinkOptions {
        max_bytes: 10,
        artifact: Some(artifact.into()),
        ..SinkOptions::default()
    });
    sink.push(b"0123456789abcdef\n");
    let summary = sink.dump(None);
    assert!(summary.truncated);
    assert_eq!(summary.artifact_id, None);
    assert_eq!(summary.output, "789abcdef\n");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_stores_over_one_directory_never_hand_out_the_same_id() {
    let dir = std::env::temp_dir().join(format!("conch-two-stores-{}", std::process::id()));
    let a = conch_core::ArtifactStore::new(&dir);
    let b = conch_core::ArtifactStore::new(&dir);
    let ids: Vec<String> = (0..6)
        .map(|i| {
            if i % 2 == 0 { &a } else { &b }
                .allocate("bash")
                .unwrap()
                .id
        })
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_store_slot_reserves_its_id_only_when_the_stream_spills() {
    let dir = temp_dir("slot");
    let store = ArtifactStore::new(&dir);
    let mut quiet = OutputSink::new(SinkOptions {
        max_bytes: 10,
        artifact: Some(store.slot("bash")),
        ..SinkOptions::default()
    });
    quiet.push(b"short\n");
    assert_eq!(quiet.dump(None).artifact_id, None);
    assert!(!dir.exists(), "nothing reserved, nothing created");
    let mut loud = OutputSink::new(SinkOptions {
        max_bytes: 10,
        artifact: Some(store.slot("job")),
        ..SinkOptions::default()
    });
    loud.push(b"0123456789abcdef\n");
    assert_eq!(loud.artifact_id(), Some("0"), "reserved at the first spill");
    let summary = loud.dump(None);
    assert_eq!(summary.artifact_id.as_deref(), Some("0"));
    assert_eq!(
        fs::read_to_string(store.path_of("0", "job")).unwrap(),
        "0123456789abcdef\n"
    );
    // A store that cannot reserve means no artifact, not an error.
    let blocked = temp_dir("slot-blocked");
    fs::write(&blocked, "a file where the directory would be").unwrap();
    let mut sink = OutputSink::new(SinkOptions {
        max_bytes: 10,
        artifact: Some(ArtifactStore::new(&blocked).slot("bash")),
        ..SinkOptions::default()
    });
    sink.push(b"0123456789abcdef\n");
    let summary = sink.dump(None);
    assert!(summary.truncated);
    assert_eq!(summary.artifact_id, None);
    fs::remove_file(&blocked).unwrap();
    fs::remove_dir_all(&dir).unwrap();
}
