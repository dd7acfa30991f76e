//! Command text handling before a run: the tokenizer that both steps share,
//! trailing `head`/`tail` extraction, the interceptor, and commands given
//! as bytes that are not UTF-8.

pub mod bytes;
pub mod intercept;
pub mod normalize;
pub(crate) mod segment;
pub mod tokenize;

pub use normalize::{NormalizedCommand, apply_head_tail, normalize_bash_command};
