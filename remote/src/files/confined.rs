//! A file request inside a sandbox: the server starts its files helper
//! (its own binary, `conch files-helper`) under the sandbox, exactly as a
//! session's bash is started, gives it the request on stdin and reads the
//! answer on stdout. The helper performs the same [`super::ops`] the
//! server performs for a request no sandbox confines, so what a request
//! may touch is decided by the kernel's confinement, never by a path check.

use std::io::{Read, Write};

use conch_core::wire::{error_from_wire, error_to_wire};
use conch_core::{Error, ProgramOutput};
use serde_json::{Value, json};

use super::{FileRequest, HELPER_ARG, ops};

/// Performs `request` through the helper, which `start` runs (inside the
/// sandbox) with the given argv tail and stdin; its reply's value.
pub(crate) fn through_helper(
    request: &FileRequest,
    start: impl FnOnce(&[&str], &[u8]) -> Result<ProgramOutput, Error>,
) -> Result<Value, Error> {
    let input = serde_json::to_vec(request).expect("a file request serializes");
    let output = start(&[HELPER_ARG], &input)?;
    let answer: Option<Value> = serde_json::from_slice(&output.stdout).ok();
    match answer.as_ref().and_then(Value::as_object) {
        Some(answer) if answer.contains_key("ok") => Ok(answer["ok"].clone()),
        Some(answer) => match answer.get("error").and_then(Value::as_object) {
            Some(error) => Err(error_from_wire(error).unwrap_or_else(|| helper_failed(&output))),
            None => Err(helper_failed(&output)),
        },
        None => Err(helper_failed(&output)),
    }
}

/// The error of a helper that gave no answer (it could not start in the
/// sandbox, or died).
fn helper_failed(output: &ProgramOutput) -> Error {
    let said = String::from_utf8_lossy(&output.stderr);
    Error::Spawn(format!(
        "the files helper gave no answer ({}){}{}",
        output.status,
        if said.trim().is_empty() { "" } else { ": " },
        said.trim()
    ))
}

/// The helper's side (`conch files-helper`): one request from stdin,
/// performed, its answer to stdout. Returns the exit code: 0 once an
/// answer is written (a refused request included).
pub fn helper_main() -> i32 {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("cannot read the request: {e}");
        return 2;
    }
    let answer = match serde_json::from_slice::<FileRequest>(&input) {
        Ok(request) => match ops::perform(request) {
            Ok(value) => json!({ "ok": value }),
            Err(err) => json!({ "error": error_to_wire(&err) }),
        },
        Err(e) => {
            eprintln!("not a file request: {e}");
            return 2;
        }
    };
    let mut out = std::io::stdout().lock();
    let written = serde_json::to_writer(&mut out, &answer)
        .map_err(std::io::Error::from)
        .and_then(|()| out.flush());
    match written {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("cannot write the answer: {e}");
            2
        }
    }
}
