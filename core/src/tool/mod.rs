//! The tool surfaces: what a host calls when the model calls `bash`.

pub mod render;
