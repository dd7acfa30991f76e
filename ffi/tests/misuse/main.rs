//! The C ABI under random misuse: every `extern "C"` function called with
//! proptest-made arguments (NULL pointers, bytes that are not UTF-8, huge
//! strings, numbers at and past every bound, NULL out pointers, fields of
//! every option struct). Whatever the arguments, a call returns a status
//! code it documents (never `CONCH_ERR_PANIC`) with a non-empty
//! `conch_last_error()` on failure and `""` on success, or a valid result
//! (UTF-8 strings, the fields it promises); callbacks get NUL-terminated
//! UTF-8. A crash ends this binary, and a watchdog ends it if a call hangs.
//!
//! Commands stay trivial whatever the case (`true`, `echo ok`, random bytes
//! only in a comment), and random paths are one component (no `/`), so a
//! case can touch nothing but the scratch directory. Handles are only
//! freed with their `_free`, once, and never used after.
//!
//! Here: the checks every case makes and the strategies the modules share.
//! The cases: `strings_and_stores`, `shells` (runs, the tool, PTYs) and
//! `jobs`.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::PathBuf;
use std::ptr;
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use conch::artifact::*;
use conch::cancel::*;
use conch::command::*;
use conch::execute::*;
use conch::jobs::*;
use conch::pty::*;
use conch::result::*;
use conch::sandbox::*;
use conch::sessions::*;
use conch::shell::*;
use conch::strings::*;
use conch::tool::*;
use conch::{conch_env_policy, conch_status};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

mod jobs;
mod shells;
mod strings_and_stores;

type Case = Result<(), TestCaseError>;

/// Ends the whole binary when the suite outlives any plausible run: a call
/// that hangs would otherwise stall the test run forever.
fn watchdog() {
    static START: Once = Once::new();
    START.call_once(|| {
        std::thread::spawn(|| {
            std::thread::sleep(Duration::from_secs(300));
            eprintln!("the C ABI misuse suite hung (a call did not return within 300 s)");
            std::process::exit(1);
        });
    });
}

fn scratch() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "conch-ffi-misuse-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn last_error() -> String {
    // SAFETY: conch_last_error never returns NULL.
    unsafe { CStr::from_ptr(conch_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// A status a function documents, and the last error that goes with it.
fn check_status(rc: c_int, what: &str) -> Case {
    prop_assert_ne!(
        rc,
        conch_status::CONCH_ERR_PANIC as c_int,
        "{}: panicked: {}",
        what,
        last_error()
    );
    prop_assert!((-12..=0).contains(&rc), "{what}: unknown status {rc}");
    if rc == 0 {
        prop_assert_eq!(last_error(), "", "{}: a success clears the error", what);
    } else {
        prop_assert!(
            !last_error().is_empty(),
            "{what}: status {rc} without a message"
        );
    }
    Ok(())
}

/// A pointer result: NULL with a message, or non-NULL with none.
fn check_pointer<T>(p: *const T, what: &str) -> Case {
    let rc = if p.is_null() {
        conch_status::CONCH_ERR_INVALID_ARG as c_int
    } else {
        0
    };
    prop_assert!(
        !last_error().contains("(panic)"),
        "{what}: panicked: {}",
        last_error()
    );
    check_status(rc, what)
}

/// A string conch returned: UTF-8, or NULL when `nullable`.
fn check_text(p: *const c_char, nullable: bool, what: &str) -> Case {
    if p.is_null() {
        prop_assert!(nullable, "{what} is NULL");
        return Ok(());
    }
    // SAFETY: a string conch returned is a valid C string.
    let text = unsafe { CStr::from_ptr(p) };
    prop_assert!(text.to_str().is_ok(), "{what} is not UTF-8: {text:?}");
    Ok(())
}

/// Keeps the C strings of one case alive while conch reads them.
#[derive(Default)]
struct Arena {
    strings: Vec<CString>,
    lists: Vec<Vec<*const c_char>>,
}

impl Arena {
    fn text(&mut self, text: &Option<Vec<u8>>) -> *const c_char {
        match text {
            None => ptr::null(),
            Some(bytes) => {
                let s = CString::new(bytes.clone()).expect("strategies make no NUL");
                let p = s.as_ptr();
                self.strings.push(s);
                p
            }
        }
    }

    /// A NULL-terminated list (NULL itself when `None`).
    fn list(&mut self, items: &Option<Vec<Vec<u8>>>) -> *const *const c_char {
        let Some(items) = items else {
            return ptr::null();
        };
        let mut list: Vec<*const c_char> =
            items.iter().map(|i| self.text(&Some(i.clone()))).collect();
        list.push(ptr::null());
        let p = list.as_ptr();
        self.lists.push(list);
        p
    }
}

/// Bytes for a string: never NUL, never `/`; often not UTF-8; sometimes
/// huge.
fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(
            any::<u8>().prop_filter("no NUL or /", |b| *b != 0 && *b != b'/'),
            0..16,
        ),
        4 => "[a-zA-Z0-9._=*-]{0,12}".prop_map(String::into_bytes),
        1 => (64usize * 1024..1024 * 1024).prop_map(|n| vec![b'a'; n]),
    ]
}

