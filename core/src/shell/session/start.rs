//! A session's bash getting started: spawned with its start-up text, or
//! (a command's `exit`) started again in the same process, and the wait for
//! its answer.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::event_loop::wait_record_until;
use super::{Bash, STARTUP_TIMEOUT, Shell, State, reap};
use crate::process::io::{send_all, socketpair};
use crate::process::spare::SpareChannel;
use crate::process::spawner::{HostDeath, Launch, dev_null};
use crate::process::supervised::{Supervised, describe_exit, spawn_supervised};
use crate::process::tree;
use crate::protocol::{self, StatusParser};
use crate::shell::engine::Engine;
use crate::{Error, Result};

impl Shell {
    /// Starts bash in `cwd` and sends it the start-up text (the snapshot
    /// and the protocol loop); [`Shell::ready`] waits for its answer.
    /// With `restore`, the session's state (see [`state`]) the bash runs
    /// in place of the snapshot, with an empty environment (the state sets
    /// the session's). It goes in the start-up text, never into a file:
    /// it holds the session's variables, secrets included, and a file
    /// would outlive a host that is killed.
    pub(super) fn spawn_bash(&self, cwd: &Path, restore: Option<&str>) -> Result<Bash> {
        let (theirs, input) = socketpair()?;
        // A spare is a copy of a bash that started as a new one does.
        let spare = match restore.is_none() && self.forks_spares() {
            true => Some(SpareChannel::new(cwd)?),
            false => None,
        };
        let mut launch = Launch {
            program: self.config.shell.clone(),
            // `$0` is the shell's name, as in `bash -c` run from a `PATH`.
            arg0: Some(self.shell_name().into()),
            args: ["--noprofile", "--norc", "-c", protocol::BOOTSTRAP]
                .map(OsString::from)
                .into(),
            env: match restore {
                Some(_) => Vec::new(),
                None => self.config.env.clone(),
            },
            cwd: Some(cwd.to_path_buf()),
            on_host_death: HostDeath::Freeze,
            sandbox: self.config.confinement.clone(),
            ..Launch::default()
        };
        let (spare, theirs_spare) = spare.unzip();
        if let Some(theirs) = &theirs_spare {
            launch.fds.push((theirs.as_raw_fd(), protocol::SPARE_FD));
        }
        let stdin = dev_null().map_err(|e| Error::io("cannot open /dev/null", e))?;
        let fifos = self.config.fifos.clone();
        let supervised = spawn_supervised(launch, stdin, Some(theirs), fifos.as_deref())?;
        let bash = self.bash(supervised, input, fifos, spare);
        let text = self.startup_text(&bash, Some(restore));
        if let Err(e) = send_all(&bash.input, &text) {
            return Err(self.failed_start(bash, format!("cannot send to it: {e}")));
        }
        Ok(bash)
    }

    /// Our side of a bash just started (or a spare that took over), before
    /// it answers.
    pub(super) fn bash(
        &self,
        supervised: Supervised,
        input: OwnedFd,
        fifos: Option<PathBuf>,
        spare: Option<SpareChannel>,
    ) -> Bash {
        let Supervised {
            child,
            out,
            status,
            pidfd,
        } = supervised;
        let mut bash = Bash {
            children: tree::ChildrenOf::new(child.pid()),
            child,
            input,
            out,
            status,
            pidfd,
            parser: StatusParser::default(),
            seq: 0,
            ready: false,
            engine: Engine::Eval,
            replaced: false,
            ready_by: None,
            fifos,
            exit_trap: String::new(),
            spare,
        };
        bash.exit_trap = protocol::exit_trap(&protocol::ExitTrap {
            pipes: &bash.pipes(),
            status_fd: bash.status.as_raw_fd(),
            shell: &self.config.shell.to_string_lossy(),
            name: &self.shell_name(),
        });
        bash
    }

    /// The shell's file name (`bash`): its `$0` in the session.
    pub(super) fn shell_name(&self) -> String {
        self.config.shell.file_name().map_or_else(
            || self.config.shell.to_string_lossy().into_owned(),
            |name| name.to_string_lossy().into_owned(),
        )
    }

