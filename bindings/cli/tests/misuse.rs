//! Misuse of the `conch` binary: words that are not UTF-8, numbers that
//! are not a value of their option, request lines that are not requests.
//! Whatever it is given, conch never panics, never hangs, and exits with a
//! documented status (usage errors 2, each with a one-line message); `conch
//! rpc` answers every line it reads. First one test per kind of misuse, then
//! random command lines and request lines (proptest).

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use serde_json::{Value, json};

// Only its hang guard is used here; the other test files use the rest.
#[allow(dead_code)]
mod common;
use common::wait_exit;

/// What one run of conch did.
struct Ran {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
}

/// A scratch directory, the cwd and artifacts directory of the runs.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        Scratch(common::scratch_dir(&format!("misuse-{name}")))
    }

    /// Runs conch with `args` and `stdin` to its exit, under the hang guard
    /// (which kills it and fails). A panic, a death by signal or a status
    /// no page documents fails too.
    fn run<A: AsRef<OsStr>>(&self, args: &[A], stdin: &[u8]) -> Ran {
        let mut child = Command::new(env!("CARGO_BIN_EXE_conch"))
            .args(args)
            .current_dir(&self.0)
            .env("CONCH_ARTIFACTS_DIR", self.0.join("artifacts"))
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        let stdin = stdin.to_vec();
        // Ignored: conch need not read its stdin (`run` does not).
        let writer = std::thread::spawn(move || {
            let _ = input.write_all(&stdin);
        });
        let stdout = read_all(child.stdout.take().unwrap());
        let stderr = read_all(child.stderr.take().unwrap());
        let status = wait_exit(&mut child);
        let _ = writer.join();
        let ran = Ran {
            code: status
                .code()
                .unwrap_or_else(|| panic!("conch died by a signal: {status:?}")),
            stdout: stdout.join().unwrap(),
            stderr: String::from_utf8_lossy(&stderr.join().unwrap()).into_owned(),
        };
        let line: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
        assert!(
            ran.code != 101 && !ran.stderr.contains("panicked"),
            "conch {line:?} panicked: {}",
            ran.stderr
        );
        assert!(
            DOCUMENTED.contains(&ran.code),
            "conch {line:?} exited {}, not a documented status: {}",
            ran.code,
            ran.stderr
        );
        ran
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The statuses docs/api/cli.md gives, and 3, the status of `exit 3`, the
/// only other one the commands below end with.
const DOCUMENTED: [i32; 6] = [0, 1, 2, 3, 124, 130];

fn read_all(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        pipe.read_to_end(&mut bytes).unwrap();
        bytes
    })
}

fn os(bytes: &[u8]) -> OsString {
    OsString::from_vec(bytes.to_vec())
}

/// A usage error: status 2 and one line on stderr starting with `start`.
fn assert_usage(ran: &Ran, start: &str) {
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(ran.stderr.starts_with(start), "{:?}", ran.stderr);
    assert_eq!(ran.stderr.lines().count(), 1, "{:?}", ran.stderr);
}

/// Every line conch rpc wrote, as JSON (a line that is not JSON fails).
fn replies(stdout: &[u8]) -> Vec<Value> {
    stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_slice(l)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(l)))
        })
        .collect()
}

fn responses(stdout: &[u8]) -> Vec<Value> {
    replies(stdout)
        .into_iter()
        .filter(|v| v["type"] == "response")
        .collect()
}

