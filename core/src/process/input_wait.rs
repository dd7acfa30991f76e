//! Whether a process sleeps waiting to read one of its descriptors, and
//! which: what tells a program that waits for keys (docs/behaviour.md,
//! sections 7 and 9). Looked at only when a question is asked (a run that
//! showed signs of a full-screen program, a poll of a job on a terminal),
//! never on the output's path.
//!
//! Linux: `/proc/<pid>/task/<tid>/syscall` names the system call each
//! thread is blocked in, with its arguments. A read (`read`, `readv`,
//! `pread64`…) names its descriptor; `select` and `pselect6` point at the
//! set of descriptors to read, `poll` and `ppoll` at their array, both
//! read from `/proc/<pid>/mem`; `epoll_wait` and its kin name the epoll
//! descriptor, whose `fdinfo` lists what it watches. A sleep
//! (`nanosleep`, Vim's two seconds after its warning) or a `wait4` is not
//! a read. These files need the access `ptrace` needs: conch has it over
//! the processes it started (it is their ancestor, as the same user),
//! unless a program made itself undumpable; the answer is then
//! [`Reading::Unknown`]. Elsewhere every answer is unknown.

use super::tree::Pid;

/// What a look at one process found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// A thread of it is blocked reading a wanted descriptor.
    Yes,
    /// None is (or it is gone).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    No,
    /// Its threads could not be looked at.
    Unknown,
}

#[cfg(target_os = "linux")]
pub(crate) use linux::{comm, foreground_group, group_of, is_terminal_fd, reading};

#[cfg(not(target_os = "linux"))]
pub(crate) use elsewhere::{comm, foreground_group, group_of, is_terminal_fd, reading};

#[cfg(target_os = "linux")]
mod linux {
    use std::fs::{self, File};
    use std::os::fd::{AsRawFd, BorrowedFd};
    use std::os::unix::fs::{FileExt, MetadataExt};

    use super::{Pid, Reading};

    /// The most descriptors of a `poll` array looked at.
    const POLL_MAX: u64 = 256;
    /// `select`'s set for 1024 descriptors.
    const SELECT_MAX: u64 = 1024;

    /// How the blocked call names what it reads.
    enum Call {
        /// A read of this descriptor.
        Fd(u64),
        /// `select`/`pselect6`: the number of descriptors and the address
        /// of the set to read.
        Select { nfds: u64, set: u64 },
        /// `poll`/`ppoll`: the array's address and length.
        Poll { fds: u64, nfds: u64 },
        /// An `epoll_wait` on this epoll descriptor.
        Epoll(u64),
    }

    /// The calls that wait to read, by number.
    fn call(nr: i64, args: [u64; 3]) -> Option<Call> {
        const EPOLL_PWAIT2: libc::c_long = 441;
        let [a, b, _] = args;
        let nr = libc::c_long::try_from(nr).ok()?;
        #[cfg(target_arch = "x86_64")]
        match nr {
            libc::SYS_select => return Some(Call::Select { nfds: a, set: b }),
            libc::SYS_poll => return Some(Call::Poll { fds: a, nfds: b }),
            libc::SYS_epoll_wait => return Some(Call::Epoll(a)),
            _ => {}
        }
        match nr {
            libc::SYS_read
            | libc::SYS_readv
            | libc::SYS_pread64
            | libc::SYS_preadv
            | libc::SYS_preadv2 => Some(Call::Fd(a)),
            libc::SYS_pselect6 => Some(Call::Select { nfds: a, set: b }),
            libc::SYS_ppoll => Some(Call::Poll { fds: a, nfds: b }),
            libc::SYS_epoll_pwait => Some(Call::Epoll(a)),
            EPOLL_PWAIT2 => Some(Call::Epoll(a)),
            _ => None,
        }
    }

