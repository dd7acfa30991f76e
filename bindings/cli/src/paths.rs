//! Where `conch` keeps artifacts when no `--artifacts`/`--dir` is given, so
//! that `conch artifact ID` finds what `conch run` spilled.

use std::path::PathBuf;

/// `$CONCH_ARTIFACTS_DIR`, else `$XDG_STATE_HOME/conch/artifacts`, else
/// `~/.local/state/conch/artifacts`, else `<tmp>/conch-artifacts-<uid>`.
pub fn default_artifacts_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("CONCH_ARTIFACTS_DIR") {
        return dir.into();
    }
    let state = var("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".local/state")));
    match state {
        Some(state) => state.join("conch/artifacts"),
        None => std::env::temp_dir().join(format!(
            "conch-artifacts-{}",
            rustix::process::getuid().as_raw()
        )),
    }
}
