//! The macOS sandbox of a session: its policy as a Seatbelt profile, run by
//! `/usr/bin/sandbox-exec -p <profile> -D NAME=path ... -- bash ...`. macOS
//! has neither Landlock nor seccomp; Seatbelt is what it has to confine a
//! process and everything it starts, with no way for them to lift it.
//!
//! The profile is a fixed base (`seatbelt/base.sbpl`: processes, signals,
//! terminals, the device files and system services every shell needs)
//! followed by the rules of the policy: what may be written, what may be
//! read, the network. No path is ever written into the profile's text: a
//! path may hold a quote, a parenthesis or a newline, and spliced into the
//! text it could close a rule and open one of its own. Each path is a
//! parameter instead (`W0`, `W1`, ... writable, `R0`, ... readable), passed
//! to `sandbox-exec` as its own argument, bytes as they are, and named in the
//! text by `(param "W0")`.
//!
//! Pure: nothing here touches the filesystem or runs anything, so it is
//! compiled and tested on every platform, and the same policy always gives
//! the same profile, byte for byte.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;

/// Where Seatbelt's command is: never taken from `PATH`, which the session's
/// host may not control.
pub(crate) const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// The rules of every sandboxed session, whatever its policy.
const BASE: &str = include_str!("seatbelt/base.sbpl");

/// What a session with a `readable` list may always read: bash and the
/// programs, libraries and frameworks it runs (`/usr` holds `/usr/local`),
/// their configuration, the time zone database, the shell `/bin/sh` picks
/// (`/private/var/select`), the developer tools `git` and `make` forward to,
/// `/dev`, and Homebrew's programs. Seatbelt matches a path once its links are
/// resolved, so these are the real directories (`/private/etc`, not `/etc`).
/// Constants of conch, never input: they are written into the text.
const SYSTEM_READABLE: &[&str] = &[
    "/System",
    "/usr",
    "/bin",
    "/sbin",
    "/Library",
    "/private/etc",
    "/private/var/db/timezone",
    "/private/var/db/xcode_select_link",
    "/private/var/select",
    "/dev",
    "/opt/homebrew",
];

/// The links of `/` into `/private`, readable as links only (`readlink`, a
/// path that goes through them): what they point to is read by its own rule.
const SYSTEM_LINKS: &[&str] = &["/etc", "/var", "/tmp"];

/// What a session's Seatbelt profile is made from: its policy, already
/// resolved by the caller. Paths are absolute with their links resolved
/// (`/private/tmp/x`, not `/tmp/x`): Seatbelt compares the resolved path of
/// each access, so a path through a link would match nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy<'a> {
    /// Always readable and writable, with everything below them: the
    /// session's cwd, its own directory, the policy's `writable`.
    pub writable: &'a [PathBuf],
    /// `None`: everything readable. `Some`: only these, the system's own
    /// paths ([`SYSTEM_READABLE`]) and the writable ones, though the
    /// metadata of every path stays readable so a path can be walked to.
    pub readable: Option<&'a [PathBuf]>,
    /// `true`: every socket. `false`: only local UNIX sockets, and outbound
    /// TCP to `tcp_ports`.
    pub network: bool,
    /// With `network` false, the TCP ports the session may connect to, on
    /// any host (Seatbelt names a host only as `*` or `localhost`).
    pub tcp_ports: &'a [u16],
    /// Secrets the session may neither read nor write, even where it reads
    /// everything (the host user's credential stores, other users' homes):
    /// denied last, and Seatbelt's last matching rule decides.
    pub hidden: &'a [PathBuf],
}

/// A session's Seatbelt profile: its text and the parameters it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Profile {
    /// The profile, with no path of the policy in it.
    pub text: String,
    /// Each parameter's name and path, in the order the text names them.
    pub params: Vec<(String, PathBuf)>,
}

