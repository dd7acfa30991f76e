//! tests/net/server.py from a Rust test: the HTTPS and HTTP servers of the
//! domain policy's tests, on 127.0.0.2, and what those tests share. Each
//! test crate includes this file (`#[path = ".../tests/net/servers.rs"]
//! mod net;`) and uses what it needs of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The servers, stopped when dropped.
pub struct Servers {
    child: Child,
    pub https: u16,
    pub http: u16,
    /// Where the certificate (`cert.pem`) and the served files (`www/`) are.
    pub dir: PathBuf,
}

impl Servers {
    /// Starts the servers with their files in `dir` (made if missing).
    pub fn start(dir: &Path) -> Servers {
        let mut child = Command::new("python3")
            .arg(script())
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs tests/net/server.py");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut port = |kind: &str| {
            let line = lines.next().unwrap().unwrap();
            let (k, p) = line.split_once(' ').unwrap();
            assert_eq!(k, kind);
            p.parse().unwrap()
        };
        let (https, http) = (port("https"), port("http"));
        Servers {
            child,
            https,
            http,
            dir: dir.to_path_buf(),
        }
    }

    pub fn cert(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }

    /// curl with `args`, trusting the servers' certificate.
    pub fn curl(&self, args: &str) -> String {
        format!(
            "curl -sS --max-time 10 --cacert {} {args}",
            self.cert().display()
        )
    }

    /// curl of `https://<name>:<port>/`, which answers `hello from <name>`.
    pub fn curl_https(&self, name: &str) -> String {
        self.curl(&format!("https://{name}:{}/", self.https))
    }

    /// `<name>:<https port>`, as a violation names it.
    pub fn target(&self, name: &str) -> String {
        format!("{name}:{}", self.https)
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The line a refused connection to `target` adds to the output.
pub fn blocked(target: &str) -> String {
    format!("[sandbox] blocked: {target} is not in the allowed domains")
}

/// Whether this kernel can give a domain policy (Landlock's TCP port
/// rules); says so when it cannot.
pub fn landlock_ports() -> bool {
    #[cfg(target_os = "linux")]
    let ok = conch_core::process::sandbox::landlock_abi() >= 4;
    #[cfg(not(target_os = "linux"))]
    let ok = false;
    if !ok {
        eprintln!("Landlock ABI < 4: no TCP port rules, so no domain policy; skipped");
    }
    ok
}

/// tests/net/server.py, found above the test crate's directory.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|dir| dir.join("tests/net/server.py"))
        .find(|path| path.exists())
        .expect("tests/net/server.py above the crate")
}