    /// The start-up text for `bash`: `first` for the bash the host started
    /// (its environment set, `Some` of the state it restores, if any),
    /// `None` for the one a command's `exit` put in its place.
    pub(super) fn startup_text(&self, bash: &Bash, first: Option<Option<&str>>) -> Vec<u8> {
        let restore = first.flatten();
        // A bash that takes the place of one ended by `exit` is where that
        // one was; a new one starts in `start_cwd` already.
        let enter = first
            .is_none()
            .then(|| self.move_off_removed_cwd())
            .flatten();
        protocol::startup(&protocol::Startup {
            snapshot: self
                .config
                .snapshot
                .as_deref()
                .filter(|_| restore.is_none()),
            unset_script: if restore.is_some() {
                ""
            } else {
                &self.config.unset_script
            },
            restore,
            exit_trap: &bash.exit_trap,
            builtin: self
                .config
                .engine
                .builtin
                .as_deref()
                .map(|so| protocol::LoopBuiltin {
                    so,
                    shell: &self.config.shell,
                    name: self.shell_name(),
                    // Only the bash the host started has the channel.
                    spare: first.is_some() && bash.spare.is_some(),
                }),
            out_fd: bash.out.as_raw_fd(),
            enter: enter.as_deref(),
            exports: if first.is_some() {
                &[]
            } else {
                &self.config.env
            },
        })
    }

    /// Sends the start-up text to the fresh bash a command's `exit` put in
    /// the place of the old one; the next run waits for its answer.
    pub(super) fn restart(&self, bash: &mut Bash) -> std::io::Result<()> {
        bash.parser = StatusParser::default();
        bash.seq = 0;
        bash.ready = false;
        bash.ready_by = None;
        bash.replaced = true;
        send_all(&bash.input, &self.startup_text(bash, None))
    }

    /// Waits, once per bash, until it has sourced the snapshot and entered
    /// the protocol loop; a bash that does not is killed and reported.
    pub(super) fn ready(&self, state: &mut State) -> Result<()> {
        self.ready_until(state, None).map(drop)
    }

    /// [`Shell::ready`], waiting no later than `until`: false if bash has
    /// not answered by then (and its start-up time is not up).
    pub(super) fn ready_until(&self, state: &mut State, until: Option<Instant>) -> Result<bool> {
        let bash = state.bash.as_mut().expect("bash started");
        if bash.ready {
            return Ok(true);
        }
        let by = *bash
            .ready_by
            .get_or_insert_with(|| Instant::now() + STARTUP_TIMEOUT);
        let started = match wait_record_until(bash, 0, (by, STARTUP_TIMEOUT), until) {
            Ok(None) => return Ok(false),
            Ok(Some(record)) => {
                bash.engine = Engine::of_ready(record.status);
                match &self.config.engine.builtin {
                    Some(so) if self.config.engine.required && bash.engine != Engine::Builtin => {
                        Err(format!(
                            "it did not load the loop builtin {} (engine \"builtin\"; a bash \
                             whose version the builtin was not built for refuses it)",
                            so.display()
                        ))
                    }
                    _ => Ok(()),
                }
            }
            Err(why) => Err(why),
        };
        match started {
            Ok(()) => {
                bash.ready = true;
                self.engine.store(bash.engine as u8 + 1, Ordering::SeqCst);
                state.started = true;
                Ok(true)
            }
            Err(why) => {
                let bash = state.bash.take().expect("bash started");
                self.bash_pid.store(0, Ordering::SeqCst);
                Err(self.failed_start(bash, why))
            }
        }
    }

    pub(super) fn failed_start(&self, bash: Bash, why: String) -> Error {
        let ended = match reap(bash) {
            Some(status) => describe_exit(status),
            None => "it could not be waited for".to_string(),
        };
        Error::Spawn(format!(
            "{} did not start a session: {why} ({ended})",
            self.config.shell.display()
        ))
    }
}