fn text() -> impl Strategy<Value = Option<Vec<u8>>> {
    proptest::option::weighted(0.8, bytes())
}

/// One of `choices` (as given) or a random text.
fn text_or(choices: &'static [&'static str]) -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        2 => proptest::sample::select(choices).prop_map(|s| Some(s.as_bytes().to_vec())),
        1 => text(),
    ]
}

fn list() -> impl Strategy<Value = Option<Vec<Vec<u8>>>> {
    proptest::option::of(proptest::collection::vec(
        prop_oneof![
            bytes(),
            "[A-Z_]{1,6}=[a-z]{0,4}".prop_map(String::into_bytes)
        ],
        0..4,
    ))
}

/// A trivial command, as bytes (random ones only in a comment).
fn command() -> impl Strategy<Value = Option<Vec<u8>>> {
    let comment = proptest::collection::vec(
        any::<u8>().prop_filter("one line", |b| *b != 0 && *b != b'\n'),
        0..24,
    );
    proptest::option::weighted(
        0.9,
        prop_oneof![
            Just(b"true".to_vec()),
            Just(b"echo ok".to_vec()),
            Just(b"exit 3".to_vec()),
            Just(b"seq 1 3000".to_vec()),
            comment.prop_map(|c| [b"echo ok # ".as_slice(), &c].concat()),
            "[ -~]{0,24}".prop_map(|c| format!("echo ok # {c}").into_bytes()),
        ],
    )
}

/// Mostly `valid`, sometimes anything `other` makes: a case with every
/// field random would almost never get past the first check.
fn mostly<T: std::fmt::Debug + Clone + 'static>(
    valid: impl Strategy<Value = T> + 'static,
    other: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<T> {
    prop_oneof![6 => valid, 1 => other].boxed()
}

fn u64_edge() -> impl Strategy<Value = u64> {
    prop_oneof![
        proptest::sample::select(vec![
            0,
            1,
            50,
            5_000,
            2_147_483_647,
            2_147_483_648,
            1 << 53,
            i64::MAX as u64,
            u64::MAX
        ]),
        any::<u64>(),
    ]
}

fn usize_edge() -> impl Strategy<Value = usize> {
    prop_oneof![
        proptest::sample::select(vec![0, 1, 2, 1000, i64::MAX as usize, usize::MAX]),
        any::<usize>(),
    ]
}

fn i64_edge() -> impl Strategy<Value = i64> {
    prop_oneof![
        proptest::sample::select(vec![-1, 0, 1, 2, i64::MIN, i64::MAX]),
        any::<i64>(),
    ]
}

/// Receives chunks: each must be `len` bytes of UTF-8 followed by a NUL.
/// `user` counts the bad ones.
unsafe extern "C" fn check_chunk(user: *mut c_void, utf8: *const c_char, len: usize) {
    // SAFETY: the tests pass a live `AtomicUsize` as `user`.
    let bad = unsafe { &*user.cast::<AtomicUsize>() };
    let ok = !utf8.is_null() && {
        // SAFETY: conch passes `len` bytes plus a NUL.
        let bytes = unsafe { std::slice::from_raw_parts(utf8.cast::<u8>(), len + 1) };
        bytes[len] == 0 && std::str::from_utf8(&bytes[..len]).is_ok()
    };
    if !ok {
        bad.fetch_add(1, Ordering::SeqCst);
    }
}