#[test]
fn words_that_are_not_utf8_are_usage_errors() {
    let s = Scratch::new("utf8");
    // A command is bash's business: its bytes reach bash as they are (the
    // output is sanitized, so the model reads U+FFFD).
    let ran = s.run(
        &[
            os(b"run"),
            os(b"--"),
            os(b"printf '%s' caf\xe9 | od -An -tx1"),
        ],
        b"",
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(String::from_utf8_lossy(&ran.stdout), " 63 61 66 e9\n");
    let ran = s.run(&[os(b"run"), os(b"--"), os(b"echo \xff")], b"");
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "\u{fffd}\n");
    let ran = s.run(&[os(b"run"), os(b"--cwd"), os(b"d\xff"), os(b"true")], b"");
    assert_usage(&ran, "conch run: --cwd is not valid UTF-8: \"d\\xFF\"");
    let ran = s.run(&[os(b"artifact"), os(b"\xff")], b"");
    assert_usage(&ran, "conch artifact: ID is not valid UTF-8");
    // The subcommand itself (conch words the error from its argv).
    let ran = s.run(&[os(b"\xff")], b"");
    assert_eq!(ran.code, 2);
    assert!(
        ran.stderr.starts_with("conch: unknown command"),
        "{}",
        ran.stderr
    );
    // A path is the OS's business: it works as given.
    let ran = s.run(
        &[
            os(b"run"),
            os(b"--artifacts"),
            s.0.join(os(b"arts\xff")).into_os_string(),
            os(b"--"),
            os(b"seq 1 100000 | tail -n 1"),
        ],
        b"",
    );
    assert_eq!((ran.code, ran.stdout.as_slice()), (0, &b"100000\n"[..]));
}

#[test]
fn numbers_are_checked_by_the_core_with_the_option_name() {
    let s = Scratch::new("numbers");
    for sub in ["run", "pty"] {
        for bad in ["nan", "inf", "-inf", "-1", "0", "1e300", "-0"] {
            let ran = s.run(&[sub, "--timeout", bad, "--", "true"], b"");
            assert_usage(
                &ran,
                &format!("conch {sub}: --timeout must be a positive number of seconds"),
            );
        }
    }
    for (flag, bad) in [("--head", "-1"), ("--tail", "1.5"), ("--head", "nan")] {
        let ran = s.run(&["run", flag, bad, "--", "true"], b"");
        assert_usage(
            &ran,
            &format!("conch run: {flag} must be a whole number >= 0, got "),
        );
    }
    for (flag, bad, takes) in [
        ("--cols", "nan", ">= 0"),
        ("--rows", "-1", ">= 0"),
        ("--cols", "inf", "below 2^64"),
    ] {
        let ran = s.run(&["pty", flag, bad, "--", "true"], b"");
        assert_usage(
            &ran,
            &format!("conch pty: {flag} must be a whole number {takes}"),
        );
    }
    for (flag, bad) in [("--offset", "-1"), ("--limit", "nan"), ("--offset", "0.5")] {
        let ran = s.run(&["artifact", flag, bad, "0"], b"");
        assert_usage(
            &ran,
            &format!("conch artifact: {flag} must be a whole number >= 0"),
        );
    }
    // Not a number at all: clap's word for it.
    let ran = s.run(&["run", "--head", "x", "--", "true"], b"");
    assert_usage(&ran, "conch run: invalid value for --head: \"x\"");

    // In range, the tool still clamps (99999 s is an hour); a huge count
    // (below 2^64) is "all lines"; a huge terminal is the largest one.
    let ran = s.run(
        &[
            "run",
            "--timeout",
            "99999",
            "--head",
            "1e18",
            "--",
            "echo ok",
        ],
        b"",
    );
    assert_eq!((ran.code, ran.stdout.as_slice()), (0, &b"ok\n"[..]));
    let ran = s.run(&["pty", "--cols", "1e18", "--", "tput cols"], b"");
    assert_eq!(ran.code, 0);
    assert!(
        String::from_utf8_lossy(&ran.stdout).contains("400"),
        "{:?}",
        ran.stdout
    );
}

