//! The ways a Rust host runs a command: conch's persistent `Shell` (with
//! either of its session loops), or a `bash -c` process per command through
//! `std::process::Command`; and a bare reader of a command's output, the
//! machine's own limit.

use std::io::{PipeReader, Read};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use conch_core::process::grow_pipe;
use conch_core::{Engine, EngineChoice, RunOptions, Shell, ShellOptions, Snapshot};

/// Runs one command at a time and reports its output's size as it arrives.
pub trait Runner {
    /// Runs `command`, handing the length of each piece of output to
    /// `on_bytes`; returns the exit status (`None`: none was reported).
    fn run(&mut self, command: &str, on_bytes: &mut dyn FnMut(usize)) -> Option<i32>;
}

/// The conch runtimes, one per session loop (`docs/engine.md`): the
/// runtime's name in the records, the `engine` option it is made with, and
/// the loop [`Shell::engine`] must then report.
pub const CONCH_ENGINES: [(&str, EngineChoice, Engine); 2] = [
    // The default: the loop builtin (conch-loop.so) where bash loads it.
    ("conch", EngineChoice::Auto, Engine::Builtin),
    // The previous implementation, bash text run with `eval`.
    ("conch-eval", EngineChoice::Eval, Engine::Eval),
];

/// conch-core's `Shell`, started without an rc snapshot (as every runtime
/// in these benchmarks: no user rc file), running the loop its name (a
/// name of [`CONCH_ENGINES`]) says. A clone is another handle on the same
/// session.
#[derive(Clone)]
pub struct Conch {
    pub name: &'static str,
    pub shell: Arc<Shell>,
}

impl Conch {
    /// A session of the runtime `name`, checked to run the loop the name
    /// claims: panics otherwise (its figures would be another runtime's),
    /// and the harness fails.
    pub fn start(name: &str) -> Conch {
        let conch = Conch::session(name);
        let (_, option, runs) = engine_of(name);
        let engine = conch.shell.engine().expect("conch Shell::engine");
        assert_eq!(
            engine,
            runs,
            "{name}: made with engine {option:?}, the session runs the {} loop, not the {} loop",
            engine.as_str(),
            runs.as_str()
        );
        conch
    }

    /// A session of the runtime `name`, unchecked (the sessions of the
    /// concurrent scenario: made as the checked one is).
    pub fn session(name: &str) -> Conch {
        let (name, engine, _) = engine_of(name);
        let shell = Shell::new(ShellOptions {
            snapshot: Snapshot::None,
            engine,
            ..ShellOptions::default()
        })
        .expect("conch Shell::new");
        Conch {
            name,
            shell: Arc::new(shell),
        }
    }
}

fn engine_of(name: &str) -> (&'static str, EngineChoice, Engine) {
    *CONCH_ENGINES
        .iter()
        .find(|(n, ..)| *n == name)
        .unwrap_or_else(|| panic!("no conch runtime named {name}"))
}

impl Runner for Conch {
    fn run(&mut self, command: &str, on_bytes: &mut dyn FnMut(usize)) -> Option<i32> {
        self.shell
            .run(RunOptions::new(command), |chunk| on_bytes(chunk.len()))
            .expect("conch run")
            .exit_code
    }
}

/// `bash -c COMMAND` per command, stdout and stderr on one pipe, read in
/// 256 KiB pieces: the raw cost of a process per command, with no
/// sanitizing or bounding of the output.
#[derive(Clone)]
pub struct StdSpawn {
    /// Each command runs here (a process per command keeps no `cd`).
    pub cwd: Option<PathBuf>,
}

impl StdSpawn {
    pub fn command(&self, command: &str) -> (Command, PipeReader) {
        let (reader, writer) = std::io::pipe().expect("pipe");
        let mut cmd = Command::new("bash");
        cmd.arg("-c")
            .arg(command)
            .stdin(Stdio::null())
            .stdout(writer.try_clone().expect("dup pipe"))
            .stderr(writer);
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        (cmd, reader)
    }
}

impl Runner for StdSpawn {
    fn run(&mut self, command: &str, on_bytes: &mut dyn FnMut(usize)) -> Option<i32> {
        let (cmd, reader) = self.command(command);
        drain(cmd, reader, on_bytes)
    }
}

/// The command's output read and dropped through a pipe as large as
/// conch's (1 MiB), nothing else done with it: the most any runtime can
/// get out of the command on this machine (a reference, not a baseline).
pub struct RawPipe;

impl Runner for RawPipe {
    fn run(&mut self, command: &str, on_bytes: &mut dyn FnMut(usize)) -> Option<i32> {
        let (cmd, reader) = StdSpawn { cwd: None }.command(command);
        let fd = OwnedFd::from(reader);
        grow_pipe(&fd, 1 << 20);
        drain(cmd, PipeReader::from(fd), on_bytes)
    }
}

/// Starts `cmd` and reads its output to the end in 256 KiB pieces.
fn drain(mut cmd: Command, mut reader: PipeReader, on_bytes: &mut dyn FnMut(usize)) -> Option<i32> {
    let mut child = cmd.spawn().expect("spawn bash");
    // The writer ends live in `cmd` (and the child): drop ours for EOF.
    drop(cmd);
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => on_bytes(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => panic!("read: {e}"),
        }
    }
    child.wait().expect("wait").code()
}
