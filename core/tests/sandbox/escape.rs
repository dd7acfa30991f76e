//! What a sandboxed command does to lift its sandbox fails.

use conch_core::Limits;

use super::*;

#[test]
fn limits_cannot_be_raised_and_kernel_knobs_cannot_be_written() {
    let dir = scratch("escape-limits");
    let sh = shell(
        &dir,
        Some(Sandbox {
            limits: Limits {
                open_files: Some(256),
                cpu_seconds: Some(100),
                ..Limits::default()
            },
            ..Sandbox::default()
        }),
    );
    assert_eq!(out(&sh, "ulimit -n; ulimit -Hn").1, "256\n256\n");
    for attempt in [
        "ulimit -n 512",
        "ulimit -Hn 512",
        "ulimit -t unlimited",
        "prlimit --pid $$ --nofile=4096:4096",
        "echo unconfined > /proc/self/attr/current",
        "echo 1 > /proc/sys/kernel/sysrq",
        "echo $$ > /sys/fs/cgroup/pids/cgroup.procs",
    ] {
        let (code, output) = out(&sh, attempt);
        assert_ne!(code, Some(0), "{attempt}: {output}");
    }
    // Nothing was raised.
    assert_eq!(out(&sh, "ulimit -n; ulimit -Ht").1, "256\n100\n");
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn namespaces_and_privileges_give_no_way_out() {
    let dir = scratch("escape-ns");
    let outside = scratch("escape-ns-outside");
    let sh = shell(&dir, Some(Sandbox::default()));
    let o = outside.display();
    for attempt in [
        format!("unshare -r touch {o}/userns"),
        format!("unshare -U bash -c 'touch {o}/userns2'"),
        format!("unshare -rm bash -c 'mount -t tmpfs x {o} && touch {o}/mounted'"),
        // The session's own host: no signal leaves the sandbox (Landlock
        // ABI 6).
        format!("kill -0 {}", std::process::id()),
    ] {
        let (code, output) = out(&sh, &attempt);
        assert_ne!(code, Some(0), "{attempt}: {output}");
    }
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&outside);
}

/// A second Landlock layer, made inside the sandbox to grant write on `/`
/// (python's ctypes making the raw system calls), only narrows: the write
/// outside is still denied.
const SECOND_LAYER: &str = r#"python3 - "$1" <<'EOF'
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
WRITE = (1 << 1) | (1 << 14)
attr = struct.pack("QQQ", (1 << 16) - 1, 0, 0)
fd = libc.syscall(444, attr, len(attr), 0)
assert fd >= 0, ctypes.get_errno()
root = os.open("/", os.O_PATH)
rule = struct.pack("=Qi", (1 << 16) - 1, root)
assert libc.syscall(445, fd, 1, rule, 0) == 0, ctypes.get_errno()
assert libc.syscall(446, fd, 0) == 0, ctypes.get_errno()
print("layered")
open(sys.argv[1] + "/layer", "w")
EOF"#;

#[test]
fn a_second_landlock_layer_only_narrows() {
    let dir = scratch("escape-layer");
    let outside = scratch("escape-layer-outside");
    std::fs::write(dir.join("layer.sh"), SECOND_LAYER).unwrap();
    let sh = shell(&dir, Some(Sandbox::default()));
    let (code, output) = out(&sh, &format!("bash layer.sh {}", outside.display()));
    assert!(output.contains("layered"), "{output}");
    assert_ne!(code, Some(0), "{output}");
    // The mount is read-only too: that refuses it first.
    assert!(output.contains("Read-only file system"), "{output}");
    assert!(!outside.join("layer").exists());
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&outside);
}
