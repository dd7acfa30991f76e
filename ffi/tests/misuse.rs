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

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn text_and_command_helpers(
        t in text(),
        data in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)),
        len in prop_oneof![Just(0usize), 1usize..8],
        head in i64_edge(),
        tail in i64_edge(),
        tools in list(),
        rules in prop_oneof![
            Just(None),
            text(),
            (bytes(), bytes(), text_or(&["", "i", "x", "iu"])).prop_map(|(p, t, f)| {
                let rule = serde_json::json!([{
                    "pattern": String::from_utf8_lossy(&p),
                    "tool": String::from_utf8_lossy(&t),
                    "message": "m",
                    "flags": f.map(|f| String::from_utf8_lossy(&f).into_owned()),
                }]);
                Some(rule.to_string().into_bytes())
            }),
        ],
        null_out in any::<bool>(),
    ) {
        watchdog();
        let mut arena = Arena::default();
        let tp = arena.text(&t);
        // SAFETY (whole block): every pointer is NULL or a live C string,
        // list or buffer of the stated length; results are freed once.
        unsafe {
            let s = conch_sanitize_text(tp);
            check_pointer(s, "conch_sanitize_text")?;
            check_text(s, true, "conch_sanitize_text")?;
            conch_string_free(s);

            let (dp, dlen) = match &data {
                None => (ptr::null(), len),
                Some(d) => (d.as_ptr(), d.len()),
            };
            let s = conch_sanitize_bytes(dp, dlen);
            check_pointer(s, "conch_sanitize_bytes")?;
            check_text(s, true, "conch_sanitize_bytes")?;
            conch_string_free(s);

            let (mut h, mut tl) = (0i64, 0i64);
            let (hp, tlp) = if null_out {
                (ptr::null_mut(), &mut tl as *mut i64)
            } else {
                (&mut h as *mut i64, &mut tl as *mut i64)
            };
            let s = conch_normalize_bash_command(tp, hp, tlp);
            check_pointer(s, "conch_normalize_bash_command")?;
            check_text(s, true, "conch_normalize_bash_command")?;
            if !s.is_null() {
                prop_assert!(h >= -1 && tl >= -1);
            }
            conch_string_free(s);

            let s = conch_apply_head_tail(tp, head, tail);
            check_pointer(s, "conch_apply_head_tail")?;
            check_text(s, true, "conch_apply_head_tail")?;
            conch_string_free(s);

            let mut hit: *mut conch_interception = ptr::null_mut();
            let out = if null_out { ptr::null_mut() } else { &mut hit as *mut _ };
            let rc = conch_check_bash_interception(tp, arena.list(&tools), arena.text(&rules), out);
            check_status(rc, "conch_check_bash_interception")?;
            if !hit.is_null() {
                check_text((*hit).message, false, "interception message")?;
                check_text((*hit).suggested_tool, false, "suggested_tool")?;
            }
            conch_interception_free(hit);

            let s = conch_default_interceptor_rules();
            check_pointer(s, "conch_default_interceptor_rules")?;
            conch_string_free(s);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn artifact_stores_and_cancel_tokens(
        dir in text(),
        kind in text_or(&["bash", "x.y", ""]),
        id in text_or(&["0", "1", "artifact://0", "999999999999999999999"]),
        offset in usize_edge(),
        limit in i64_edge(),
        null_out in any::<bool>(),
    ) {
        watchdog();
        let mut arena = Arena::default();
        let home = scratch();
        // SAFETY (whole block): as in `text_and_command_helpers`.
        unsafe {
            // A store over a random directory is made and freed, never
            // written to (the directory would be the test's cwd).
            let store = conch_artifact_store_new(arena.text(&dir));
            check_pointer(store, "conch_artifact_store_new (random dir)")?;
            conch_artifact_store_free(store);

            let home_c = arena.text(&Some(home.to_str().unwrap().as_bytes().to_vec()));
            let store = conch_artifact_store_new(home_c);
            check_pointer(store, "conch_artifact_store_new")?;
            let (mut id_out, mut path_out) = (ptr::null_mut(), ptr::null_mut());
            let id_ptr = if null_out { ptr::null_mut() } else { &mut id_out as *mut _ };
            let rc = conch_artifact_store_allocate(store, arena.text(&kind), id_ptr, &mut path_out);
            check_status(rc, "conch_artifact_store_allocate")?;
            check_text(id_out, rc != 0, "allocated id")?;
            check_text(path_out, rc != 0, "allocated path")?;
            conch_string_free(id_out);
            conch_string_free(path_out);
            let _ = std::fs::write(home.join("0.bash.log"), "a\nb\nc\n");

            let mut text_out = ptr::null_mut();
            let text_ptr = if null_out { ptr::null_mut() } else { &mut text_out as *mut _ };
            let rc = conch_artifact_store_read(store, arena.text(&id), offset, limit, text_ptr);
            check_status(rc, "conch_artifact_store_read")?;
            check_text(text_out, rc != 0, "read text")?;
            conch_string_free(text_out);
            text_out = ptr::null_mut();
            let rc = conch_artifact_store_resolve(store, arena.text(&id), text_ptr);
            check_status(rc, "conch_artifact_store_resolve")?;
            check_text(text_out, rc != 0, "resolved text")?;
            conch_string_free(text_out);
            check_status(
                conch_artifact_store_read(ptr::null(), arena.text(&id), offset, limit, text_ptr),
                "conch_artifact_store_read(NULL)",
            )?;
            conch_artifact_store_free(store);

            let token = conch_cancel_token_new();
            check_pointer(token, "conch_cancel_token_new")?;
            let mut cancelled = false;
            let out = if null_out { ptr::null_mut() } else { &mut cancelled as *mut bool };
            check_status(conch_cancel_token_is_cancelled(token, out), "is_cancelled")?;
            check_status(conch_cancel_token_cancel(token), "cancel")?;
            check_status(conch_cancel_token_cancel(ptr::null()), "cancel(NULL)")?;
            conch_cancel_token_free(token);
        }
        let _ = std::fs::remove_dir_all(home);
    }
}

/// Options for one run, made from random parts.
#[derive(Debug, Clone)]
struct Run {
    command: Option<Vec<u8>>,
    cwd: Option<Vec<u8>>,
    env: Option<Vec<Vec<u8>>>,
    timeout_ms: u64,
    head: usize,
    tail: usize,
    cancel: u8,
    callback: bool,
    null_out: bool,
}

fn run() -> impl Strategy<Value = Run> {
    (
        command(),
        mostly(
            Just(None),
            proptest::option::of(prop_oneof![Just(b".".to_vec()), bytes()]),
        ),
        mostly(Just(None), list()),
        mostly(Just(0), u64_edge()),
        mostly(Just(0), usize_edge()),
        mostly(Just(0), usize_edge()),
        0u8..3,
        any::<bool>(),
        proptest::bool::weighted(0.1),
    )
        .prop_map(
            |(command, cwd, env, timeout_ms, head, tail, cancel, callback, null_out)| Run {
                command,
                cwd,
                env,
                timeout_ms,
                head,
                tail,
                cancel,
                callback,
                null_out,
            },
        )
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

#[derive(Debug, Clone)]
struct ShellOpts {
    shell: Option<Vec<u8>>,
    cwd: Option<Vec<u8>>,
    env: Option<Vec<Vec<u8>>>,
    artifacts: bool,
    store: bool,
    max_bytes: usize,
    snapshot: Option<Vec<u8>>,
    prefix: Option<Vec<u8>>,
    env_inherit: Option<Vec<u8>>,
    env_exclude: Option<Vec<Vec<u8>>>,
    skip: bool,
}

fn shell_opts() -> impl Strategy<Value = ShellOpts> {
    (
        mostly(
            Just(None),
            proptest::option::of(prop_oneof![Just(b"bash".to_vec()), bytes()]),
        ),
        mostly(
            Just(None),
            proptest::option::of(prop_oneof![Just(b".".to_vec()), bytes()]),
        ),
        mostly(Just(None), list()),
        any::<bool>(),
        proptest::bool::weighted(0.1),
        mostly(Just(0), usize_edge()),
        prop_oneof![4 => Just(Some(b"none".to_vec())), 1 => text_or(&["auto", ""])],
        // A prefix runs before every command: only harmless ones.
        proptest::option::weighted(
            0.2,
            proptest::sample::select(vec![b"".to_vec(), b"command".to_vec(), b"# x".to_vec()]),
        ),
        mostly(Just(None), text_or(&["all", "core", "none"])),
        mostly(Just(None), list()),
        any::<bool>(),
    )
        .prop_map(
            |(
                shell,
                cwd,
                env,
                artifacts,
                store,
                max_bytes,
                snapshot,
                prefix,
                env_inherit,
                env_exclude,
                skip,
            )| {
                ShellOpts {
                    shell,
                    cwd,
                    env,
                    artifacts,
                    store,
                    max_bytes,
                    snapshot,
                    prefix,
                    env_inherit,
                    env_exclude,
                    skip,
                }
            },
        )
}

/// A poll of a job: the commands above leave none, so whatever the wait,
/// it returns at once (an unknown job, or bad options).
#[derive(Debug, Clone)]
struct Poll {
    job: u32,
    wait_ms: u64,
    until: Option<Vec<u8>>,
    max_bytes: usize,
    cursor: u64,
    has_cursor: bool,
    cancel: u8,
    null_opts: bool,
    null_out: bool,
}

fn poll() -> impl Strategy<Value = Poll> {
    (
        prop_oneof![Just(0u32), Just(1), Just(u32::MAX), any::<u32>()],
        u64_edge(),
        mostly(
            Just(None),
            text_or(&["x", "(", "(?m)^ok$", "[", "a{99999999}"]),
        ),
        usize_edge(),
        u64_edge(),
        any::<bool>(),
        0u8..3,
        proptest::bool::weighted(0.2),
        proptest::bool::weighted(0.1),
    )
        .prop_map(
            |(job, wait_ms, until, max_bytes, cursor, has_cursor, cancel, null_opts, null_out)| {
                Poll {
                    job,
                    wait_ms,
                    until,
                    max_bytes,
                    cursor,
                    has_cursor,
                    cancel,
                    null_opts,
                    null_out,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn shells_and_runs(opts in shell_opts(), runs in proptest::collection::vec(run(), 1..4), capacity in 0usize..10, null_pids in any::<bool>(), null_engine in any::<bool>(), polls in proptest::collection::vec(poll(), 0..3), sandbox in proptest::option::weighted(0.3, sandbox_fuzz())) {
        watchdog();
        let mut arena = Arena::default();
        let home = scratch();
        let home_c = arena.text(&Some(home.to_str().unwrap().as_bytes().to_vec()));
        // SAFETY (whole block): every pointer is NULL or live for the call;
        // each handle and result is freed once and not used after.
        unsafe {
            let store = if opts.store { conch_artifact_store_new(home_c) } else { ptr::null_mut() };
            let sandbox_fuzzed = sandbox.clone();
            let sandbox = sandbox.as_ref().map(|s| s.to_c(&mut arena));
            let o = conch_shell_options {
                shell: arena.text(&opts.shell),
                cwd: arena.text(&opts.cwd),
                env: arena.list(&opts.env),
                // Any names (the exclusion globs: text, bytes, NULL).
                skip_mask: false,
                mask_names: arena.list(&opts.env_exclude),
                artifacts_dir: if opts.artifacts { home_c } else { ptr::null() },
                max_bytes: opts.max_bytes,
                snapshot: arena.text(&opts.snapshot),
                prefix: arena.text(&opts.prefix),
                env_policy: conch_env_policy {
                    inherit: arena.text(&opts.env_inherit),
                    exclude: arena.list(&opts.env_exclude),
                },
                skip_non_interactive_env: opts.skip,
                artifact_store: store,
                max_jobs: 0,
                job_artifact_cap: 0,
                on_job_exit: None,
                user_data: ptr::null_mut(),
                sandbox: sandbox.as_ref().map_or(ptr::null(), |s| s as *const _),
                options_json: ptr::null(),
            };
            let sh = conch_shell_new(&o);
            check_pointer(sh, "conch_shell_new")?;

            for r in &runs {
                let cancel = token(r.cancel);
                let ro = conch_run_options {
                    command: arena.text(&r.command),
                    cwd: arena.text(&r.cwd),
                    env: arena.list(&r.env),
                    timeout_ms: r.timeout_ms,
                    head_lines: r.head,
                    tail_lines: r.tail,
                    cancel,
                    yield_after_ms: 0,
                    options_json: ptr::null(),
                };
                let bad = AtomicUsize::new(0);
                let mut out: *mut conch_bash_result = ptr::null_mut();
                let out_p = if r.null_out { ptr::null_mut() } else { &mut out as *mut _ };
                let cb: conch::callback::conch_chunk_cb = if r.callback { Some(check_chunk) } else { None };
                let rc = conch_shell_run(sh, &ro, cb, (&bad as *const AtomicUsize).cast_mut().cast(), out_p);
                conch_cancel_token_free(cancel);
                check_status(rc, "conch_shell_run")?;

                prop_assert_eq!(bad.load(Ordering::SeqCst), 0, "chunks are NUL-terminated UTF-8");
                if rc == 0 {
                    check_bash_result(out, "conch_shell_run")?;
                } else {
                    prop_assert!(out.is_null(), "out untouched on error");
                }
                conch_bash_result_free(out);
            }
            let mut pids = [0u32; 10];
            let mut count = 0usize;
            let pids_p = if null_pids { ptr::null_mut() } else { pids.as_mut_ptr() };
            let rc = conch_shell_background_jobs(sh, pids_p, capacity, &mut count);
            check_status(rc, "conch_shell_background_jobs")?;
            let mut engine = conch_engine::CONCH_ENGINE_BUILTIN;
            let engine_p = if null_engine { ptr::null_mut() } else { &mut engine as *mut _ };
            check_status(conch_shell_engine(sh, engine_p), "conch_shell_engine")?;
            if let Some(fuzz) = &sandbox_fuzzed {
                let domains = fuzz.domains_to_c(&mut arena);
                let rc = conch_shell_set_network(sh, fuzz.network, &domains);
                check_status(rc, "conch_shell_set_network")?;
            }
            for p in &polls {
                let cancel = token(p.cancel);
                let po = conch_poll_options {
                    wait_ms: p.wait_ms,
                    until: arena.text(&p.until),
                    max_bytes: p.max_bytes,
                    cursor: p.cursor,
                    has_cursor: p.has_cursor,
                    cancel,
                };
                let mut out: *mut conch_job_poll = ptr::null_mut();
                let out_p = if p.null_out { ptr::null_mut() } else { &mut out as *mut _ };
                let po_p = if p.null_opts { ptr::null() } else { &po as *const _ };
                let rc = conch_shell_poll(sh, p.job, po_p, out_p);
                conch_cancel_token_free(cancel);
                check_status(rc, "conch_shell_poll")?;
                if rc == 0 {
                    prop_assert!(!out.is_null(), "conch_shell_poll: CONCH_OK without a poll");
                    check_text((*out).output, false, "conch_shell_poll: output")?;
                    check_text((*out).status, false, "conch_shell_poll: status")?;
                } else {
                    prop_assert!(out.is_null(), "out untouched on error");
                }
                conch_job_poll_free(out);
            }
            let mut jobs: *mut conch_job_info = ptr::null_mut();
            let mut n = 0usize;
            let rc = conch_shell_jobs(sh, &mut jobs, &mut n);
            check_status(rc, "conch_shell_jobs")?;
            for j in 0..n {
                check_text((*jobs.add(j)).command, false, "conch_shell_jobs: command")?;
                check_text((*jobs.add(j)).status, false, "conch_shell_jobs: status")?;
            }
            conch_job_info_free(jobs, n);
            check_status(conch_shell_abort(sh), "conch_shell_abort")?;
            conch_shell_free(sh);
            conch_artifact_store_free(store);

            // The same run once more in a fresh process.
            let r = &runs[0];
            let cancel = token(r.cancel);
            let eo = conch_execute_options {
                command: arena.text(&r.command),
                shell: arena.text(&opts.shell),
                cwd: arena.text(&r.cwd),
                env: arena.list(&r.env),
                skip_mask: opts.skip,
                mask_names: ptr::null(),
                timeout_ms: r.timeout_ms,
                max_bytes: opts.max_bytes,
                artifacts_dir: if opts.artifacts { home_c } else { ptr::null() },
                artifact_store: ptr::null(),
                head_lines: r.head,
                tail_lines: r.tail,
                cancel,
                env_policy: conch_env_policy {
                    inherit: arena.text(&opts.env_inherit),
                    exclude: arena.list(&opts.env_exclude),
                },
                skip_non_interactive_env: opts.skip,
                sandbox: sandbox.as_ref().map_or(ptr::null(), |s| s as *const _),
                options_json: ptr::null(),
            };
            let mut out: *mut conch_bash_result = ptr::null_mut();
            let out_p = if r.null_out { ptr::null_mut() } else { &mut out as *mut _ };
            let rc = conch_execute_shell(&eo, None, ptr::null_mut(), out_p);
            conch_cancel_token_free(cancel);
            check_status(rc, "conch_execute_shell")?;
            if rc == 0 {
                check_bash_result(out, "conch_execute_shell")?;
            }
            conch_bash_result_free(out);
        }
        let _ = std::fs::remove_dir_all(home);
    }

    #[test]
    fn tools_and_calls(
        cwd in mostly(Just(None), proptest::option::of(bytes())),
        artifacts in any::<bool>(),
        tool_names in mostly(Just(None), list()),
        interceptor in any::<bool>(),
        rules in mostly(Just(None), proptest::option::of(bytes())),
        virtual_terminal in any::<bool>(),
        update_interval_ms in mostly(Just(0), u64_edge()),
        shell in mostly(Just(None), proptest::option::of(bytes())),
        snapshot in prop_oneof![4 => Just(Some(b"none".to_vec())), 1 => text()],
        session_env in mostly(Just(None), list()),
        cols in any::<u16>(),
        rows in any::<u16>(),
        names in (
            mostly(Just(None), proptest::option::of(bytes())),
            mostly(Just(None), proptest::option::of(bytes())),
        ),
        calls in proptest::collection::vec((
            command(),
            proptest::option::of(prop_oneof![
                proptest::sample::select(vec![
                    -1.0, 0.0, 0.5, 1e300, -1e300, 3601.0, 2147483.648, f64::MAX, f64::MIN_POSITIVE
                ]),
                any::<f64>(),
            ]),
            proptest::option::of(any::<i64>()),
            text(),
            0u8..3,
            any::<bool>(),
            any::<bool>(),
            proptest::bool::weighted(0.1),
        ), 1..3),
    ) {
        watchdog();
        static KEY: AtomicUsize = AtomicUsize::new(0);
        let mut arena = Arena::default();
        let home = scratch();
        let home_c = arena.text(&Some(home.to_str().unwrap().as_bytes().to_vec()));
        let key = format!("ffi-misuse-{}", KEY.fetch_add(1, Ordering::SeqCst));
        // SAFETY (whole block): as in `shells_and_runs`.
        unsafe {
            let o = conch_tool_options {
                cwd: if cwd.is_some() { arena.text(&cwd) } else { home_c },
                artifacts_dir: if artifacts { home_c } else { ptr::null() },
                tool_names: arena.list(&tool_names),
                interceptor,
                rules_json: arena.text(&rules),
                virtual_terminal,
                session_key: arena.text(&Some(key.into_bytes())),
                update_interval_ms,
                shell: arena.text(&shell),
                prefix: ptr::null(),
                snapshot: arena.text(&snapshot),
                engine: ptr::null(),
                session_env: arena.list(&session_env),
                skip_mask: false,
                mask_names: arena.list(&tool_names),
                pty_cols: cols,
                pty_rows: rows,
                name: arena.text(&names.0),
                job_tool_name: arena.text(&names.1),
                sandbox: ptr::null(),
            };
            let tool = conch_tool_new(&o);
            check_pointer(tool, "conch_tool_new")?;
            if !tool.is_null() {
                // The definition is always JSON naming the tool.
                let definition = conch_tool_definition(tool);
                check_text(definition, false, "definition")?;
                let text = CStr::from_ptr(definition).to_str().unwrap().to_owned();
                conch_string_free(definition);
                let json: serde_json::Value = serde_json::from_str(&text).unwrap();
                prop_assert!(json["name"].is_string() && json["input_schema"].is_object(), "{}", text);
            }
            for (command, timeout, head, junk, cancel_kind, has_ui, callback, null_out) in &calls {
                let mut args = serde_json::json!({});
                if let Some(c) = command {
                    args["command"] = String::from_utf8_lossy(c).into_owned().into();
                }
                if let Some(t) = timeout {
                    args["timeout"] = serde_json::Number::from_f64(*t).map_or(serde_json::Value::Null, Into::into);
                }
                if let Some(h) = head {
                    args["head"] = (*h).into();
                }
                // Sometimes the model sends something else entirely.
                let json = match junk {
                    Some(j) if j.len() % 3 == 0 => j.clone(),
                    _ => args.to_string().into_bytes(),
                };
                let cancel = token(*cancel_kind);
                let bad = AtomicUsize::new(0);
                let mut out: *mut conch_tool_result = ptr::null_mut();
                let out_p = if *null_out { ptr::null_mut() } else { &mut out as *mut _ };
                let cb: conch::callback::conch_chunk_cb = if *callback { Some(check_chunk) } else { None };
                let rc = conch_tool_execute(
                    tool,
                    arena.text(&Some(json)),
                    cancel,
                    *has_ui,
                    cb,
                    (&bad as *const AtomicUsize).cast_mut().cast(),
                    out_p,
                );
                conch_cancel_token_free(cancel);
                check_status(rc, "conch_tool_execute")?;
                prop_assert_eq!(bad.load(Ordering::SeqCst), 0, "updates are NUL-terminated UTF-8");
                let outcome = [0, -7, -8, -9].contains(&rc);
                if outcome && !*null_out {
                    prop_assert!(!out.is_null(), "an outcome comes with a result");
                    let r = &*out;
                    prop_assert_eq!(r.status, rc);
                    check_text(r.text, false, "tool text")?;
                    check_text(r.details_json, true, "details_json")?;
                    check_text(r.suggested_tool, rc != -7, "suggested_tool")?;
                    if !r.bash.is_null() {
                        check_bash_result(r.bash, "tool bash")?;
                    }
                } else {
                    prop_assert!(out.is_null(), "out untouched on error");
                }
                conch_tool_result_free(out);
            }
            conch_tool_free(tool);
            check_status(conch_close_sessions(ptr::null()), "conch_close_sessions")?;
        }
        let _ = std::fs::remove_dir_all(home);
    }

    #[test]
    fn ptys(
        run in run(),
        shell in mostly(Just(None), proptest::option::of(bytes())),
        cols in any::<u16>(),
        rows in any::<u16>(),
        max_bytes in mostly(Just(0), usize_edge()),
        input in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..32)),
        key in text_or(&["enter", "ctrl+c", "f35", "f36", "alt+shift+x", ""]),
    ) {
        watchdog();
        let mut arena = Arena::default();
        // SAFETY (whole block): as in `shells_and_runs`.
        unsafe {
            let pty = conch_pty_new();
            check_pointer(pty, "conch_pty_new")?;
            // Nothing runs yet: input calls fail with a message, never panic.
            let (data, len) = match &input {
                Some(d) => (d.as_ptr(), d.len()),
                None => (ptr::null(), 3),
            };
            check_status(conch_pty_write(pty, data, len), "conch_pty_write")?;
            check_status(conch_pty_write_key(pty, arena.text(&key)), "conch_pty_write_key")?;
            check_status(conch_pty_resize(pty, cols, rows), "conch_pty_resize")?;
            check_status(conch_pty_kill(pty), "conch_pty_kill")?;
            let mut running = true;
            let out = if run.null_out { ptr::null_mut() } else { &mut running as *mut bool };
            check_status(conch_pty_is_running(pty, out), "conch_pty_is_running")?;

            let cancel = token(run.cancel);
            let o = conch_pty_options {
                command: arena.text(&run.command),
                cwd: arena.text(&run.cwd),
                env: arena.list(&run.env),
                skip_mask: false,
                mask_names: ptr::null(),
                timeout_ms: run.timeout_ms,
                cols,
                rows,
                shell: arena.text(&shell),
                cancel,
                max_bytes,
                artifacts_dir: ptr::null(),
                artifact_store: ptr::null(),
                env_policy: conch_env_policy {
                    inherit: ptr::null(),
                    exclude: ptr::null(),
                },
                skip_non_interactive_env: false,
                sandbox: ptr::null(),
                options_json: ptr::null(),
            };
            let bad = AtomicUsize::new(0);
            let mut result: *mut conch_pty_result = ptr::null_mut();
            let out_p = if run.null_out { ptr::null_mut() } else { &mut result as *mut _ };
            let cb: conch::callback::conch_chunk_cb = if run.callback { Some(check_chunk) } else { None };
            let rc = conch_pty_start(pty, &o, cb, (&bad as *const AtomicUsize).cast_mut().cast(), out_p);
            conch_cancel_token_free(cancel);
            check_status(rc, "conch_pty_start")?;
            prop_assert_eq!(bad.load(Ordering::SeqCst), 0, "chunks are NUL-terminated UTF-8");
            if rc == 0 {
                prop_assert!(!result.is_null());
                check_text((*result).output, false, "pty output")?;
                check_text((*result).artifact_id, true, "pty artifact_id")?;
            }
            conch_pty_result_free(result);
            let screen = conch_pty_screen_text(pty);
            check_pointer(screen, "conch_pty_screen_text")?;
            check_text(screen, false, "screen text")?;
            conch_string_free(screen);
            conch_pty_free(pty);
        }
    }
}

/// One call on the jobs of a shell, with proptest-made arguments. Commands
/// stay trivial, and what is written is small (a job that does not read
/// never fills its input: a write would wait then).
#[derive(Debug, Clone)]
enum JobOp {
    Start {
        command: Option<Vec<u8>>,
        cwd: Option<Vec<u8>>,
        env: Option<Vec<Vec<u8>>>,
        timeout_ms: u64,
        stdin: bool,
        cols: u16,
        rows: u16,
        null_opts: bool,
        null_out: bool,
    },
    Write {
        job: u32,
        data: Option<Vec<u8>>,
        len: usize,
    },
    CloseStdin {
        job: u32,
    },
    Key {
        job: u32,
        key: Option<Vec<u8>>,
    },
    Signal {
        job: u32,
        signal: Option<Vec<u8>>,
    },
    Kill {
        job: u32,
        null_out: bool,
    },
    WaitAny {
        jobs: Option<Vec<u32>>,
        extra: usize,
        timeout_ms: u64,
        cancel: u8,
        null_job: bool,
        null_found: bool,
    },
}

fn job_id() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 1u32..4, 1 => Just(0u32), 1 => Just(u32::MAX), 1 => any::<u32>()]
}

fn job_op() -> impl Strategy<Value = JobOp> {
    let small = proptest::collection::vec(any::<u8>(), 0..64);
    prop_oneof![
        3 => (
            command(),
            mostly(Just(None), proptest::option::of(prop_oneof![Just(b".".to_vec()), bytes()])),
            mostly(Just(None), list()),
            mostly(Just(0), u64_edge()),
            any::<bool>(),
            prop_oneof![3 => Just((0u16, 0u16)), 2 => Just((80, 24)), 1 => (any::<u16>(), any::<u16>())],
            proptest::bool::weighted(0.1),
            proptest::bool::weighted(0.1),
        )
            .prop_map(|(command, cwd, env, timeout_ms, stdin, (cols, rows), null_opts, null_out)| {
                JobOp::Start { command, cwd, env, timeout_ms, stdin, cols, rows, null_opts, null_out }
            }),
        2 => (job_id(), proptest::option::weighted(0.9, small), prop_oneof![4 => Just(usize::MAX), 1 => 0usize..100])
            .prop_map(|(job, data, len)| JobOp::Write { job, data, len }),
        1 => job_id().prop_map(|job| JobOp::CloseStdin { job }),
        1 => (job_id(), text_or(&["enter", "ctrl+c", "backspace", "up", "nope"]))
            .prop_map(|(job, key)| JobOp::Key { job, key }),
        1 => (job_id(), text_or(&["TERM", "sigint", "9", "HUP", "0", "NOPE", "-1"]))
            .prop_map(|(job, signal)| JobOp::Signal { job, signal }),
        1 => (job_id(), proptest::bool::weighted(0.3))
            .prop_map(|(job, null_out)| JobOp::Kill { job, null_out }),
        1 => (
            proptest::option::weighted(0.9, proptest::collection::vec(job_id(), 0..4)),
            prop_oneof![4 => Just(0usize), 1 => 1usize..3],
            proptest::sample::select(vec![0u64, 1, 50, 2_147_483_648, u64::MAX]),
            0u8..3,
            proptest::bool::weighted(0.1),
            proptest::bool::weighted(0.1),
        )
            .prop_map(|(jobs, extra, timeout_ms, cancel, null_job, null_found)| JobOp::WaitAny {
                jobs, extra, timeout_ms, cancel, null_job, null_found,
            }),
    ]
}

/// Counts the calls of `on_job_exit` and the bad ones (a NULL job, a
/// string that is not UTF-8 or NULL where it may not be).
#[derive(Default)]
struct Exits {
    calls: AtomicUsize,
    bad: AtomicUsize,
}

unsafe extern "C" fn count_exit(user: *mut c_void, job: *const conch_job_info) {
    // SAFETY: the test passes a live `Exits` as `user`.
    let exits = unsafe { &*user.cast::<Exits>() };
    exits.calls.fetch_add(1, Ordering::SeqCst);
    let utf8 = |p: *const c_char, nullable: bool| {
        // SAFETY: conch passes NULL or a NUL-terminated string.
        (nullable && p.is_null()) || (!p.is_null() && unsafe { CStr::from_ptr(p) }.to_str().is_ok())
    };
    // SAFETY: `job` is NULL or valid during the call (checked here).
    let ok = unsafe { job.as_ref() }.is_some_and(|j| {
        utf8(j.command, false) && utf8(j.status, false) && utf8(j.artifact_id, true) && j.job >= 1
    });
    if !ok {
        exits.bad.fetch_add(1, Ordering::SeqCst);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 32,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn jobs_started_fed_signalled_killed_and_waited_for(
        max_jobs in proptest::sample::select(vec![0usize, 1, 2, usize::MAX]),
        cap in proptest::sample::select(vec![0u64, 1, 100, u64::MAX]),
        hook in any::<bool>(),
        ops in proptest::collection::vec(job_op(), 1..8),
    ) {
        watchdog();
        let mut arena = Arena::default();
        let exits = Exits::default();
        // SAFETY (whole block): every pointer is NULL or live for the call;
        // each handle and result is freed once and not used after; `exits`
        // outlives the shell (no call comes after conch_shell_free).
        unsafe {
            let o = conch_shell_options {
                snapshot: c"none".as_ptr(),
                max_jobs,
                job_artifact_cap: cap,
                on_job_exit: if hook { Some(count_exit) } else { None },
                user_data: (&exits as *const Exits).cast_mut().cast(),
                ..std::mem::zeroed()
            };
            let sh = conch_shell_new(&o);
            prop_assert!(!sh.is_null(), "conch_shell_new: {}", last_error());
            let mut started = 0usize;
            for op in &ops {
                match op {
                    JobOp::Start { command, cwd, env, timeout_ms, stdin, cols, rows, null_opts, null_out } => {
                        let jo = conch_job_options {
                            command: arena.text(command),
                            cwd: arena.text(cwd),
                            env: arena.list(env),
                            timeout_ms: *timeout_ms,
                            stdin_pipe: *stdin,
                            pty_cols: *cols,
                            pty_rows: *rows,
                            options_json: ptr::null(),
                        };
                        let mut job = 0u32;
                        let rc = conch_shell_start(
                            sh,
                            if *null_opts { ptr::null() } else { &jo },
                            if *null_out { ptr::null_mut() } else { &mut job },
                        );
                        check_status(rc, "conch_shell_start")?;
                        if rc == 0 {
                            prop_assert!(job >= 1, "conch_shell_start: job id {job}");
                            started += 1;
                        }
                    }
                    JobOp::Write { job, data, len } => {
                        let (p, n) = match data {
                            Some(d) => (d.as_ptr(), (*len).min(d.len())),
                            None => (ptr::null(), *len % 3),
                        };
                        check_status(conch_shell_write(sh, *job, p, n), "conch_shell_write")?;
                    }
                    JobOp::CloseStdin { job } => {
                        check_status(conch_shell_close_stdin(sh, *job), "conch_shell_close_stdin")?;
                    }
                    JobOp::Key { job, key } => {
                        let rc = conch_shell_write_key(sh, *job, arena.text(key));
                        check_status(rc, "conch_shell_write_key")?;
                    }
                    JobOp::Signal { job, signal } => {
                        let rc = conch_shell_signal(sh, *job, arena.text(signal));
                        check_status(rc, "conch_shell_signal")?;
                    }
                    JobOp::Kill { job, null_out } => {
                        let mut out: *mut conch_job_poll = ptr::null_mut();
                        let out_p = if *null_out { ptr::null_mut() } else { &mut out as *mut _ };
                        let rc = conch_shell_kill_job(sh, *job, out_p);
                        check_status(rc, "conch_shell_kill_job")?;
                        if rc == 0 && !null_out {
                            prop_assert!(!out.is_null(), "conch_shell_kill_job: CONCH_OK without a poll");
                            check_text((*out).output, false, "conch_shell_kill_job: output")?;
                            check_text((*out).status, false, "conch_shell_kill_job: status")?;
                        } else {
                            prop_assert!(out.is_null(), "out untouched");
                        }
                        conch_job_poll_free(out);
                    }
                    JobOp::WaitAny { jobs, extra, timeout_ms, cancel, null_job, null_found } => {
                        let token = token(*cancel);
                        let (p, n) = match jobs {
                            Some(ids) => (ids.as_ptr(), ids.len()),
                            None => (ptr::null(), *extra),
                        };
                        let (mut job, mut found) = (7u32, false);
                        let rc = conch_shell_wait_any(
                            sh,
                            p,
                            n,
                            *timeout_ms,
                            token,
                            if *null_job { ptr::null_mut() } else { &mut job },
                            if *null_found { ptr::null_mut() } else { &mut found },
                        );
                        conch_cancel_token_free(token);
                        check_status(rc, "conch_shell_wait_any")?;
                        if rc == 0 {
                            prop_assert!(found == (job != 0), "found {found}, job {job}");
                        } else {
                            prop_assert!(job == 7 && !found, "outputs untouched on error");
                        }
                    }
                }
            }
            conch_shell_free(sh);
            prop_assert_eq!(exits.bad.load(Ordering::SeqCst), 0, "on_job_exit gets a valid job");
            let calls = exits.calls.load(Ordering::SeqCst);
            if hook {
                prop_assert_eq!(calls, started, "one call per job, all before conch_shell_free returned");
            } else {
                prop_assert_eq!(calls, 0);
            }
        }
    }
}
