//! Command text handling before a run: the tokenizer that both steps share,
//! trailing `head`/`tail` extraction, the interceptor, commands given
//! as bytes that are not UTF-8, and `less` asked to follow a file without
//! a terminal.

pub mod bytes;
pub(crate) mod follow;
pub mod intercept;
pub mod normalize;
pub(crate) mod segment;
pub mod tokenize;

pub use normalize::{NormalizedCommand, apply_head_tail, normalize_bash_command};
