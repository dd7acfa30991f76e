//! `conch artifact ID`: prints an artifact (`artifact://ID`) or a range of
//! its lines.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use conch_core::ArtifactStore;

use crate::args::{self, HELP};
use crate::paths::default_artifacts_dir;

/// Print a spilled full output (artifact://ID), or some of its lines
#[derive(clap::Args)]
#[command(
    override_usage = "conch artifact ID [--dir DIR] [--offset N] [--limit N]",
    help_template = HELP,
    after_help = "Default directory: $CONCH_ARTIFACTS_DIR, else $XDG_STATE_HOME/conch/artifacts, \
                  else ~/.local/state/conch/artifacts."
)]
pub struct Args {
    /// the artifact: its ID or artifact://ID
    #[arg(value_name = "ID")]
    id: OsString,
    /// where the artifacts are
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    dir: Option<PathBuf>,
    /// first line to print (0-based)
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    offset: Option<f64>,
    /// most lines to print
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    limit: Option<f64>,
}

pub fn main(p: Args) -> Result<i32, String> {
    let id = args::text("ID", p.id)?;
    let offset = args::count("--offset", p.offset)?.unwrap_or(0);
    let limit = args::count("--limit", p.limit)?;
    let dir = p.dir.unwrap_or_else(default_artifacts_dir);
    let store = ArtifactStore::new(dir);
    match store.read(&id, offset, limit) {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth reporting.
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            Ok(0)
        }
        Err(e) => {
            crate::eprint_line(&e.to_string());
            Ok(1)
        }
    }
}
