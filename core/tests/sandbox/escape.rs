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

/// The file-handle escape: a handle of `/` taken inside, opened through
/// the session's own writable mount (`$TMPDIR`, a bind mount of the host's
/// filesystem), gives a directory past every mount of the namespaces and
/// past Landlock, from which root could write anywhere. python's ctypes
/// makes the calls; `$1` is where the write would land.
const FILE_HANDLE: &str = r#"python3 - "$1" <<'EOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
handle = ctypes.create_string_buffer(8 + 128)
handle[0:4] = (128).to_bytes(4, "little")
mount = ctypes.c_int()
if libc.name_to_handle_at(-100, b"/", handle, ctypes.byref(mount), 0) != 0:
    sys.exit(f"no handle: errno {ctypes.get_errno()}")
through = os.open(os.environ["TMPDIR"], os.O_RDONLY | os.O_DIRECTORY)
root = libc.open_by_handle_at(through, handle, os.O_RDONLY | os.O_DIRECTORY)
if root < 0:
    sys.exit(f"refused: errno {ctypes.get_errno()}")
fd = os.open(sys.argv[1].lstrip("/") + "/escaped", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=root)
os.write(fd, b"x")
print("escaped")
EOF"#;

/// A System V shared memory key the host makes and the session looks for.
const SHM_KEY: libc::key_t = 0x5eed_c0c4;

#[test]
fn file_handles_capabilities_hostname_and_host_ipc_give_no_way_out() {
    let dir = scratch("escape-handles");
    let outside = scratch("escape-handles-outside");
    std::fs::write(dir.join("handle.sh"), FILE_HANDLE).unwrap();
    // SAFETY: plain System V calls; the segment is removed below.
    let shm = unsafe { libc::shmget(SHM_KEY, 4096, libc::IPC_CREAT | 0o600) };
    assert!(shm >= 0, "{}", std::io::Error::last_os_error());
    let host_name = || std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let before = host_name();
    let sh = shell(&dir, Some(Sandbox::default()));

    let (code, output) = out(&sh, &format!("bash handle.sh {}", outside.display()));
    assert!(!output.contains("escaped"), "{output}");
    assert_ne!(code, Some(0), "{output}");
    assert!(!outside.join("escaped").exists());

    // None of what acts on the whole machine is left in the bounding set:
    // CAP_DAC_READ_SEARCH (2), CAP_SYS_MODULE (16), CAP_SYS_PTRACE (19),
    // CAP_SYS_ADMIN (21), CAP_SYS_TIME (25), CAP_BPF (39).
    let (_, status) = out(&sh, "grep -E '^Cap(Bnd|Inh|Amb)' /proc/self/status");
    let set = |name: &str| {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
    };
    for bit in [2, 16, 19, 21, 25, 39] {
        assert_eq!(set("CapBnd:") >> bit & 1, 0, "capability {bit}: {status}");
    }
    assert_eq!(set("CapInh:"), 0, "{status}");
    assert_eq!(set("CapAmb:"), 0, "{status}");

    // The machine's name and the host's IPC objects are out of reach.
    let _ = out(&sh, "hostname conch-sandbox-renamed");
    assert_eq!(host_name(), before);
    let look =
        format!("python3 -c 'import ctypes; print(ctypes.CDLL(None).shmget({SHM_KEY}, 0, 0))'");
    let (_, seen) = out(&sh, &look);
    assert_eq!(seen.trim(), "-1", "the host's segment is visible: {seen}");

    drop(sh);
    // SAFETY: removes the segment made above.
    unsafe { libc::shmctl(shm, libc::IPC_RMID, std::ptr::null_mut()) };
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&outside);
}
