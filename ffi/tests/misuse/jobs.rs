//! A shell's jobs, started, fed, signalled, killed and waited for, and
//! the calls of its job-exit hook.

use super::*;

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
