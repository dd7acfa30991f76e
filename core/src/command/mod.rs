//! Command text handling before a run.