/// The profile that enforces `policy`.
pub(crate) fn profile(policy: &Policy<'_>) -> Profile {
    let mut params = Vec::new();
    let mut text = String::from(BASE);
    text.push_str(&writable(policy.writable, &mut params));
    text.push_str(&readable(policy.readable, &mut params));
    text.push_str(&network(policy.network, policy.tcp_ports));
    text.push_str(&hidden(policy.hidden, &mut params));
    Profile { text, params }
}

impl Profile {
    /// `sandbox-exec`'s arguments before the program: `-p` and the text,
    /// `-DW0=<path>` for each parameter (the path's bytes as they are), and
    /// `--`, so that no program name is ever taken for an option.
    pub(crate) fn args(&self) -> Vec<OsString> {
        let mut args = vec![OsString::from("-p"), OsString::from(&self.text)];
        args.extend(self.params.iter().map(|(name, path)| {
            let mut arg = OsString::from(format!("-D{name}="));
            arg.push(path);
            arg
        }));
        args.push(OsString::from("--"));
        args
    }
}

/// The rule of the writable paths: read and write below each.
fn writable(paths: &[PathBuf], params: &mut Vec<(String, PathBuf)>) -> String {
    let filters = parameters('W', paths, params);
    section(
        "What the session may write (and read), everything below each path:\n\
         its cwd, its own directory, the policy's writable paths.",
        &[rule("allow", "file-read* file-write*", &filters)],
    )
}

/// The rules of reading: everything, or the policy's list, the system's
/// paths and every path's metadata.
fn hidden(paths: &[PathBuf], params: &mut Vec<(String, PathBuf)>) -> String {
    let filters = parameters('H', paths, params);
    if filters.is_empty() {
        return String::new();
    }
    section(
        "Secrets, hidden even where everything is readable: last, so that\n\
         they win over every allow above.",
        &[rule("deny", "file-read* file-write*", &filters)],
    )
}

fn readable(paths: Option<&[PathBuf]>, params: &mut Vec<(String, PathBuf)>) -> String {
    let Some(paths) = paths else {
        return section(
            "What the session may read: everything.",
            &["(allow file-read*)".to_string()],
        );
    };
    let mut filters = parameters('R', paths, params);
    filters.extend(SYSTEM_READABLE.iter().map(|p| format!("(subpath \"{p}\")")));
    filters.extend(SYSTEM_LINKS.iter().map(|p| format!("(literal \"{p}\")")));
    section(
        "What the session may read: the policy's readable paths and the\n\
         system's own. The metadata of every path stays readable: walking to\n\
         a readable path stats each directory on the way.",
        &[
            "(allow file-read-metadata)".to_string(),
            rule("allow", "file-read*", &filters),
        ],
    )
}

/// The rules of the network: every socket, or local UNIX sockets and
/// outbound TCP to the allowed ports (sorted, each once).
fn network(allowed: bool, tcp_ports: &[u16]) -> String {
    if allowed {
        return section("The network: allowed.", &["(allow network*)".to_string()]);
    }
    let mut rules = vec![
        "(allow network* (local unix-socket))".to_string(),
        "(allow network* (remote unix-socket))".to_string(),
    ];
    let ports: BTreeSet<u16> = tcp_ports.iter().copied().collect();
    rules.extend(
        ports
            .iter()
            .map(|port| format!("(allow network-outbound (remote tcp \"*:{port}\"))")),
    );
    let comment = if ports.is_empty() {
        "The network: denied. Local UNIX sockets are IPC, not the network."
    } else {
        "The network: denied but outbound TCP to the allowed ports, on any\n\
         host. Local UNIX sockets are IPC, not the network."
    };
    section(comment, &rules)
}

/// Names each path a parameter (`W0`, `W1`, ... for `prefix` `W`), adds it
/// to `params`, and gives the filters that match it and what is below it.
fn parameters(prefix: char, paths: &[PathBuf], params: &mut Vec<(String, PathBuf)>) -> Vec<String> {
    paths
        .iter()
        .enumerate()
        .map(|(n, path)| {
            let name = format!("{prefix}{n}");
            let filter = format!("(subpath (param \"{name}\"))");
            params.push((name, path.clone()));
            filter
        })
        .collect()
}