fn check_bash_result(r: *mut conch_bash_result, what: &str) -> Case {
    prop_assert!(!r.is_null(), "{what}: CONCH_OK without a result");
    // SAFETY: conch returned it on success.
    let r = unsafe { &*r };
    check_text(r.output, false, &format!("{what}: output"))?;
    check_text(r.artifact_id, true, &format!("{what}: artifact_id"))?;
    check_text(r.working_dir, true, &format!("{what}: working_dir"))?;
    prop_assert_eq!(
        r.sandbox_violations.is_null(),
        r.sandbox_violations_count == 0
    );
    for i in 0..r.sandbox_violations_count {
        // SAFETY: `count` strings, then the NULL terminator.
        check_text(unsafe { *r.sandbox_violations.add(i) }, false, what)?;
    }
    if r.sandbox_violations_count > 0 {
        // SAFETY: as above.
        let end = unsafe { *r.sandbox_violations.add(r.sandbox_violations_count) };
        prop_assert!(end.is_null(), "{what}: the violations end with NULL");
    }
    prop_assert!(r.output_bytes <= r.total_bytes || r.truncated || r.cancelled);
    Ok(())
}

/// A `conch_sandbox`, its fields at their edges: a network out of the
/// enum's range, port 0, ports NULL with a count, limits of every size,
/// domain lists of any bytes (with any network).
#[derive(Debug, Clone)]
struct SandboxFuzz {
    writable: Option<Vec<Vec<u8>>>,
    readable: Option<Vec<Vec<u8>>>,
    network: i32,
    ports: Vec<u16>,
    null_ports: bool,
    limits: [u64; 6],
    best_effort: bool,
    /// allow, deny, resolve.
    domains: [Option<Vec<Vec<u8>>>; 3],
}

fn sandbox_fuzz() -> impl Strategy<Value = SandboxFuzz> {
    (
        list(),
        list(),
        prop_oneof![4 => 0..3i32, 1 => any::<i32>()],
        proptest::collection::vec(any::<u16>(), 0..3),
        proptest::bool::weighted(0.1),
        proptest::array::uniform6(mostly(Just(0), u64_edge())),
        any::<bool>(),
        [list(), list(), list()],
    )
        .prop_map(
            |(writable, readable, network, ports, null_ports, limits, best_effort, domains)| {
                SandboxFuzz {
                    writable,
                    readable,
                    network,
                    ports,
                    null_ports,
                    limits,
                    best_effort,
                    domains,
                }
            },
        )
}

impl SandboxFuzz {
    /// The C struct; its pointers live as long as `arena` and `self`.
    fn to_c(&self, arena: &mut Arena) -> conch_sandbox {
        let [
            cpu,
            memory,
            file_size,
            open_files,
            processes,
            session_memory,
        ] = self.limits;
        conch_sandbox {
            writable: arena.list(&self.writable),
            readable: arena.list(&self.readable),
            network: self.network,
            allow_tcp_ports: if self.null_ports {
                ptr::null()
            } else {
                self.ports.as_ptr()
            },
            allow_tcp_ports_count: if self.null_ports {
                self.ports.len() + 1
            } else {
                self.ports.len()
            },
            limits: conch_sandbox_limits {
                cpu_seconds: cpu,
                memory_bytes: memory,
                file_size_bytes: file_size,
                open_files,
                processes,
                session_memory_bytes: session_memory,
            },
            best_effort: self.best_effort,
            domains: self.domains_to_c(arena),
        }
    }

    fn domains_to_c(&self, arena: &mut Arena) -> conch_domain_policy {
        let [allow, deny, resolve] = &self.domains;
        conch_domain_policy {
            allow: arena.list(allow),
            deny: arena.list(deny),
            resolve: arena.list(resolve),
        }
    }
}

/// NULL, a fresh token, or a cancelled one (freed by the caller).
fn token(kind: u8) -> *mut conch_cancel_token {
    match kind {
        0 => ptr::null_mut(),
        _ => {
            let t = conch_cancel_token_new();
            if kind == 2 {
                // SAFETY: `t` is a live token.
                unsafe { conch_cancel_token_cancel(t) };
            }
            t
        }
    }
}
