//! Output pipeline: bytes to sanitized, bounded text.

pub mod notice;
