//! The files a sandboxed session may not read even where it reads
//! everything: the system's password hashes, the machine's SSH keys, the
//! homes of the other users (and root's), and the credential stores of the
//! host's own home. A model that reads `/` must not read these: it would
//! print them into a transcript.
//!
//! And the control sockets of the machine's daemons: a command that talks
//! to Docker, containerd or systemd has them start whatever it asks,
//! outside the sandbox. Landlock does not restrict `connect` to a pathname
//! socket, so these are covered like the secrets (an empty file, which
//! refuses the connection).
//!
//! A path the policy names itself (in `readable` or `writable`) is not
//! hidden; one it names inside a hidden directory is put back in it (see
//! [`super::namespaces`], which covers what is hidden).

use std::path::{Path, PathBuf};

/// Files of `/etc` that hold password hashes.
const SYSTEM_FILES: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
];

/// The control sockets of the daemons that start processes on request:
/// container engines, systemd and the system bus (`/var/run` is `/run` on
/// most systems; both are named for the others).
const DAEMON_SOCKETS: &[&str] = &[
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/k3s/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/run/crio/crio.sock",
    "/run/buildkit/buildkitd.sock",
    "/run/snapd.socket",
    "/run/libvirt/libvirt-sock",
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
    "/run/systemd/private",
];

/// The same, of the host user's own daemons (under `/run/user/<uid>`).
const USER_DAEMON_SOCKETS: &[&str] = &[
    "bus",
    "systemd/private",
    "docker.sock",
    "podman/podman.sock",
];

/// Where the machine's SSH private keys are (`ssh_host_*_key`).
const SSH_DIR: &str = "/etc/ssh";

/// What in the host user's own home holds credentials.
const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".config/gcloud",
    ".netrc",
    ".git-credentials",
];

/// What is hidden, canonical and existing: directories and files.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Hidden {
    pub dirs: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
}

impl Hidden {
    /// The secrets of this system, but those `named` (paths the policy
    /// names itself). `home` is the host user's home: root's (`/root`) is
    /// hidden whole, another user's keeps all but its credential stores.
    pub fn of_system(home: Option<&Path>, named: &[PathBuf]) -> Hidden {
        let mut candidates: Vec<PathBuf> = SYSTEM_FILES.iter().map(PathBuf::from).collect();
        candidates.extend(DAEMON_SOCKETS.iter().map(PathBuf::from));
        // SAFETY: a getter with no argument.
        let runtime = PathBuf::from(format!("/run/user/{}", unsafe { libc::geteuid() }));
        candidates.extend(USER_DAEMON_SOCKETS.iter().map(|s| runtime.join(s)));
        if let Ok(entries) = std::fs::read_dir(SSH_DIR) {
            candidates.extend(entries.flatten().map(|e| e.path()).filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("ssh_host_") && n.ends_with("_key"))
            }));
        }
        let home = home.and_then(|h| h.canonicalize().ok());
        candidates.push("/root".into());
        if let Ok(entries) = std::fs::read_dir("/home") {
            candidates.extend(entries.flatten().map(|e| e.path()));
        }
        if let Some(home) = home.as_deref().filter(|h| *h != Path::new("/root")) {
            candidates.retain(|p| p.canonicalize().ok().as_deref() != Some(home));
            candidates.extend(HOME_SECRETS.iter().map(|s| home.join(s)));
        }
        Hidden::of_paths(candidates, named)
    }

    /// What of `candidates` exists, canonical, but those `named`:
    /// directories, and files of every other kind (a socket too).
    fn of_paths(candidates: Vec<PathBuf>, named: &[PathBuf]) -> Hidden {
        let named: Vec<PathBuf> = named.iter().filter_map(|p| p.canonicalize().ok()).collect();
        let mut hidden = Hidden::default();
        for path in candidates {
            let Ok(path) = path.canonicalize() else {
                continue;
            };
            if named.contains(&path) {
                continue;
            }
            let Ok(meta) = path.metadata() else { continue };
            if meta.is_dir() {
                hidden.dirs.push(path);
            } else {
                hidden.files.push(path);
            }
        }
        // A path inside a hidden directory is hidden with it.
        let dirs = hidden.dirs.clone();
        let inside = |p: &PathBuf| dirs.iter().any(|d| p != d && p.starts_with(d));
        hidden.dirs.retain(|p| !inside(p));
        hidden.files.retain(|p| !inside(p));
        hidden.dirs.sort();
        hidden.dirs.dedup();
        hidden.files.sort();
        hidden.files.dedup();
        hidden
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_and_the_password_hashes_are_hidden_unless_named() {
        let hidden = Hidden::of_system(None, &[]);
        if Path::new("/root").is_dir() {
            assert!(hidden.dirs.contains(&PathBuf::from("/root")), "{hidden:?}");
        }
        if Path::new("/etc/shadow").is_file() {
            assert!(hidden.files.contains(&PathBuf::from("/etc/shadow")));
        }
        let named = Hidden::of_system(None, &["/root".into(), "/etc/shadow".into()]);
        assert!(!named.dirs.contains(&PathBuf::from("/root")));
        assert!(!named.files.contains(&PathBuf::from("/etc/shadow")));
    }

    #[test]
    fn a_socket_is_hidden_as_a_file() {
        let dir = std::env::temp_dir().join(format!("conch-sockets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("docker.sock");
        let _ = std::fs::remove_file(&path);
        let _listening = std::os::unix::net::UnixListener::bind(&path).unwrap();
        // A socket is covered as a file is (an empty file refuses the
        // connection); one that is not there is left out.
        let gone = dir.join("podman.sock");
        let hidden = Hidden::of_paths(vec![path.clone(), gone], &[]);
        assert_eq!(hidden.files, vec![path.canonicalize().unwrap()]);
        assert!(hidden.dirs.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_users_own_home_keeps_all_but_its_credentials() {
        let home = std::env::temp_dir().join(format!("conch-home-{}", std::process::id()));
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let home = home.canonicalize().unwrap();
        std::fs::write(home.join(".netrc"), "machine x").unwrap();
        let hidden = Hidden::of_system(Some(&home), &[]);
        assert!(hidden.dirs.contains(&home.join(".ssh")));
        assert!(hidden.files.contains(&home.join(".netrc")));
        assert!(!hidden.dirs.contains(&home));
        std::fs::remove_dir_all(&home).unwrap();
    }
}
