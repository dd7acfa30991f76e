//! The file requests: read by range, atomic write, stat, list, remove, the
//! core's errors, and the confinement of a sandbox (a session's, and the
//! server's own for requests that name no session).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use conch_core::Error;
use conch_remote::files::{FileKind, MAX_BYTES};
use conch_remote::{ConnectOptions, Remote, RemoteError, Target, connect};
use serde_json::json;

use super::{CONCH, options, stdio};

/// A fresh directory of this test's own.
fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("conch-files-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

/// A stdio server started in `cwd` with `args`.
fn stdio_in(cwd: &Path, args: &str) -> Remote {
    let script = format!(
        "cd '{}' && exec '{CONCH}' serve --stdio {args}",
        cwd.display()
    );
    let argv = vec!["/bin/sh".to_string(), "-c".into(), script];
    connect(Target::Command(argv), ConnectOptions::default()).expect("a stdio server")
}

#[test]
fn a_file_is_written_atomically_and_read_back_by_range() {
    let dir = dir("round-trip");
    let remote = stdio(&[]);
    let files = remote.files();
    let file = dir.join("a/b/c.txt");
    files
        .write(&text(&file), b"hello, remote", Some(0o600))
        .unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), b"hello, remote");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600);
    assert_eq!(files.read(&text(&file), 0, None).unwrap(), b"hello, remote");
    assert_eq!(files.read(&text(&file), 7, Some(3)).unwrap(), b"rem");
    assert_eq!(files.read(&text(&file), 7, None).unwrap(), b"remote");
    assert_eq!(files.read(&text(&file), 99, Some(3)).unwrap(), b"");
    // Replaced: the new content, the old mode, no temporary file left.
    files.write(&text(&file), b"second", None).unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), b"second");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600);
    let listed = files.list(&text(&dir.join("a/b"))).unwrap();
    assert_eq!(listed.len(), 1, "only the file, no temporary: {listed:?}");
    // A symlink at the path is replaced; its target is never written.
    let target = dir.join("target");
    std::fs::write(&target, "kept").unwrap();
    std::os::unix::fs::symlink(&target, dir.join("link")).unwrap();
    files.write(&text(&dir.join("link")), b"new", None).unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
    assert!(!dir.join("link").is_symlink());
    assert_eq!(std::fs::read(dir.join("link")).unwrap(), b"new");
    // Bytes that are not text go through whole.
    let bytes: Vec<u8> = (0..=255).collect();
    files.write(&text(&dir.join("bin")), &bytes, None).unwrap();
    assert_eq!(files.read(&text(&dir.join("bin")), 0, None).unwrap(), bytes);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn stat_and_list_tell_types_sizes_and_modes_without_following_links() {
    let dir = dir("stat-list");
    std::fs::write(dir.join("b.txt"), "12345").unwrap();
    std::fs::create_dir(dir.join("a")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", dir.join("c")).unwrap();
    let remote = stdio(&[]);
    let files = remote.files();
    let stat = files.stat(&text(&dir.join("b.txt"))).unwrap();
    assert_eq!(
        (stat.name.as_str(), stat.kind, stat.size),
        ("b.txt", FileKind::File, 5)
    );
    let mtime = std::fs::metadata(dir.join("b.txt"))
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        (stat.mtime - mtime).abs() < 0.001,
        "{} vs {mtime}",
        stat.mtime
    );
    let listed = files.list(&text(&dir)).unwrap();
    let seen: Vec<_> = listed.iter().map(|e| (e.name.as_str(), e.kind)).collect();
    assert_eq!(
        seen,
        [
            ("a", FileKind::Dir),
            ("b.txt", FileKind::File),
            ("c", FileKind::Symlink)
        ]
    );
    assert_eq!(listed[2].target.as_deref(), Some("/etc/hostname"));
    assert_eq!(listed[1].mode, 0o644 & !umask());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The test process's umask (what the server it starts inherits).
fn umask() -> u32 {
    // SAFETY: sets the umask back at once.
    unsafe {
        let mask = libc::umask(0o022);
        libc::umask(mask);
        // mode_t: 32 bits on Linux, 16 on macOS.
        #[allow(clippy::useless_conversion)]
        u32::from(mask)
    }
}

#[test]
fn remove_takes_files_links_and_trees_and_never_follows_a_link_out() {
    let dir = dir("remove");
    let outside = dir.join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("kept"), "kept").unwrap();
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("sub/f"), "f").unwrap();
    std::os::unix::fs::symlink(&outside, tree.join("link")).unwrap();
    let remote = stdio(&[]);
    let files = remote.files();
    match files.remove(&text(&tree), false) {
        Err(RemoteError::Core(Error::Io { context, .. })) => {
            assert!(context.contains("recursive"), "{context}")
        }
        other => panic!("a directory with entries needs recursive: {other:?}"),
    }
    files.remove(&text(&tree), true).unwrap();
    assert!(!tree.exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("kept")).unwrap(),
        "kept"
    );
    std::fs::write(dir.join("f"), "").unwrap();
    files.remove(&text(&dir.join("f")), false).unwrap();
    files.remove(&text(&outside.join("kept")), false).unwrap();
    files.remove(&text(&outside), false).unwrap();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_are_the_cores_as_locally() {
    let dir = dir("errors");
    let remote = stdio(&[]);
    let files = remote.files();
    let missing = text(&dir.join("missing"));
    for outcome in [
        files.read(&missing, 0, None).map(drop),
        files.stat(&missing).map(drop),
        files.list(&missing).map(drop),
        files.remove(&missing, false),
    ] {
        match outcome {
            Err(RemoteError::Core(Error::NotFound(m))) => assert!(m.contains(&missing), "{m}"),
            other => panic!("NotFound: {other:?}"),
        }
    }
    match files.read(&text(&dir), 0, None) {
        Err(RemoteError::Core(Error::Io { source, .. })) => {
            assert_eq!(source.raw_os_error(), Some(libc::EISDIR))
        }
        other => panic!("a directory is not read: {other:?}"),
    }
    let big = dir.join("big");
    std::fs::write(&big, vec![b'x'; MAX_BYTES as usize + 10]).unwrap();
    match files.read(&text(&big), 0, None) {
        Err(RemoteError::Core(Error::InvalidArgument(m))) => {
            assert!(m.contains("by range"), "{m}")
        }
        other => panic!("a file past one read is refused whole: {other:?}"),
    }
    match files.read(&text(&big), 0, Some(MAX_BYTES + 1)) {
        Err(RemoteError::Core(Error::InvalidArgument(m))) => {
            assert!(m.starts_with("limit must be at most"), "{m}")
        }
        other => panic!("a limit past one read is refused: {other:?}"),
    }
    let tail = files.read(&text(&big), MAX_BYTES, Some(MAX_BYTES)).unwrap();
    assert_eq!(tail, b"xxxxxxxxxx");
    let whole = files.read(&text(&big), 0, Some(MAX_BYTES)).unwrap();
    assert_eq!(whole.len() as u64, MAX_BYTES);
    match files.write(&text(&big), &vec![0; MAX_BYTES as usize + 1], None) {
        Err(RemoteError::Core(Error::InvalidArgument(m))) => {
            assert!(m.starts_with("data must be at most"), "{m}")
        }
        other => panic!("a write past one frame is refused: {other:?}"),
    }
    match files.write(&text(&dir), b"x", Some(0o10000)) {
        Err(RemoteError::Core(Error::InvalidArgument(m))) => assert!(m.contains("mode"), "{m}"),
        other => panic!("a mode past the permission bits is refused: {other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn relative_paths_start_at_the_sessions_cwd_or_the_servers() {
    let server_cwd = dir("server-cwd");
    let session_cwd = dir("session-cwd");
    let remote = stdio_in(&server_cwd, "");
    remote.files().write("at-server", b"1", None).unwrap();
    assert!(server_cwd.join("at-server").is_file());
    let sh = remote
        .shell(options(
            json!({"cwd": text(&session_cwd), "snapshot": "none"}),
        ))
        .unwrap();
    sh.files().write("at-session", b"2", None).unwrap();
    assert!(session_cwd.join("at-session").is_file());
    // The session's cwd is where its last command left it.
    sh.run(
        conch_core::RunOptions::new("mkdir deeper && cd deeper"),
        |_| {},
    )
    .unwrap();
    sh.files().write("there", b"3", None).unwrap();
    assert!(session_cwd.join("deeper/there").is_file());
    std::fs::remove_dir_all(&server_cwd).unwrap();
    std::fs::remove_dir_all(&session_cwd).unwrap();
}

/// Whether `outcome` is a refusal of the sandbox: permission denied or a
/// read-only file system.
fn denied<T>(outcome: &Result<T, RemoteError>) -> bool {
    match outcome {
        Err(RemoteError::Core(Error::Io { source, .. })) => {
            matches!(
                source.raw_os_error(),
                Some(libc::EACCES | libc::EROFS | libc::EPERM)
            )
        }
        _ => false,
    }
}

#[test]
fn a_sandboxed_sessions_files_are_what_its_commands_reach() {
    let inside = dir("sandbox-inside");
    let outside = dir("sandbox-outside");
    std::fs::write(outside.join("host"), "host's").unwrap();
    let remote = stdio(&[]);
    let sh = remote
        .shell(options(json!({"cwd": text(&inside), "snapshot": "none",
                               "sandbox": {"writable": []}})))
        .unwrap();
    let files = sh.files();
    files.write("inside.txt", b"in", None).unwrap();
    assert_eq!(files.read("inside.txt", 0, None).unwrap(), b"in");
    assert_eq!(std::fs::read(inside.join("inside.txt")).unwrap(), b"in");
    // Outside the writable paths: refused, nothing written or removed.
    let written = files.write(&text(&outside.join("new")), b"x", None);
    assert!(denied(&written), "{written:?}");
    assert!(!outside.join("new").exists());
    let removed = files.remove(&text(&outside.join("host")), false);
    assert!(denied(&removed), "{removed:?}");
    assert!(outside.join("host").exists());
    // The secrets the sandbox hides stay hidden.
    let host = std::fs::read("/etc/shadow").unwrap_or_default();
    let seen = files.read("/etc/shadow", 0, None);
    assert!(
        !host.is_empty() && seen.as_ref().map_or(true, |s| *s != host),
        "the host's /etc/shadow is not read through the sandbox"
    );
    // As its commands see them.
    let r = sh
        .run(conch_core::RunOptions::new("cat inside.txt"), |_| {})
        .unwrap();
    assert_eq!(r.output, "in");
    std::fs::remove_dir_all(&inside).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

#[test]
fn a_sandbox_that_lists_what_it_reads_confines_reads_too() {
    let inside = dir("readable-inside");
    let outside = dir("readable-outside");
    std::fs::write(outside.join("secret"), "s").unwrap();
    let remote = stdio(&[]);
    let sh = remote
        .shell(options(json!({"cwd": text(&inside), "snapshot": "none",
                               "sandbox": {"readable": [text(&inside)]}})))
        .unwrap();
    let files = sh.files();
    files.write("mine", b"m", None).unwrap();
    assert_eq!(files.read("mine", 0, None).unwrap(), b"m");
    let read = files.read(&text(&outside.join("secret")), 0, None);
    assert!(denied(&read), "{read:?}");
    std::fs::remove_dir_all(&inside).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

#[test]
fn the_servers_sandbox_confines_requests_that_name_no_session() {
    let cwd = dir("server-sandbox-cwd");
    let writable = dir("server-sandbox-writable");
    let outside = dir("server-sandbox-outside");
    let remote = stdio_in(&cwd, &format!("--sandbox-write '{}'", writable.display()));
    let files = remote.files();
    files.write("here", b"h", None).unwrap();
    assert!(cwd.join("here").is_file());
    files.write(&text(&writable.join("w")), b"w", None).unwrap();
    assert_eq!(std::fs::read(writable.join("w")).unwrap(), b"w");
    let written = files.write(&text(&outside.join("x")), b"x", None);
    assert!(denied(&written), "{written:?}");
    assert!(!outside.join("x").exists());
    let host = std::fs::read("/etc/shadow").unwrap_or_default();
    let seen = files.read("/etc/shadow", 0, None);
    assert!(!host.is_empty() && seen.as_ref().map_or(true, |s| *s != host));
    for dir in [cwd, writable, outside] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}