    /// Whether a thread of `pid` is blocked reading a descriptor for which
    /// `wanted` holds.
    pub(crate) fn reading(pid: Pid, wanted: &mut dyn FnMut(i32) -> bool) -> Reading {
        let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
            return Reading::No;
        };
        let mut unknown = false;
        for task in tasks.flatten() {
            let Ok(text) = fs::read_to_string(task.path().join("syscall")) else {
                // No access (an undumpable program), or the thread is gone.
                unknown |= task.path().exists();
                continue;
            };
            let Some((nr, args)) = parse_syscall(&text) else {
                continue;
            };
            let reads = match call(nr, args) {
                None => false,
                Some(Call::Fd(fd)) => i32::try_from(fd).is_ok_and(&mut *wanted),
                Some(Call::Select { nfds, set }) => match select_set(pid, nfds, set) {
                    Some(fds) => fds.into_iter().any(&mut *wanted),
                    None => {
                        unknown = true;
                        false
                    }
                },
                Some(Call::Poll { fds, nfds }) => match poll_fds(pid, fds, nfds) {
                    Some(fds) => fds.into_iter().any(&mut *wanted),
                    None => {
                        unknown = true;
                        false
                    }
                },
                Some(Call::Epoll(epfd)) => epoll_fds(pid, epfd).into_iter().any(&mut *wanted),
            };
            if reads {
                return Reading::Yes;
            }
        }
        if unknown {
            Reading::Unknown
        } else {
            Reading::No
        }
    }

    /// `nr arg0 … arg5 sp pc` of a blocked thread (its first three
    /// arguments); `None` while it runs (`running`) or outside a call (`-1`).
    fn parse_syscall(text: &str) -> Option<(i64, [u64; 3])> {
        let mut fields = text.split_whitespace();
        let nr: i64 = fields.next()?.parse().ok()?;
        if nr < 0 {
            return None;
        }
        let mut args = [0u64; 3];
        for arg in &mut args {
            *arg = u64::from_str_radix(fields.next()?.trim_start_matches("0x"), 16).ok()?;
        }
        Some((nr, args))
    }

    /// `len` bytes of `pid`'s memory at `address`.
    fn memory(pid: Pid, address: u64, len: usize) -> Option<Vec<u8>> {
        let file = File::open(format!("/proc/{pid}/mem")).ok()?;
        let mut buf = vec![0u8; len];
        file.read_exact_at(&mut buf, address).ok()?;
        Some(buf)
    }

    /// The descriptors of a `select` read set.
    fn select_set(pid: Pid, nfds: u64, set: u64) -> Option<Vec<i32>> {
        if set == 0 {
            return Some(Vec::new());
        }
        let nfds = nfds.min(SELECT_MAX);
        // The set is an array of words (`long`), a bit per descriptor.
        let words = nfds.div_ceil(64) as usize;
        let bytes = memory(pid, set, words * 8)?;
        let fds = (0..nfds as usize)
            .filter(|&fd| {
                let word = u64::from_ne_bytes(bytes[fd / 64 * 8..][..8].try_into().unwrap());
                word & (1 << (fd % 64)) != 0
            })
            .map(|fd| fd as i32)
            .collect();
        Some(fds)
    }

    /// The descriptors a `poll` array waits to read.
    fn poll_fds(pid: Pid, array: u64, nfds: u64) -> Option<Vec<i32>> {
        let n = nfds.min(POLL_MAX) as usize;
        if n == 0 {
            return Some(Vec::new());
        }
        // `struct pollfd { int fd; short events; short revents; }`
        let bytes = memory(pid, array, n * 8)?;
        let wants = libc::POLLIN | libc::POLLPRI | libc::POLLRDNORM;
        let fds = bytes
            .chunks_exact(8)
            .filter_map(|e| {
                let fd = i32::from_ne_bytes(e[..4].try_into().unwrap());
                let events = i16::from_ne_bytes(e[4..6].try_into().unwrap());
                (fd >= 0 && events & wants != 0).then_some(fd)
            })
            .collect();
        Some(fds)
    }

    /// The descriptors an epoll descriptor of `pid` watches for reading
    /// (`tfd: <fd> events: <hex mask> …` lines of its `fdinfo`).
    fn epoll_fds(pid: Pid, epfd: u64) -> Vec<i32> {
        let Ok(info) = fs::read_to_string(format!("/proc/{pid}/fdinfo/{epfd}")) else {
            return Vec::new();
        };
        info.lines()
            .filter_map(|line| {
                let mut f = line.split_whitespace();
                (f.next()? == "tfd:").then_some(())?;
                let fd: i32 = f.next()?.parse().ok()?;
                (f.next()? == "events:").then_some(())?;
                let events = u32::from_str_radix(f.next()?, 16).ok()?;
                (events & libc::EPOLLIN as u32 != 0).then_some(fd)
            })
            .collect()
    }

    /// The name the system keeps for `pid` (`/proc/<pid>/comm`: the
    /// program's file name, at most 15 bytes).
    pub(crate) fn comm(pid: Pid) -> Option<String> {
        let text = fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        Some(text.trim_end_matches('\n').to_string()).filter(|n| !n.is_empty())
    }

    /// The process group of `pid` (the fifth field of its `stat`).
    pub(crate) fn group_of(pid: Pid) -> Option<Pid> {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_, rest) = stat.rsplit_once(')')?;
        rest.split_whitespace().nth(2)?.parse().ok()
    }

    /// The foreground process group of the terminal whose master is
    /// `master`.
    pub(crate) fn foreground_group(master: BorrowedFd<'_>) -> Option<Pid> {
        // SAFETY: tcgetpgrp only reads the terminal's state; on a master
        // it answers for its terminal.
        let group = unsafe { libc::tcgetpgrp(master.as_raw_fd()) };
        (group > 0).then_some(group)
    }

    /// Whether descriptor `fd` of `pid` is the terminal device `rdev`.
    pub(crate) fn is_terminal_fd(pid: Pid, fd: i32, rdev: u64) -> bool {
        fs::metadata(format!("/proc/{pid}/fd/{fd}")).is_ok_and(|m| m.rdev() == rdev)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn parses_the_syscall_file() {
            assert_eq!(
                parse_syscall("270 0x1 0x55f9 0x55f8 0x55f7 0x7ffc 0x0 0x7ffc 0x7f84\n"),
                Some((270, [1, 0x55f9, 0x55f8]))
            );
            assert_eq!(parse_syscall("running\n"), None);
            assert_eq!(parse_syscall("-1 0x7ffc 0x7f84\n"), None);
        }

        #[test]
        fn sees_a_thread_blocked_reading_a_pipe() {
            let (r, w) = std::io::pipe().unwrap();
            let fd = r.as_raw_fd();
            let reader = std::thread::spawn(move || {
                use std::io::Read;
                let mut r = r;
                let mut buf = [0u8; 1];
                let _ = r.read(&mut buf);
            });
            let me = std::process::id() as Pid;
            let mut seen = false;
            for _ in 0..500 {
                if reading(me, &mut |f| f == fd) == Reading::Yes {
                    seen = true;
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            assert_eq!(reading(me, &mut |f| f == fd + 1000), Reading::No);
            drop(w);
            reader.join().unwrap();
            assert!(seen);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod elsewhere {
    use std::os::fd::BorrowedFd;

    use super::{Pid, Reading};

    pub(crate) fn reading(_pid: Pid, _wanted: &mut dyn FnMut(i32) -> bool) -> Reading {
        Reading::Unknown
    }

    pub(crate) fn comm(_pid: Pid) -> Option<String> {
        None
    }

    pub(crate) fn group_of(_pid: Pid) -> Option<Pid> {
        None
    }

    pub(crate) fn foreground_group(_master: BorrowedFd<'_>) -> Option<Pid> {
        None
    }

    pub(crate) fn is_terminal_fd(_pid: Pid, _fd: i32, _rdev: u64) -> bool {
        false
    }
}
