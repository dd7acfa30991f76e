//! Integration tests of `conch_core::pty`: `PtySession` on real
//! pseudo-terminals, key normalization and the virtual screen. A new test
//! of them goes in a module here:
//!
//! - `session`: runs on real terminals (identity, size, input, keys, the
//!   screen, timeouts, kills, errors);
//! - `keys`: replay of `tests/vectors/keys.json`;
//! - `props`: property tests of key normalization and the screen.
//!
//! The modules run in parallel threads of one process. Kept apart, in a
//! binary of its own: `pty_many_runs.rs`, which checks that the process
//! holds no more descriptors and no child after many runs (counts of the
//! whole process, which other tests running meanwhile would change).

#[path = "../common/mod.rs"]
mod common;

mod keys;
mod props;
mod session;
