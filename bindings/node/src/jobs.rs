//! Job numbers as a JS caller gives them. The options of `Shell.start` and
//! `Shell.poll` are the core's `JobOptions` and `PollOptions`, read by
//! `options::read`; `JobPoll` and `JobInfo` reach JS through
//! `result::Js`.

use conch_core::input::count_option;
use conch_core::jobs as core;

use crate::errors::{JsResult, core_error};

/// The job number a JS caller gave: a whole number >= 0; `Err(n)` for a
/// number past the ids a session can have (it names no job).
pub fn job_id(value: f64) -> JsResult<Result<core::JobId, u64>> {
    let n = count_option("job", value).map_err(core_error)? as u64;
    Ok(core::JobId::try_from(n).map_err(|_| n))
}

/// The error for a job number no session can have.
pub fn unknown_job(n: u64) -> conch_core::Error {
    conch_core::Error::NotFound(format!("no job {n} in this session"))
}
