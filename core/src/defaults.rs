//! The defaults of the options every face exposes, in one table.
//!
//! Each row of [`option_default!`](crate::option_default) is a default as a
//! literal, so that a face which needs it at compile time (Python's
//! signatures, whose text must be a string literal) takes it from here as
//! well as the core's own `Default` impls and the constants below. A face
//! never writes a default again: it leaves an option out and the core fills
//! it in, or it names the constant.

use std::time::Duration;

/// The default of the option `name`, as a literal: `option_default!(max_bytes)`
/// is `51200`. With `=> callback`, the row is handed to `callback!` with its
/// kind (`str`, `num` or `bool`) first, e.g. `callback!(str "auto")`, for a
/// face to spell it in its own language.
///
/// | row | value | meaning |
/// |---|---|---|
/// | `max_bytes` | 51200 | bytes of output kept in memory per run (50 KiB) |
/// | `snapshot` | `"auto"` | the user's rc, captured once (see [`crate::shell::Snapshot`]) |
/// | `engine` | `"auto"` | the loop builtin where bash loads it, else the eval loop (see [`crate::shell::engine`]) |
/// | `env_inherit` | `"all"` | every host variable reaches the shell (see [`crate::process::env::Inherit`]) |
/// | `non_interactive_env` | true | pagers, editors and prompts are turned off |
/// | `tool_cwd` | `"."` | the bash tool's project directory: the host's cwd |
/// | `tool_timeout_secs` | 300.0 | the bash tool's timeout when the model gives none |
/// | `tool_min_timeout_secs` | 1.0 | the shortest timeout the bash tool takes |
/// | `tool_max_timeout_secs` | 3600.0 | the longest timeout the bash tool takes |
/// | `max_timeout_secs` | 2147483.647 | the longest timeout any face takes (2^31 - 1 ms, about 24.8 days: JavaScript's longest timer) |
/// | `update_interval_secs` | 0.05 | least time between two live updates of a tool call |
/// | `interceptor` | false | the bash tool refuses no command |
/// | `virtual_terminal` | false | the bash tool runs no command on a PTY |
/// | `has_ui` | false | a host shows no UI |
/// | `pty_cols`, `pty_rows` | 80, 24 | a terminal whose size the host does not give (the classic terminal, on every face) |
/// | `max_jobs` | 16 | jobs a session runs at once; a start beyond is refused |
/// | `job_artifact_cap` | 1073741824 | bytes one job's artifact takes (1 GiB); past it the file stops growing |
/// | `mask` | true | values of variables of the given env whose names look secret are masked in what conch returns (see [`crate::output::mask`]) |
#[macro_export]
macro_rules! option_default {
    ($name:ident) => {
        $crate::option_default!($name => $crate::__option_default_value)
    };
    (max_bytes => $($then:tt)+) => { $($then)+!(num 51200) };
    (snapshot => $($then:tt)+) => { $($then)+!(str "auto") };
    (engine => $($then:tt)+) => { $($then)+!(str "auto") };
    (env_inherit => $($then:tt)+) => { $($then)+!(str "all") };
    (non_interactive_env => $($then:tt)+) => { $($then)+!(bool true) };
    (tool_cwd => $($then:tt)+) => { $($then)+!(str ".") };
    (tool_timeout_secs => $($then:tt)+) => { $($then)+!(num 300.0) };
    (tool_min_timeout_secs => $($then:tt)+) => { $($then)+!(num 1.0) };
    (tool_max_timeout_secs => $($then:tt)+) => { $($then)+!(num 3600.0) };
    (max_timeout_secs => $($then:tt)+) => { $($then)+!(num 2147483.647) };
    (update_interval_secs => $($then:tt)+) => { $($then)+!(num 0.05) };
    (interceptor => $($then:tt)+) => { $($then)+!(bool false) };
    (virtual_terminal => $($then:tt)+) => { $($then)+!(bool false) };
    (has_ui => $($then:tt)+) => { $($then)+!(bool false) };
    (pty_cols => $($then:tt)+) => { $($then)+!(num 80) };
    (pty_rows => $($then:tt)+) => { $($then)+!(num 24) };
    (max_jobs => $($then:tt)+) => { $($then)+!(num 16) };
    (job_artifact_cap => $($then:tt)+) => { $($then)+!(num 1073741824) };
    (mask => $($then:tt)+) => { $($then)+!(bool true) };
}

