//! Integration tests of `conch_core::output` and `conch_core::artifact`:
//! the sanitizer, the bounded sink and its spill to artifact files, on real
//! directories, no process started but in `runs`. A new test of them goes
//! in a module here:
//!
//! - `artifact`: `ArtifactStore` and the sink's spill;
//! - `runs`: the sink at the end of real bash runs (a session's, a one-shot
//!   `execute_shell`'s): head/tail limits of the complete stream, when a
//!   run has an artifact;
//! - `props`: property tests over any input and any chunking;
//! - `vectors`: replay of `tests/vectors/{sanitize,sink,artifact}.json`
//!   and of the pushes of `mask.json`.
//!
//! The modules run in parallel threads of one process. Kept apart, in a
//! binary of its own: `output_alloc.rs`, which counts allocations with a
//! `#[global_allocator]` (the count is process-wide, and the allocator would
//! be every test's).

mod artifact;
mod props;
mod runs;
mod vectors;