#[test]
fn rpc_answers_every_bad_line_and_goes_on() {
    let s = Scratch::new("rpc");
    let lines: Vec<Vec<u8>> = vec![
        b"\xff\xfe not utf-8".to_vec(),
        b"{\"id\": 1, \"type\": \"bash\", \"command\": \"echo \xff\"}".to_vec(),
        br#"{"id": 2, "type": "bash", "command": "echo a\u0000b"}"#.to_vec(),
        br#"{"id": 3, "type": "bash", "command": "true", "cwd": "a\u0000b"}"#.to_vec(),
        br#"{"id": 4, "type": "bash", "command": "true", "timeout": -1}"#.to_vec(),
        br#"{"id": 5, "type": "bash", "command": "true", "timeout": 1e300}"#.to_vec(),
        br#"{"id": 6, "type": "bash", "command": "true", "timeout": 0}"#.to_vec(),
        br#"{"id": 7, "type": "bash", "command": 42}"#.to_vec(),
        br#"{"id": 8, "type": "bash", "command": "true", "timeout": 1e999}"#.to_vec(),
        br#"{"id": 9, "type": "bash", "command": "echo fine", "timeout": 99999}"#.to_vec(),
    ];
    let stdin = lines.join(&b'\n');
    let ran = s.run(&["rpc", "--drain"], &stdin);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let replies = responses(&ran.stdout);
    assert_eq!(
        replies.len(),
        lines.len(),
        "one reply per line: {replies:?}"
    );
    let error = |i: usize| replies[i]["error"].as_str().unwrap_or_default().to_string();
    assert!(error(0).starts_with("Invalid JSON: "), "{}", error(0));
    assert!(error(1).starts_with("Invalid JSON: "), "{}", error(1));
    assert_eq!(error(2), "command contains a NUL byte");
    assert!(error(3).contains("NUL"), "{}", error(3));
    for i in [4, 5, 6] {
        assert!(
            error(i).starts_with("timeout must be a positive number of seconds"),
            "{}",
            error(i)
        );
        assert_eq!(replies[i]["id"], i, "{}", replies[i]);
    }
    assert_eq!(error(7), "bash needs a string \"command\"");
    assert!(error(8).starts_with("Invalid JSON: "), "{}", error(8));
    assert_eq!(replies[9]["id"], 9);
    assert_eq!(replies[9]["data"]["output"], "fine\n");
}

// Random misuse. Commands are trivial whatever the case (`true`, `exit 3`,
// random text only ever in a comment or a quoted argument), values are
// single path components (no `/`), so a case can only touch the scratch
// directory.

/// Bytes for a word: never NUL (argv cannot hold it), never `/`; often not
/// UTF-8.
fn word() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(
            any::<u8>().prop_filter("not NUL or /", |b| *b != 0 && *b != b'/'),
            0..12
        ),
        "[a-z0-9.=-]{0,8}".prop_map(String::into_bytes),
        (1usize..64 * 1024).prop_map(|n| vec![b'a'; n]),
    ]
}

/// A value for a numeric option: edge numbers as typed, then random ones.
fn number() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::sample::select(vec![
            "nan",
            "NaN",
            "inf",
            "-inf",
            "infinity",
            "-1",
            "-0",
            "0",
            "1",
            "0.5",
            "1e300",
            "-1e300",
            "1e-300",
            "1e999",
            "18446744073709551616",
            "4294967296",
            "65536",
            "3600",
            "3601",
            "2147483.648",
            "0x10",
            "",
            " 1",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        any::<f64>().prop_map(|f| f.to_string().into_bytes()),
        any::<i64>().prop_map(|n| n.to_string().into_bytes()),
        word(),
    ]
}

/// An option of some subcommand (or none), with a value that may not suit
/// it. Never a bare word: for `run` and `pty` that would start the command.
fn option() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let numeric = proptest::sample::select(vec![
        "--timeout",
        "--head",
        "--tail",
        "--offset",
        "--limit",
        "--cols",
        "--rows",
    ]);
    let text = proptest::sample::select(vec![
        "--cwd",
        "--artifacts",
        "--dir",
        "--tools",
        "--interceptor",
        "--bogus",
    ]);
    let flag = proptest::sample::select(vec!["--json", "--pty", "--help", "-V", "--json=1"]);
    prop_oneof![
        (numeric.clone(), number()).prop_map(|(f, v)| vec![f.as_bytes().to_vec(), v]),
        (numeric, number()).prop_map(|(f, v)| {
            let mut joined = format!("{f}=").into_bytes();
            joined.extend(v);
            vec![joined]
        }),
        (text, word()).prop_map(|(f, v)| vec![f.as_bytes().to_vec(), v]),
        flag.prop_map(|f| vec![f.as_bytes().to_vec()]),
    ]
}

/// A trivial command, with random bytes where they cannot run.
fn shell_command() -> impl Strategy<Value = Vec<u8>> {
    let comment = proptest::collection::vec(
        any::<u8>().prop_filter("one line", |b| *b != 0 && *b != b'\n'),
        0..40,
    );
    prop_oneof![
        Just(b"true".to_vec()),
        Just(b"exit 3".to_vec()),
        Just(b"echo ok".to_vec()),
        comment.prop_map(|c| [b"true # ".as_slice(), &c].concat()),
    ]
}

