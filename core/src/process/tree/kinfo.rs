//! FreeBSD: the process tree from `sysctl(KERN_PROC)`'s `kinfo_proc`
//! records. Type-checked on Linux; run only on FreeBSD.

use std::mem::size_of;

use libc::c_int;
use rustix::process::Signal;

use super::{Pid, Process};

/// The `kinfo_proc` records `sysctl` returns for `mib`: every process
/// (`KERN_PROC_PROC`) or one (`KERN_PROC_PID`).
fn records(mib: &[c_int]) -> Vec<libc::kinfo_proc> {
    for _ in 0..4 {
        let mut bytes = 0usize;
        // SAFETY: a null buffer asks for the size needed.
        let rc = unsafe {
            libc::sysctl(
                mib.as_ptr(),
                mib.len() as u32,
                std::ptr::null_mut(),
                &mut bytes,
                std::ptr::null(),
                0,
            )
        };
        if rc < 0 {
            return Vec::new();
        }
        // Room for what starts meanwhile.
        let room = bytes / size_of::<libc::kinfo_proc>() + 16;
        // SAFETY: an all-zero kinfo_proc is a valid value of the C struct.
        let mut out: Vec<libc::kinfo_proc> = vec![unsafe { std::mem::zeroed() }; room];
        let mut bytes = room * size_of::<libc::kinfo_proc>();
        // SAFETY: sysctl writes at most `bytes` into the buffer.
        let rc = unsafe {
            libc::sysctl(
                mib.as_ptr(),
                mib.len() as u32,
                out.as_mut_ptr().cast(),
                &mut bytes,
                std::ptr::null(),
                0,
            )
        };
        if rc == 0 {
            out.truncate(bytes / size_of::<libc::kinfo_proc>());
            return out;
        }
        // ENOMEM: more processes than room; ask again.
    }
    Vec::new()
}

fn process(k: &libc::kinfo_proc) -> Process {
    // sys/proc.h: "Working on exiting".
    const P_WEXIT: libc::c_long = 0x02000;
    let zombie = k.ki_stat == libc::SZOMB;
    Process {
        pid: k.ki_pid,
        ppid: k.ki_ppid,
        sid: k.ki_sid,
        zombie,
        exiting: !zombie && k.ki_flag & P_WEXIT != 0,
    }
}

/// Every process.
pub(super) fn processes() -> impl Iterator<Item = Process> {
    records(&[libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PROC])
        .iter()
        .map(process)
        .collect::<Vec<_>>()
        .into_iter()
}

/// Direct children of `pid`.
pub fn children(pid: Pid) -> Vec<Pid> {
    processes()
        .filter(|p| p.ppid == pid)
        .map(|p| p.pid)
        .collect()
}

/// `pid` as the system shows it now.
pub(super) fn look(pid: Pid) -> Option<Process> {
    records(&[libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PID, pid])
        .first()
        .map(process)
}

/// Whether `pid` holds `signal` pending and blocked (its first thread's
/// masks, which are bash's only ones).
pub(super) fn holds_blocked(pid: Pid, signal: Signal) -> bool {
    let Some(k) = records(&[libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PID, pid])
        .into_iter()
        .next()
    else {
        return false;
    };
    let raw = signal.as_raw();
    // SAFETY: sigismember reads the two sets, owned for the call.
    unsafe {
        libc::sigismember(&k.ki_siglist, raw) == 1 && libc::sigismember(&k.ki_sigmask, raw) == 1
    }
}

/// The program `pid` runs now.
pub(super) fn program(pid: Pid) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let mib = [
        libc::CTL_KERN,
        libc::KERN_PROC,
        libc::KERN_PROC_PATHNAME,
        pid,
    ];
    let mut path = vec![0u8; libc::PATH_MAX as usize];
    let mut bytes = path.len();
    // SAFETY: sysctl writes at most `bytes` into the buffer.
    let rc = unsafe {
        libc::sysctl(
            mib.as_ptr(),
            mib.len() as u32,
            path.as_mut_ptr().cast(),
            &mut bytes,
            std::ptr::null(),
            0,
        )
    };
    (rc == 0 && bytes > 1).then(|| {
        path.truncate(bytes - 1);
        std::ffi::OsString::from_vec(path).into()
    })
}
