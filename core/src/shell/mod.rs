//! The persistent bash engine.
