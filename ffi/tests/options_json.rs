//! `options_json`, the member of each option struct that carries the core's
//! serialized options: every option of `ShellOptions`, `RunOptions`,
//! `JobOptions`, `ExecuteOptions` and `PtyOptions` in the core's schema
//! reaches C through it (walked from the
//! schema, so one the core adds is checked here with no change of the
//! header or of this test), a wrong JSON type is `CONCH_ERR_INVALID_ARG`,
//! and an option set both as JSON and by its typed field is refused.

use std::ffi::{CStr, CString, c_int};
use std::ptr;

use conch::conch_status;
use conch::execute::*;
use conch::jobs::*;
use conch::pty::*;
use conch::result::*;
use conch::shell::*;
use conch::strings::*;
use serde_json::json;

fn last_error() -> String {
    // SAFETY: conch_last_error never returns NULL.
    unsafe { CStr::from_ptr(conch_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// A shell made with `json` as its `options_json` and `snapshot` "none"
/// unless the JSON sets it (NULL when refused).
fn shell(json: &serde_json::Value) -> *mut conch_shell {
    let text = CString::new(json.to_string()).unwrap();
    let none = CString::new("none").unwrap();
    // SAFETY: zeroed is every field's default (NULL, 0, false, None).
    let mut opts: conch_shell_options = unsafe { std::mem::zeroed() };
    if json.get("snapshot").is_none() {
        opts.snapshot = none.as_ptr();
    }
    opts.options_json = text.as_ptr();
    // SAFETY: every pointer is NULL or lives through the call.
    unsafe { conch_shell_new(&opts) }
}

/// The command (`true`) and the `options_json` text of a run or a job.
fn texts(json: &serde_json::Value) -> (CString, CString) {
    (
        CString::new("true").unwrap(),
        CString::new(json.to_string()).unwrap(),
    )
}

/// `conch_shell_run` of `true` with `json` as its `options_json`.
fn run(sh: *mut conch_shell, json: &serde_json::Value) -> c_int {
    let (command, text) = texts(json);
    let opts = conch_run_options {
        command: command.as_ptr(),
        options_json: text.as_ptr(),
        // SAFETY: zeroed is every other field's default.
        ..unsafe { std::mem::zeroed() }
    };
    let mut out: *mut conch_bash_result = ptr::null_mut();
    // SAFETY: `sh` is live, the pointers live through the call; the result
    // is freed once.
    unsafe {
        let rc = conch_shell_run(sh, &opts, None, ptr::null_mut(), &mut out);
        conch_bash_result_free(out);
        rc
    }
}

/// `conch_shell_start` of `true` with `json` as its `options_json`, the
/// job killed once started.
fn start(sh: *mut conch_shell, json: &serde_json::Value) -> c_int {
    let (command, text) = texts(json);
    let opts = conch_job_options {
        command: command.as_ptr(),
        options_json: text.as_ptr(),
        // SAFETY: zeroed is every other field's default.
        ..unsafe { std::mem::zeroed() }
    };
    let mut job = 0u32;
    // SAFETY: `sh` is live, the pointers live through the call; the poll is
    // freed once.
    unsafe {
        let rc = conch_shell_start(sh, &opts, &mut job);
        if rc == conch_status::CONCH_OK as c_int {
            let mut poll: *mut conch_job_poll = ptr::null_mut();
            conch_shell_kill_job(sh, job, &mut poll);
            conch_job_poll_free(poll);
        }
        rc
    }
}

/// `conch_execute_shell` of `true` with `json` as its `options_json` (the
/// shell unused: a one-shot run has none).
fn execute(_: *mut conch_shell, json: &serde_json::Value) -> c_int {
    let (command, text) = texts(json);
    let opts = conch_execute_options {
        command: command.as_ptr(),
        options_json: text.as_ptr(),
        // SAFETY: zeroed is every other field's default.
        ..unsafe { std::mem::zeroed() }
    };
    let mut out: *mut conch_bash_result = ptr::null_mut();
    // SAFETY: the pointers live through the call; the result is freed once.
    unsafe {
        let rc = conch_execute_shell(&opts, None, ptr::null_mut(), &mut out);
        conch_bash_result_free(out);
        rc
    }
}

/// `conch_pty_start` of `true` on a new terminal with `json` as its
/// `options_json` (the shell unused).
fn pty(_: *mut conch_shell, json: &serde_json::Value) -> c_int {
    let (command, text) = texts(json);
    let opts = conch_pty_options {
        command: command.as_ptr(),
        options_json: text.as_ptr(),
        // SAFETY: zeroed is every other field's default.
        ..unsafe { std::mem::zeroed() }
    };
    let mut out: *mut conch_pty_result = ptr::null_mut();
    // SAFETY: the pointers live through the call; the terminal and the
    // result are freed once.
    unsafe {
        let session = conch_pty_new();
        let rc = conch_pty_start(session, &opts, None, ptr::null_mut(), &mut out);
        conch_pty_result_free(out);
        conch_pty_free(session);
        rc
    }
}

const INVALID: c_int = conch_status::CONCH_ERR_INVALID_ARG as c_int;

#[test]
fn every_option_of_the_schema_reaches_c_through_options_json() {
    for (key, valid, wrong) in conch_core::wire::option_samples("ShellOptions") {
        let sh = shell(&json!({ &key: valid }));
        assert!(!sh.is_null(), "{key}: {valid}: {}", last_error());
        // SAFETY: a live handle, freed once.
        unsafe { conch_shell_free(sh) };
        assert!(shell(&json!({ &key: wrong })).is_null(), "{key}: {wrong}");
        assert!(
            last_error().contains("opts->options_json"),
            "{}",
            last_error()
        );
    }
    let sh = shell(&json!({}));
    assert!(!sh.is_null(), "{}", last_error());
    for (call, def) in [
        (run as fn(_, &_) -> c_int, "RunOptions"),
        (start, "JobOptions"),
        (execute, "ExecuteOptions"),
        (pty, "PtyOptions"),
    ] {
        for (key, valid, wrong) in conch_core::wire::option_samples(def) {
            let rc = call(sh, &json!({ &key: valid }));
            assert_eq!(
                rc,
                conch_status::CONCH_OK as c_int,
                "{def}.{key}: {}",
                last_error()
            );
            assert_eq!(
                call(sh, &json!({ &key: wrong })),
                INVALID,
                "{def}.{key}: {wrong}"
            );
            assert!(
                last_error().contains("opts->options_json"),
                "{}",
                last_error()
            );
        }
    }
    // SAFETY: a live handle, freed once.
    unsafe { conch_shell_free(sh) };
}

#[test]
fn an_option_set_both_ways_or_a_json_that_is_no_object_is_refused() {
    let cwd = CString::new(".").unwrap();
    let text = CString::new(r#"{"cwd": "/"}"#).unwrap();
    // SAFETY: zeroed is every field's default.
    let mut opts: conch_shell_options = unsafe { std::mem::zeroed() };
    opts.cwd = cwd.as_ptr();
    opts.options_json = text.as_ptr();
    // SAFETY: the pointers live through the call.
    assert!(unsafe { conch_shell_new(&opts) }.is_null());
    assert_eq!(
        last_error(),
        "conch_shell_new: opts->options_json sets \"cwd\", which opts->cwd sets too: set it one way"
    );
    assert!(shell(&json!([1])).is_null());
    assert_eq!(
        last_error(),
        "conch_shell_new: opts->options_json must be a JSON object"
    );
    let sh = shell(&json!({"max_bytes": 10, "env": {"CONCH_FROM_JSON": "yes"}}));
    assert!(!sh.is_null(), "{}", last_error());
    // SAFETY: a live handle, freed once.
    unsafe { conch_shell_free(sh) };
}
