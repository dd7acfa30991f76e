//! The network namespace of a domain-policy session, where the host may
//! make one (root): it has only a loopback interface, and the proxy's
//! listening socket is made inside it. Every process of the session
//! enters it ([`crate::process::sandbox::Confinement`]), so a command can
//! reach the proxy and nothing else at all: no other host, not even the
//! host's own loopback services. (Without it, the sandbox's port rule lets
//! commands connect to the proxy's port on any address.)

use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::{FromRawFd, OwnedFd};

/// The proxy's listener inside a fresh network namespace, and the
/// namespace (`/proc/thread-self/ns/net`) for children to enter.
pub(super) struct Isolated {
    pub listener: TcpListener,
    pub netns: OwnedFd,
}

/// Makes the namespace on a thread of its own (`unshare` moves only the
/// calling thread, which ends with the work done: the listener and the
/// descriptor keep the namespace alive). Fails without `CAP_SYS_ADMIN`.
pub(super) fn listen_in_new_namespace() -> io::Result<Isolated> {
    std::thread::Builder::new()
        .name("conch-netns".into())
        .spawn(|| {
            // SAFETY: plain system calls; `unshare` changes only this
            // thread's network namespace, and the thread ends here.
            let netns = unsafe {
                if libc::unshare(libc::CLONE_NEWNET) < 0 {
                    return Err(io::Error::last_os_error());
                }
                let fd = libc::open(
                    c"/proc/thread-self/ns/net".as_ptr(),
                    libc::O_RDONLY | libc::O_CLOEXEC,
                );
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                OwnedFd::from_raw_fd(fd)
            };
            loopback_up()?;
            let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
            Ok(Isolated { listener, netns })
        })?
        .join()
        .map_err(|_| io::Error::other("the namespace's thread panicked"))?
}

/// `ip link set lo up`: a new namespace's loopback starts down.
fn loopback_up() -> io::Result<()> {
    // SAFETY: an ioctl on a socket of our own with a zeroed, named ifreq.
    unsafe {
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        let mut result = libc::ioctl(socket, libc::SIOCGIFFLAGS, &mut request);
        if result == 0 {
            request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            result = libc::ioctl(socket, libc::SIOCSIFFLAGS, &request);
        }
        let error = io::Error::last_os_error();
        libc::close(socket);
        if result < 0 { Err(error) } else { Ok(()) }
    }
}