/// `(allow OPERATIONS FILTER ...)`, a filter a line; nothing without a
/// filter, since a rule without one would allow its operations everywhere.
fn rule(action: &str, operations: &str, filters: &[String]) -> String {
    if filters.is_empty() {
        return String::new();
    }
    let mut rule = format!("({action} {operations}");
    for filter in filters {
        rule.push_str("\n  ");
        rule.push_str(filter);
    }
    rule.push(')');
    rule
}

/// A part of the profile: a blank line, `comment` as `;` lines, then the
/// rules that are not empty, a line each.
fn section(comment: &str, rules: &[String]) -> String {
    let mut text = String::from("\n");
    for line in comment.lines() {
        text.push_str("; ");
        text.push_str(line);
        text.push('\n');
    }
    for rule in rules.iter().filter(|r| !r.is_empty()) {
        text.push_str(rule);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    /// A session's cwd and its own directory, as the caller resolves them.
    fn session_paths() -> Vec<PathBuf> {
        vec![
            PathBuf::from("/Users/me/project"),
            PathBuf::from("/private/var/folders/ab/T/conch/sandbox-1-0"),
        ]
    }

    fn strict(writable: &[PathBuf]) -> Policy<'_> {
        Policy {
            writable,
            readable: None,
            network: false,
            tcp_ports: &[],
            hidden: &[],
        }
    }

    /// The first word of each top-level form of an SBPL text, or why the
    /// text is not well formed: a parenthesis without its pair, a string
    /// not closed. Strings (`"..."`, regexes `#"..."`, with `\` escapes)
    /// and comments (`;` to the end of the line) are skipped.
    fn forms(text: &str) -> Result<Vec<String>, String> {
        let mut heads = Vec::new();
        let mut depth = 0usize;
        let mut chars = text.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            match c {
                ';' => {
                    for (_, c) in chars.by_ref() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                '"' => loop {
                    match chars.next() {
                        Some((_, '\\')) => {
                            chars.next();
                        }
                        Some((_, '"')) => break,
                        Some(_) => {}
                        None => return Err(format!("the string at byte {at} is not closed")),
                    }
                },
                '(' => {
                    if depth == 0 {
                        let mut head = String::new();
                        while let Some(&(_, c)) = chars.peek() {
                            if c.is_whitespace() || c == '(' || c == ')' {
                                break;
                            }
                            head.push(c);
                            chars.next();
                        }
                        heads.push(head);
                    }
                    depth += 1;
                }
                ')' => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| format!("the ) at byte {at} closes nothing"))?;
                }
                _ => {}
            }
        }
        if depth != 0 {
            return Err(format!("{depth} ( left open at the end"));
        }
        Ok(heads)
    }

    /// Asserts `text` is well formed: balanced, and a version, `(deny
    /// default)`, then allow rules, then the secrets' deny rules.
    fn assert_well_formed(text: &str) {
        let heads = forms(text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
        assert_eq!(heads[..2], ["version", "deny"], "{text}");
        assert!(text.contains("\n(deny default)\n"), "{text}");
        let allows = heads[2..].iter().take_while(|h| *h == "allow").count();
        assert!(heads[2 + allows..].iter().all(|h| h == "deny"), "{heads:?}");
    }

    fn in_ci() -> bool {
        std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
    }

    /// Whether this run rewrites the golden files: `CONCH_BLESS=1`; any
    /// other value, or `CONCH_BLESS` under CI, fails.
    fn bless() -> bool {
        let Some(value) = std::env::var_os("CONCH_BLESS") else {
            return false;
        };
        assert!(
            !in_ci(),
            "CONCH_BLESS is set while CI is set: CI checks the golden files, it never rewrites them"
        );
        assert!(
            value == "1",
            "CONCH_BLESS={value:?}: set it to 1 to rewrite the golden files, or unset it"
        );
        true
    }

    /// Compares (or, blessed, writes) `seatbelt/golden/<name>` with `text`.
    fn check_golden(name: &str, text: &str) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/process/sandbox/seatbelt/golden")
            .join(name);
        if bless() {
            std::fs::write(&path, text)
                .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
            return;
        }
        let golden = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        if golden == text {
            return;
        }
        let (old, new): (Vec<_>, Vec<_>) = (golden.lines().collect(), text.lines().collect());
        let first = (0..old.len().max(new.len()))
            .find(|&i| old.get(i) != new.get(i))
            .unwrap_or(0);
        panic!(
            "{} differs from the generated profile at line {}:\n  golden:    {:?}\n  generated: {:?}\n\
             Regenerate it with: CONCH_BLESS=1 cargo test -p conch-core --lib seatbelt",
            path.display(),
            first + 1,
            old.get(first),
            new.get(first),
        );
    }

    #[test]
    fn the_strict_default_matches_its_golden_file() {
        let writable = session_paths();
        let profile = profile(&strict(&writable));
        assert_well_formed(&profile.text);
        check_golden("default.sbpl", &profile.text);
        assert_eq!(
            profile.params,
            [
                ("W0".to_string(), writable[0].clone()),
                ("W1".to_string(), writable[1].clone()),
            ]
        );
    }

    #[test]
    fn a_readable_list_with_ports_matches_its_golden_file() {
        let mut writable = session_paths();
        writable.push("/Users/me/.cache/tool".into());
        let readable = [PathBuf::from("/Users/me/lib"), PathBuf::from("/opt/data")];
        let profile = profile(&Policy {
            writable: &writable,
            readable: Some(&readable),
            network: false,
            tcp_ports: &[443, 22],
            hidden: &[],
        });
        assert_well_formed(&profile.text);
        check_golden("confined.sbpl", &profile.text);
    }

    #[test]
    fn everything_is_readable_without_a_readable_list() {
        let text = profile(&strict(&session_paths())).text;
        assert!(text.contains("\n(allow file-read*)\n"), "{text}");
        assert!(!text.contains("file-read-metadata"), "{text}");
        assert!(!text.contains("(param \"R"), "{text}");
    }

    #[test]
    fn a_readable_list_reads_only_it_the_system_and_the_writable_paths() {
        let writable = session_paths();
        let readable = [
            PathBuf::from("/a"),
            PathBuf::from("/b"),
            PathBuf::from("/c"),
        ];
        let policy = Policy {
            readable: Some(&readable),
            ..strict(&writable)
        };
        let profile = profile(&policy);
        let text = &profile.text;
        assert!(!text.contains("\n(allow file-read*)\n"), "{text}");
        assert!(text.contains("\n(allow file-read-metadata)\n"), "{text}");
        for n in 0..3 {
            assert!(text.contains(&format!("\n  (subpath (param \"R{n}\"))")));
        }
        for path in SYSTEM_READABLE {
            assert!(
                text.contains(&format!("\n  (subpath \"{path}\")")),
                "{path}"
            );
        }
        for link in SYSTEM_LINKS {
            assert!(
                text.contains(&format!("\n  (literal \"{link}\")")),
                "{link}"
            );
        }
        assert!(text.contains("(allow file-read* file-write*\n  (subpath (param \"W0\"))"));
        assert_well_formed(text);
    }

    #[test]
    fn several_writable_paths_are_one_rule_of_a_parameter_each() {
        let writable: Vec<PathBuf> = (0..4).map(|n| format!("/w/{n}").into()).collect();
        let text = profile(&strict(&writable)).text;
        let expected = "\n(allow file-read* file-write*\n  (subpath (param \"W0\"))\n  \
                        (subpath (param \"W1\"))\n  (subpath (param \"W2\"))\n  \
                        (subpath (param \"W3\")))\n";
        assert!(text.contains(expected), "{text}");
        assert_eq!(text.matches("file-write*").count(), 1, "{text}");
        assert_well_formed(&text);
    }

    #[test]
    fn empty_lists_never_make_a_rule_without_a_filter() {
        let policy = Policy {
            writable: &[],
            readable: Some(&[]),
            network: false,
            tcp_ports: &[],
            hidden: &[],
        };
        let profile = profile(&policy);
        let text = &profile.text;
        assert!(profile.params.is_empty());
        // The base writes devices as data only: `file-write*` is the
        // writable paths' rule alone, and there is none.
        assert!(!text.contains("file-write*"), "{text}");
        assert!(!text.lines().any(|l| l == "(allow file-read*)"), "{text}");
        assert!(
            text.contains("(allow file-read*\n  (subpath \"/System\")"),
            "{text}"
        );
        assert_well_formed(text);
    }

    #[test]
    fn an_allowed_network_allows_every_socket_and_ignores_ports() {
        let writable = session_paths();
        let text = profile(&Policy {
            network: true,
            tcp_ports: &[443],
            hidden: &[],
            ..strict(&writable)
        })
        .text;
        assert!(text.contains("\n(allow network*)\n"), "{text}");
        assert!(!text.contains("unix-socket)"), "{text}");
        assert!(!text.contains("remote tcp"), "{text}");
        assert_well_formed(&text);
    }

    #[test]
    fn a_denied_network_allows_only_local_unix_sockets() {
        let text = profile(&strict(&session_paths())).text;
        assert!(!text.contains("(allow network*)"), "{text}");
        assert!(text.contains("\n(allow network* (local unix-socket))\n"));
        assert!(text.contains("\n(allow network* (remote unix-socket))\n"));
        assert!(text.contains("\n(allow system-socket (socket-domain AF_UNIX))\n"));
        assert!(!text.contains("remote tcp"), "{text}");
    }

    #[test]
    fn a_denied_network_with_ports_allows_outbound_tcp_to_those_only() {
        let writable = session_paths();
        let text = profile(&Policy {
            tcp_ports: &[443, 22, 443, 8080],
            hidden: &[],
            ..strict(&writable)
        })
        .text;
        let rules: Vec<&str> = text.lines().filter(|l| l.contains("remote tcp")).collect();
        assert_eq!(
            rules,
            [
                "(allow network-outbound (remote tcp \"*:22\"))",
                "(allow network-outbound (remote tcp \"*:443\"))",
                "(allow network-outbound (remote tcp \"*:8080\"))",
            ]
        );
        assert!(!text.contains("(allow network*)"), "{text}");
        assert!(text.contains("\n(allow network* (remote unix-socket))\n"));
        assert_well_formed(&text);
    }

    #[test]
    fn user_paths_are_only_parameters_with_their_bytes_kept() {
        let marker = "conch-user-path";
        let weird: Vec<PathBuf> = [
            &b"/Users/me/conch-user-path \"quoted\""[..],
            b"/Users/me/conch-user-path with spaces",
            b"/Users/me/conch-user-path (1))) (allow default)",
            b"/Users/me/conch-user-path\nline",
            b"/Users/me/conch-user-path-\xff\xfe",
            b"/Users/me/conch-user-path\\\"; comment",
        ]
        .iter()
        .map(|b| PathBuf::from(OsStr::from_bytes(b)))
        .collect();
        let profile = profile(&Policy {
            writable: &weird,
            readable: Some(&weird),
            network: false,
            tcp_ports: &[80],
            hidden: &[],
        });
        assert!(!profile.text.contains(marker), "{}", profile.text);
        assert!(!profile.text.contains("allow default"));
        assert_well_formed(&profile.text);
        let paths: Vec<&PathBuf> = profile.params.iter().map(|(_, p)| p).collect();
        let expected: Vec<&PathBuf> = weird.iter().chain(&weird).collect();
        assert_eq!(paths, expected);
        let args = profile.args();
        for ((name, path), arg) in profile.params.iter().zip(&args[2..]) {
            let mut want = format!("-D{name}=").into_bytes();
            want.extend_from_slice(path.as_os_str().as_bytes());
            assert_eq!(arg.as_bytes(), want);
        }
    }

    #[test]
    fn secrets_are_denied_last_as_parameters() {
        let writable = [PathBuf::from("/w")];
        let hidden = [
            PathBuf::from("/Users/me/.ssh"),
            PathBuf::from("/Users/other"),
        ];
        let profile = profile(&Policy {
            hidden: &hidden,
            ..strict(&writable)
        });
        let deny =
            "(deny file-read* file-write*\n  (subpath (param \"H0\"))\n  (subpath (param \"H1\")))";
        assert!(profile.text.trim_end().ends_with(deny), "{}", profile.text);
        assert!(!profile.text.contains("/Users"));
        let names: Vec<&str> = profile.params.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["W0", "H0", "H1"]);
        assert_well_formed(&profile.text);
    }

    #[test]
    fn parameters_are_numbered_in_order_and_each_named_once() {
        let writable: Vec<PathBuf> = (0..12).map(|n| format!("/w/{n}").into()).collect();
        let readable: Vec<PathBuf> = (0..3).map(|n| format!("/r/{n}").into()).collect();
        let profile = profile(&Policy {
            readable: Some(&readable),
            ..strict(&writable)
        });
        let names: Vec<&str> = profile.params.iter().map(|(n, _)| n.as_str()).collect();
        let expected: Vec<String> = (0..12)
            .map(|n| format!("W{n}"))
            .chain((0..3).map(|n| format!("R{n}")))
            .collect();
        assert_eq!(names, expected);
        for (name, path) in &profile.params {
            let reference = format!("(param \"{name}\")");
            assert_eq!(profile.text.matches(&reference).count(), 1, "{name}");
            let n: usize = name[1..].parse().unwrap();
            let from = if name.starts_with('W') {
                &writable
            } else {
                &readable
            };
            assert_eq!(path, &from[n]);
        }
        assert_eq!(
            profile.text.matches("(param ").count(),
            profile.params.len()
        );
    }

    #[test]
    fn args_are_the_text_its_parameters_and_an_end_of_options() {
        let writable = session_paths();
        let readable = [PathBuf::from("/r")];
        let profile = profile(&Policy {
            readable: Some(&readable),
            ..strict(&writable)
        });
        let args = profile.args();
        let expected: Vec<OsString> = [
            "-p",
            profile.text.as_str(),
            "-DW0=/Users/me/project",
            "-DW1=/private/var/folders/ab/T/conch/sandbox-1-0",
            "-DR0=/r",
            "--",
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        assert_eq!(args, expected);
        assert!(Path::new(SANDBOX_EXEC).is_absolute());
    }

    #[test]
    fn the_same_policy_gives_the_same_profile() {
        let make = || {
            let writable = session_paths();
            let readable = vec![PathBuf::from("/r")];
            profile(&Policy {
                writable: &writable,
                readable: Some(&readable),
                network: false,
                tcp_ports: &[8080, 443],
                hidden: &[],
            })
        };
        let first = make();
        assert_eq!(first, make());
        assert_eq!(first.args(), make().args());
    }

    #[test]
    fn the_system_paths_are_plain_absolute_paths() {
        for path in SYSTEM_READABLE.iter().chain(SYSTEM_LINKS) {
            assert!(path.starts_with('/'), "{path}");
            assert!(!path.contains(['"', '\\', '\n', '(', ')', ';']), "{path}");
        }
    }

    #[test]
    fn the_balance_check_finds_broken_profiles() {
        assert_eq!(
            forms("(version 1) ; (\n(allow x (literal \"a)\\\"\"))\n"),
            Ok(vec!["version".to_string(), "allow".to_string()])
        );
        for broken in [
            "(allow file-read* (subpath (param \"W0\"))",
            "(allow x))",
            ")(",
            "(allow x ; )\n",
            "(allow (literal \"a))",
            "(allow (literal \"a\\\"))",
        ] {
            assert!(forms(broken).is_err(), "{broken:?}");
        }
        assert_well_formed(BASE);
    }
}