fn argv() -> impl Strategy<Value = Vec<OsString>> {
    let sub = prop_oneof![
        proptest::sample::select(vec!["run", "pty", "artifact", "rpc", "version", "help"])
            .prop_map(|s| s.as_bytes().to_vec()),
        word(),
    ];
    (
        sub,
        proptest::collection::vec(option(), 0..4),
        any::<bool>(),
        proptest::option::of(shell_command()),
    )
        .prop_map(|(sub, options, dashes, command)| {
            let mut argv = vec![os(&sub)];
            argv.extend(options.into_iter().flatten().map(|w| os(&w)));
            if dashes {
                argv.push("--".into());
            }
            argv.extend(command.map(|c| os(&c)));
            argv
        })
}

/// A JSON value of any type, for a request field.
fn json_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        proptest::sample::select(vec![1e300, -1.0, 0.0, 1e-300, 3601.0, 2147483.648])
            .prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        Just(json!([1, "two"])),
        Just(json!({"a": {}})),
    ]
}

/// The fields of a `job_poll`, each absent, of its type, or any JSON value.
/// The commands leave no job, so a poll returns at once whatever its wait.
fn poll_fields() -> impl Strategy<Value = Vec<(&'static str, Value)>> {
    let field = |name: &'static str, valid: BoxedStrategy<Value>| {
        proptest::option::of(prop_oneof![2 => valid, 1 => json_value()])
            .prop_map(move |v| v.map(|v| (name, v)))
    };
    (
        field("job", (0u64..3).prop_map(Value::from).boxed()),
        field("wait", (0u64..3).prop_map(Value::from).boxed()),
        field(
            "until",
            proptest::sample::select(vec!["ok", "(", "[", "(?m)^x$"])
                .prop_map(Value::from)
                .boxed(),
        ),
        field("maxBytes", (0u64..5).prop_map(Value::from).boxed()),
        field("cursor", (0u64..5).prop_map(Value::from).boxed()),
    )
        .prop_map(|(a, b, c, d, e)| [a, b, c, d, e].into_iter().flatten().collect())
}

/// The fields of the other job requests (`job_start`'s and the input's),
/// each absent, of its type, or any JSON value. What they start is a
/// harmless command (the `command` of the line), killed at the end.
fn job_fields() -> impl Strategy<Value = Vec<(&'static str, Value)>> {
    let field = |name: &'static str, valid: BoxedStrategy<Value>| {
        proptest::option::of(prop_oneof![2 => valid, 1 => json_value()])
            .prop_map(move |v| v.map(|v| (name, v)))
    };
    (
        field(
            "data",
            proptest::sample::select(vec!["", "x\n", "\u{4}"])
                .prop_map(Value::from)
                .boxed(),
        ),
        field(
            "key",
            proptest::sample::select(vec!["enter", "ctrl+c", "nope"])
                .prop_map(Value::from)
                .boxed(),
        ),
        field(
            "signal",
            prop_oneof![
                proptest::sample::select(vec!["TERM", "sigint", "NOPE"]).prop_map(Value::from),
                (0u64..20).prop_map(Value::from),
            ]
            .boxed(),
        ),
        field("stdin", any::<bool>().prop_map(Value::from).boxed()),
        field(
            "pty",
            (0u64..100, 0u64..40)
                .prop_map(|(c, r)| json!({"cols": c, "rows": r}))
                .boxed(),
        ),
        field("env", Just(json!({"ONLY": "job"})).boxed()),
    )
        .prop_map(|(a, b, c, d, e, f)| [a, b, c, d, e, f].into_iter().flatten().collect())
}

