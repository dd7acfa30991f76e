//! Command text handling before a run: the tokenizer that both steps share,
//! trailing `head`/`tail` extraction, and the interceptor.

pub mod intercept;
pub mod normalize;
pub mod segment;
pub mod tokenize;

pub use normalize::{NormalizedCommand, apply_head_tail, normalize_bash_command};
