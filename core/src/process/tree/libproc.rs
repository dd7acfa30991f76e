//! macOS: the process tree from libproc (`proc_listchildpids`,
//! `proc_listallpids`, `proc_pidinfo`, `proc_pidpath`) and `getsid`.
//! Type-checked on Linux; run only on a Mac.

use std::mem::size_of;

use libc::{c_int, c_void};
use rustix::process::Signal;

use super::{Pid, Process};

/// Calls `list(buffer, bytes)` (a libproc listing of pids that returns the
/// bytes it wrote, or the bytes needed for a null buffer) with a buffer
/// large enough, with room for what starts meanwhile.
fn listing(list: impl Fn(*mut c_void, c_int) -> c_int) -> Vec<Pid> {
    let needed = list(std::ptr::null_mut(), 0).max(0) as usize / size_of::<Pid>();
    let mut pids = vec![0 as Pid; needed + 64];
    let bytes = list(
        pids.as_mut_ptr().cast(),
        (pids.len() * size_of::<Pid>()) as c_int,
    );
    pids.truncate(bytes.max(0) as usize / size_of::<Pid>());
    pids.retain(|&p| p > 0);
    pids
}

/// What libproc tells of `pid`.
fn info(pid: Pid) -> Option<libc::proc_bsdinfo> {
    // SAFETY: an all-zero proc_bsdinfo is a valid value of the C struct.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = size_of::<libc::proc_bsdinfo>() as c_int;
    // SAFETY: proc_pidinfo writes at most `size` bytes into `info`.
    let n = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            (&mut info as *mut libc::proc_bsdinfo).cast(),
            size,
        )
    };
    (n == size).then_some(info)
}

/// Direct children of `pid`.
pub fn children(pid: Pid) -> Vec<Pid> {
    // SAFETY: libproc writes at most `bytes` into the buffer.
    listing(|buffer, bytes| unsafe { libc::proc_listchildpids(pid, buffer, bytes) })
}

/// Whether `pid` holds `signal` pending and blocked: macOS does not tell a
/// process's blocked mask, so never (a signal bash takes after a fork is
/// not followed into the fork's child there).
pub(super) fn holds_blocked(_pid: Pid, _signal: Signal) -> bool {
    false
}

/// The program `pid` runs now.
pub(super) fn program(pid: Pid) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let mut path = vec![0u8; libc::PROC_PIDPATHINFO_MAXSIZE as usize];
    // SAFETY: proc_pidpath writes at most the buffer's size.
    let n = unsafe { libc::proc_pidpath(pid, path.as_mut_ptr().cast(), path.len() as u32) };
    (n > 0).then(|| {
        path.truncate(n as usize);
        std::ffi::OsString::from_vec(path).into()
    })
}

/// Every process.
pub(super) fn processes() -> impl Iterator<Item = Process> {
    // SAFETY: libproc writes at most `bytes` into the buffer.
    let pids = listing(|buffer, bytes| unsafe { libc::proc_listallpids(buffer, bytes) });
    pids.into_iter().filter_map(look)
}

/// `pid` as the system shows it now (never seen exiting: no process is
/// seen holding a signal either, see [`holds_blocked`]).
pub(super) fn look(pid: Pid) -> Option<Process> {
    let info = info(pid)?;
    // SAFETY: a plain system call.
    let sid = unsafe { libc::getsid(pid) };
    Some(Process {
        pid,
        ppid: info.pbi_ppid as Pid,
        sid,
        zombie: info.pbi_status == libc::SZOMB,
        exiting: false,
    })
}
