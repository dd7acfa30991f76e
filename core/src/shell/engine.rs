//! Which loop runs a session's commands inside bash.
//!
//! Two loops speak the one protocol ([`crate::protocol`]):
//!
//! - **the loop builtin** (`builtin/conch_loop.c`, `conch-loop.so`): a bash
//!   loadable builtin, loaded with `enable -f`, that runs each command
//!   through bash's own parser as `bash -c` input, at top level. Commands
//!   behave as under `bash -c` (its syntax error messages, `$LINENO`,
//!   `break`, one `+` of `set -x`, no trap of the session's in `trap -p`,
//!   no descriptor of the session's in any process of the command), and a
//!   run costs bash about half the CPU. It is a separate program under
//!   GPL-3.0-or-later: bash loads it, conch never links it.
//! - **the eval loop**: bash text that `eval`s each command. It runs on any
//!   bash 4 or newer.
//!
//! A session asks for the builtin when it can find it and its `engine`
//! option allows ([`EngineChoice`]); bash loads it only if its version is one
//! the builtin was written for (the builtin's own check), and otherwise
//! runs the eval loop. The first record bash sends says which loop
//! answered ([`Engine::of_ready`]).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::LazyLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::defaults;
use crate::error::{BadValue, Error, Result};

/// The builtin's file, installed beside conch's library.
pub const FILE_NAME: &str = "conch-loop.so";

/// Chooses the loop when the `engine` option is `"auto"`: `builtin`,
/// `eval`, or unset (or empty) for the default. The test command runs
/// every suite under each loop with it.
pub const CONCH_ENGINE: &str = "CONCH_ENGINE";

/// The path of the builtin's file, when set: the only place it is looked
/// for (an empty value: nowhere).
pub const CONCH_LOOP_BUILTIN: &str = "CONCH_LOOP_BUILTIN";

/// Run 0's status from the loop builtin (the eval loop's is 0).
const READY_BUILTIN: i32 = 1;

/// The `engine` option: which loop a session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EngineChoice {
    /// The builtin where it loads, else the eval loop; `CONCH_ENGINE`
    /// decides instead when set.
    Auto,
    /// The builtin or no session: a bash that cannot load it fails to
    /// start.
    Builtin,
    /// The eval loop.
    Eval,
}

/// The loop a session's bash runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// The loop builtin, `conch-loop.so`.
    Builtin,
    /// The eval loop.
    Eval,
}

impl Engine {
    /// The name of the loop, as the option and every face spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Builtin => "builtin",
            Engine::Eval => "eval",
        }
    }

    /// The loop that answered, from the status of its first record (run 0).
    pub(crate) fn of_ready(status: i32) -> Engine {
        if status == READY_BUILTIN {
            Engine::Builtin
        } else {
            Engine::Eval
        }
    }
}

/// What a session asks bash for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wanted {
    /// The builtin's file, to try; `None`: the eval loop.
    pub builtin: Option<PathBuf>,
    /// Whether a bash that runs the eval loop instead is a failed start.
    pub required: bool,
}

impl Wanted {
    /// What the `engine` option (and, for `auto`, `CONCH_ENGINE`) asks
    /// for, with the builtin's file found. Asking for the builtin when no
    /// file is found is an error.
    pub(crate) fn resolve(choice: EngineChoice) -> Result<Wanted> {
        let choice = match choice {
            EngineChoice::Auto => from_env()?,
            chosen => chosen,
        };
        let builtin = match choice {
            EngineChoice::Eval => None,
            _ => locate(),
        };
        if choice == EngineChoice::Builtin && builtin.is_none() {
            return Err(Error::Spawn(format!(
                "the loop builtin ({FILE_NAME}) is not installed: it is looked for beside conch's \
                 library, or where {CONCH_LOOP_BUILTIN} says; engine \"auto\" runs the eval loop without it"
            )));
        }
        Ok(Wanted {
            builtin,
            required: choice == EngineChoice::Builtin,
        })
    }
}

impl Default for EngineChoice {
    fn default() -> Self {
        defaults::ENGINE.parse().expect("the default engine parses")
    }
}

/// `"auto"`, `"builtin"` or `"eval"`, as a face or the environment gives it.
impl FromStr for EngineChoice {
    type Err = BadValue;

    fn from_str(text: &str) -> Result<Self, BadValue> {
        match text {
            "auto" => Ok(EngineChoice::Auto),
            "builtin" => Ok(EngineChoice::Builtin),
            "eval" => Ok(EngineChoice::Eval),
            other => Err(BadValue::new(
                r#""auto", "builtin" or "eval""#,
                format_args!("{other:?}"),
            )),
        }
    }
}

/// `CONCH_ENGINE`, as a choice (`auto` when unset or empty).
fn from_env() -> Result<EngineChoice> {
    match std::env::var(CONCH_ENGINE) {
        Err(_) => Ok(EngineChoice::Auto),
        Ok(text) if text.is_empty() => Ok(EngineChoice::Auto),
        Ok(text) => crate::input::parse_option(CONCH_ENGINE, &text),
    }
}

/// The builtin's file: where `CONCH_LOOP_BUILTIN` says, else beside the
/// file that holds conch's code (the C library, the Python or Node module,
/// the `conch` program) or in `../lib` from it (a `bin/` beside `lib/`),
/// else the one this build made.
pub(crate) fn locate() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(CONCH_LOOP_BUILTIN) {
        let path = PathBuf::from(path);
        return path.is_file().then_some(path);
    }
    static FOUND: LazyLock<Option<PathBuf>> = LazyLock::new(|| {
        let beside = own_file().and_then(|file| {
            let dir = file.parent()?.to_path_buf();
            [dir.join(FILE_NAME), dir.join("../lib").join(FILE_NAME)]
                .into_iter()
                .find(|path| path.is_file())
        });
        beside.or_else(|| {
            option_env!("CONCH_LOOP_BUILT")
                .map(PathBuf::from)
                .filter(|path| path.is_file())
        })
    });
    FOUND.clone()
}

/// The file (shared object or program) this code was loaded from.
fn own_file() -> Option<PathBuf> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let here = own_file as *const libc::c_void;
    // SAFETY: `dladdr` fills `info` for an address of a loaded object (a
    // function of this one) and returns 0 otherwise; `dli_fname` is then a
    // C string owned by the loader, copied at once.
    let name = unsafe {
        if libc::dladdr(here, info.as_mut_ptr()) == 0 {
            return None;
        }
        let info = info.assume_init();
        if info.dli_fname.is_null() {
            return None;
        }
        std::ffi::CStr::from_ptr(info.dli_fname).to_owned()
    };
    Path::new(OsStr::from_bytes(name.to_bytes()))
        .canonicalize()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ready_record_names_the_loop() {
        assert_eq!(Engine::of_ready(READY_BUILTIN), Engine::Builtin);
        assert_eq!(Engine::of_ready(0), Engine::Eval);
    }

    #[test]
    fn this_build_finds_its_builtin() {
        let path = locate().expect("the build made conch-loop.so");
        assert_eq!(path.file_name().unwrap(), FILE_NAME);
    }
}