/// A row of [`option_default!`](crate::option_default) as the bare literal.
#[doc(hidden)]
#[macro_export]
macro_rules! __option_default_value {
    ($kind:ident $value:literal) => {
        $value
    };
}

/// Bytes of output kept in memory per run.
pub const MAX_BYTES: usize = option_default!(max_bytes);
/// The rc snapshot a session sources, as the faces spell it.
pub const SNAPSHOT: &str = option_default!(snapshot);
/// Which loop runs a session's commands, as the faces spell it.
pub const ENGINE: &str = option_default!(engine);
/// Which host variables reach the shell, as the faces spell it.
pub const ENV_INHERIT: &str = option_default!(env_inherit);
/// Whether the non-interactive environment is applied.
pub const NON_INTERACTIVE_ENV: bool = option_default!(non_interactive_env);
/// The name the model calls the bash tool by.
pub const TOOL_NAME: &str = "bash";
/// The name the model calls the job tool by.
pub const JOB_TOOL_NAME: &str = "job";
/// The bash tool's project directory.
pub const TOOL_CWD: &str = option_default!(tool_cwd);
/// The bash tool's timeout when the model gives none, in seconds.
pub const TOOL_TIMEOUT_SECS: f64 = option_default!(tool_timeout_secs);
/// The shortest timeout the bash tool takes, in seconds.
pub const TOOL_MIN_TIMEOUT_SECS: f64 = option_default!(tool_min_timeout_secs);
/// The longest timeout the bash tool takes, in seconds.
pub const TOOL_MAX_TIMEOUT_SECS: f64 = option_default!(tool_max_timeout_secs);
/// The longest timeout a face takes, in seconds: longer is refused as a
/// mistake (a unit slip, `1e300`), not clamped.
pub const MAX_TIMEOUT_SECS: f64 = option_default!(max_timeout_secs);
/// Least time between two live updates of a tool call.
pub const UPDATE_INTERVAL: Duration =
    Duration::from_nanos((option_default!(update_interval_secs) * 1e9) as u64);
/// Whether the bash tool refuses commands a host has a tool for.
pub const INTERCEPTOR: bool = option_default!(interceptor);
/// Whether the bash tool runs commands on a PTY when the host has a UI.
pub const VIRTUAL_TERMINAL: bool = option_default!(virtual_terminal);
/// Whether the host shows a UI.
pub const HAS_UI: bool = option_default!(has_ui);
/// The width of a terminal whose size the host does not give.
pub const PTY_COLS: u16 = option_default!(pty_cols);
/// The height of a terminal whose size the host does not give.
pub const PTY_ROWS: u16 = option_default!(pty_rows);
/// Jobs a session runs at once, at most.
pub const MAX_JOBS: usize = option_default!(max_jobs);
/// Bytes one job's artifact takes, at most (1 GiB).
pub const JOB_ARTIFACT_CAP: u64 = option_default!(job_artifact_cap);
/// Whether secrets of the given env are masked (see [`crate::Mask`]).
pub const MASK: bool = option_default!(mask);

#[cfg(test)]
mod tests {
    use super::*;

    /// A callback that shows the kind it was handed.
    macro_rules! spelled {
        ($kind:ident $value:literal) => {
            concat!(stringify!($kind), " ", $value)
        };
    }

    #[test]
    fn the_table_reads_as_the_constants() {
        assert_eq!(MAX_BYTES, 51_200);
        assert_eq!(UPDATE_INTERVAL, Duration::from_millis(50));
        assert_eq!(
            (
                TOOL_MIN_TIMEOUT_SECS,
                TOOL_TIMEOUT_SECS,
                TOOL_MAX_TIMEOUT_SECS
            ),
            (1.0, 300.0, 3600.0)
        );
        assert_eq!(option_default!(snapshot => spelled), "str auto");
        assert_eq!(option_default!(max_bytes => spelled), "num 51200");
    }
}
