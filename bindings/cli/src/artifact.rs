//! `conch artifact ID`: prints an artifact (`artifact://ID`) or a range of
//! its lines.

use std::io::Write;
use std::path::PathBuf;

use conch_core::ArtifactStore;

use crate::args::{Mode, parse};
use crate::paths::default_artifacts_dir;

pub const USAGE: &str = "\
conch artifact ID [--dir DIR] [--offset N] [--limit N]

Prints artifact ID (or artifact://ID): from line --offset (0-based, default 0),
at most --limit lines. Default directory: $CONCH_ARTIFACTS_DIR, else
$XDG_STATE_HOME/conch/artifacts, else ~/.local/state/conch/artifacts.";

pub fn main(args: impl Iterator<Item = String>) -> Result<i32, String> {
    let p = parse(args, &["dir", "offset", "limit"], &[], Mode::Anywhere)?;
    let [id] = p.words.as_slice() else {
        return Err("expected one artifact ID".into());
    };
    let dir = p
        .text("dir")
        .map(PathBuf::from)
        .unwrap_or_else(default_artifacts_dir);
    let store = ArtifactStore::new(dir);
    match store.read(id, p.value("offset")?.unwrap_or(0), p.value("limit")?) {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth reporting.
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            Ok(0)
        }
        Err(e) => {
            eprintln!("{e}");
            Ok(1)
        }
    }
}