/// One line for `conch rpc`: a request with fields of any type, or bytes.
fn rpc_line() -> impl Strategy<Value = Vec<u8>> {
    let kind = prop_oneof![
        proptest::sample::select(vec![
            "bash",
            "bash",
            "abort_bash",
            "job_list",
            "job_poll",
            "job_start",
            "job_write",
            "job_close_stdin",
            "job_key",
            "job_signal",
            "job_kill",
        ])
        .prop_map(Value::from),
        json_value(),
    ];
    // A random command: a comment, with its text kept on one line.
    let command = prop_oneof![
        shell_command().prop_map(|c| Value::from(String::from_utf8_lossy(&c).into_owned())),
        any::<String>().prop_map(|t| Value::from(format!("true # {}", t.replace('\n', " ")))),
        json_value(),
    ];
    let request = (
        json_value(),
        kind,
        proptest::option::of(command),
        proptest::option::of(json_value()),
        proptest::option::of(json_value()),
        poll_fields(),
        job_fields(),
    )
        .prop_map(|(id, kind, command, cwd, timeout, poll, job)| {
            let mut r = json!({"id": id, "type": kind});
            for (name, value) in poll.into_iter().chain(job) {
                r[name] = value;
            }
            if let Some(c) = command {
                r["command"] = c;
            }
            if let Some(c) = cwd {
                // A cwd is one component at most (see above).
                r["cwd"] = match c {
                    Value::String(s) => Value::from(s.replace('/', "_").replace("..", "_")),
                    other => other,
                };
            }
            if let Some(t) = timeout {
                r["timeout"] = t;
            }
            r.to_string().into_bytes()
        });
    // A well-formed job_start (the fields above rarely all are), so that
    // the other job requests find jobs to act on.
    let start = (
        shell_command(),
        proptest::option::of(any::<bool>()),
        proptest::option::of(Just(json!({"cols": 80, "rows": 24}))),
        proptest::option::of(proptest::sample::select(vec![0.05, 1.0, 60.0])),
    )
        .prop_map(|(command, stdin, pty, timeout)| {
            let mut r = json!({"id": "s", "type": "job_start",
                "command": String::from_utf8_lossy(&command).into_owned()});
            if let Some(stdin) = stdin {
                r["stdin"] = stdin.into();
            }
            if let Some(pty) = pty {
                r["pty"] = pty;
            }
            if let Some(timeout) = timeout {
                r["timeout"] = timeout.into();
            }
            r.to_string().into_bytes()
        });
    let bytes =
        proptest::collection::vec(any::<u8>().prop_filter("one line", |b| *b != b'\n'), 0..40);
    prop_oneof![
        4 => request,
        2 => start,
        1 => bytes,
        1 => (1usize..256 * 1024).prop_map(|n| [b"\"".as_slice(), &vec![b'x'; n], b"\""].concat()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_command_line_ends_with_a_documented_status(argv in argv()) {
        let s = Scratch::new("argv");
        let ran = s.run(&argv, b"");
        if ran.code == 2 {
            prop_assert!(!ran.stderr.is_empty(), "a usage error says why: {:?}", argv);
        }
    }

    #[test]
    fn rpc_answers_every_line(lines in proptest::collection::vec(rpc_line(), 0..6)) {
        let s = Scratch::new("rpc-lines");
        let mut stdin = lines.join(&b'\n');
        stdin.push(b'\n');
        let ran = s.run(&["rpc", "--drain"], &stdin);
        prop_assert_eq!(ran.code, 0, "{}", ran.stderr);
        let expected = lines.iter().filter(|l| !l.trim_ascii().is_empty()).count();
        let got = responses(&ran.stdout).len();
        prop_assert_eq!(got, expected, "one response per line: {}", String::from_utf8_lossy(&ran.stdout));
        // Every job started is killed at the end, and its end told before
        // the server exits.
        let all = replies(&ran.stdout);
        let started = all.iter().filter(|v| v["command"] == "job_start" && v["success"] == true).count();
        let told = all.iter().filter(|v| v["type"] == "job_exit" && v["job"].is_u64()).count();
        prop_assert!(told >= started, "{} started, {} job_exit events: {}", started, told, String::from_utf8_lossy(&ran.stdout));
    }
}

#[test]
fn pty_with_a_missing_cwd_could_not_start() {
    let s = Scratch::new("pty-cwd");
    let ran = s.run(&["pty", "--cwd", "missing", "--", "true"], b"");
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr
            .starts_with("conch pty: Working directory does not exist: "),
        "{}",
        ran.stderr
    );
}
