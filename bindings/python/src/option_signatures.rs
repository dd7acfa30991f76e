//! The keyword parameters of the Python face's option types as text
//! signatures: generated from docs/api/schema.json by
//! core/tests/schema.rs (`CONCH_BLESS=1 cargo test -p conch-core --test
//! schema`); do not edit. `#[doc]` takes only literals and macros, so
//! each is a macro giving a literal.

/// The keyword parameters of `ShellOptions`.
macro_rules! shell_options {
    () => {
        "artifacts_dir=None, carriage_return='terminal', cwd=None, engine='auto', env=None, env_policy=None, job_artifact_cap=1073741824, mask=True, max_bytes=51200, max_jobs=16, non_interactive_env=True, prefix=None, sandbox=None, shell=None, snapshot='auto'"
    };
}
pub(crate) use shell_options;

/// The keyword parameters of `RunOptions`.
macro_rules! run_options {
    () => {
        "cwd=None, env=None, head=None, tail=None, timeout=None, yield_after=None"
    };
}
pub(crate) use run_options;

/// The keyword parameters of `ExecuteOptions`.
macro_rules! execute_options {
    () => {
        "artifacts_dir=None, carriage_return='terminal', cwd=None, env=None, env_policy=None, head=None, mask=True, max_bytes=51200, non_interactive_env=True, sandbox=None, shell=None, tail=None, timeout=None"
    };
}
pub(crate) use execute_options;

/// The keyword parameters of `JobOptions`.
macro_rules! job_options {
    () => {
        "cwd=None, env=None, pty=None, stdin=False, timeout=None"
    };
}
pub(crate) use job_options;

/// The keyword parameters of `PtyOptions`.
macro_rules! pty_options {
    () => {
        "cols=80, cwd=None, env=None, env_policy=None, mask=True, max_bytes=51200, non_interactive_env=True, rows=24, sandbox=None, shell=None, timeout=None"
    };
}
pub(crate) use pty_options;
