//! Output pipeline: bytes to sanitized, bounded text.
