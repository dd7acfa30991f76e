//! Linux: the process tree from `/proc` (each thread's `children` file,
//! each process's `stat` and `status`).

use std::fs;

use rustix::process::Signal;

use super::{Pid, Process};

/// Direct children of `pid`, from `/proc/<pid>/task/*/children` (one read per
/// thread, cheap), or a full `/proc` scan where that file is unavailable.
pub fn children(pid: Pid) -> Vec<Pid> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        match fs::read_to_string(task.path().join("children")) {
            Ok(text) => out.extend(pids(&text)),
            Err(_) => {
                return processes()
                    .filter(|p| p.ppid == pid)
                    .map(|p| p.pid)
                    .collect();
            }
        }
    }
    out
}

/// The direct children of a process with a single thread (bash), read as
/// often as asked: one file, `/proc/<pid>/task/<pid>/children`, opened
/// once and read again from its start each time (under a microsecond,
/// where opening it anew costs about five: the session reads it twice per
/// run). The open file stays with the process it was opened for: once that
/// process is gone it reads as no children, even if its pid is reused.
pub struct ChildrenOf {
    pid: Pid,
    /// `None` where the file is unavailable: [`children`] each time.
    file: Option<fs::File>,
}

impl ChildrenOf {
    pub fn new(pid: Pid) -> ChildrenOf {
        let file = fs::File::open(format!("/proc/{pid}/task/{pid}/children")).ok();
        ChildrenOf { pid, file }
    }

    pub fn read(&self) -> Vec<Pid> {
        let Some(file) = &self.file else {
            return children(self.pid);
        };
        read_from_start(file)
            .map(|text| pids(&text).collect())
            .unwrap_or_default()
    }
}

/// The whole text of an open `/proc` file, from its start (`pread`s: the
/// file's offset is left alone).
fn read_from_start(file: &fs::File) -> std::io::Result<String> {
    use std::os::unix::fs::FileExt;
    let mut text = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match file.read_at(&mut buf, text.len() as u64) {
            Ok(0) => break,
            Ok(n) => text.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    String::from_utf8(text).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The whole text of a small `/proc` file: open, read until the end,
/// close. `fs::read_to_string` also asks the file's size first (a `statx`
/// that `/proc` answers with 0).
fn read_proc_file(path: &str) -> std::io::Result<String> {
    read_from_start(&fs::File::open(path)?)
}

/// The pids of a `children` file: decimal numbers separated by spaces.
fn pids(text: &str) -> impl Iterator<Item = Pid> + '_ {
    text.split_whitespace().filter_map(|s| s.parse().ok())
}

/// `pid` as `/proc/<pid>/stat` shows it now.
pub(super) fn look(pid: Pid) -> Option<Process> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Whether `pid` has `signal` pending and blocked (from the `SigPnd`,
/// `ShdPnd` and `SigBlk` masks of `/proc/<pid>/status`; its main thread's
/// mask, which is bash's only one).
pub(super) fn holds_blocked(pid: Pid, signal: Signal) -> bool {
    let Ok(status) = read_proc_file(&format!("/proc/{pid}/status")) else {
        return false;
    };
    let mask = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0)
    };
    let bit = 1u64 << (signal.as_raw() - 1);
    (mask("SigPnd:") | mask("ShdPnd:")) & mask("SigBlk:") & bit != 0
}

/// The program `pid` runs now.
pub(super) fn program(pid: Pid) -> Option<std::path::PathBuf> {
    fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// Every process, from a scan of `/proc`.
pub(super) fn processes() -> impl Iterator<Item = Process> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|s| parse_stat(&s))
}

/// `/proc/<pid>/stat`: `pid (comm) state ppid pgrp session tty_nr tpgid
/// flags …`; comm may hold spaces and parens, so fields are read after the
/// last `)`. Exiting: `PF_EXITING` among the flags, set as a process
/// starts to exit.
fn parse_stat(text: &str) -> Option<Process> {
    const PF_EXITING: u64 = 0x4;
    let (head, rest) = text.rsplit_once(')')?;
    let pid = head.split_whitespace().next()?.parse().ok()?;
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let _pgrp = f.next()?;
    let sid = f.next()?.parse().ok()?;
    let flags = f.nth(2).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    Some(Process {
        pid,
        ppid,
        sid,
        zombie: state == 'Z',
        exiting: !matches!(state, 'Z' | 'X') && flags & PF_EXITING != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_comm() {
        let p = parse_stat("42 (a) b (c)) S 7 42 42 0 -1").unwrap();
        assert_eq!((p.pid, p.ppid, p.sid, p.zombie), (42, 7, 42, false));
        assert!(parse_stat("9 (z) Z 1 9 9").unwrap().zombie);
    }

    #[test]
    fn reads_exiting_from_the_flags() {
        // 0x400004: PF_EXITING among others; a zombie keeps its flags.
        assert!(parse_stat("9 (x) R 1 9 9 0 -1 4194308 0").unwrap().exiting);
        assert!(!parse_stat("9 (x) R 1 9 9 0 -1 4194304 0").unwrap().exiting);
        assert!(!parse_stat("9 (x) Z 1 9 9 0 -1 4194308 0").unwrap().exiting);
    }
}
