//! Empty: this crate exists for its `Cargo.toml`, which asks for the union
//! of the features conch's crates want of their shared dependencies, so a
//! build of any one crate compiles those dependencies as a build of all of
//! them does (and reuses what that build compiled).
