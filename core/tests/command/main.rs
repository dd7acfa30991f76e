//! Integration tests of the text a command line and its result go through
//! (`conch_core::command`, and the pure notice and render texts built from
//! a result): tokenizing, normalizing, intercepting, head/tail, the notice
//! and preview texts. Pure functions; no process is started except `bash`
//! itself in `normalize_bash`. A new test of these functions goes in a
//! module here:
//!
//! - `props`: property tests (any input, no panic, contracts kept);
//! - `normalize_bash`: extracted limits checked against real bash;
//! - `vectors`: replay of `tests/vectors/{normalize,intercept,notice,render}.json`
//!   (a new vector file of these helpers gets its replay here).
//!
//! The modules of a binary run in parallel threads of one process: a test
//! that changes or measures the whole process gets a binary of its own,
//! `core/tests/<area>_<what>.rs` (see `core/tests/README.md`).

mod normalize_bash;
mod props;
mod vectors;
