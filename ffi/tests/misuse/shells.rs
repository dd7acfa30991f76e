//! Shells and their runs (with polls of jobs they do not have), the
//! bash tool and its calls, PTY runs.

use super::*;

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
