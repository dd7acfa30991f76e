//! A session on a server, with the local [`conch_core::Shell`]'s calls:
//! `run` streams the output to `on_chunk` and returns the same
//! [`BashResult`]; the run's cancel token aborts it on the server.

use conch_core::shell::reentry::BusyKey;
use conch_core::{BashResult, Engine, Network, RunOptions};
use serde_json::{Map, Value};

use super::artifacts::RemoteArtifacts;
use super::session::Session;
use super::waiting::{RemoteRun, read_result};
use super::{RemoteError, with_options};

pub struct RemoteShell {
    session: Session,
    sandbox_applied: Value,
    /// Marks the threads waiting for a run of this session: a run or a job
    /// started from inside that run's callback would wait for the server's
    /// shell, which the run holds until the callback returns, so it fails
    /// at once (as locally).
    busy: BusyKey,
}

impl RemoteShell {
    pub(super) fn new(session: Session, sandbox_applied: Value) -> Self {
        RemoteShell {
            session,
            sandbox_applied,
            busy: BusyKey::new(),
        }
    }

    pub(super) fn session(&self) -> &Session {
        &self.session
    }

    /// The session's id on the server.
    pub fn id(&self) -> &str {
        self.session.id()
    }

    /// What of the sandbox the server applied, serialized (`null`: none).
    pub fn sandbox_applied(&self) -> &Value {
        &self.sandbox_applied
    }

    /// Runs a command on the server, as [`conch_core::Shell::run`] does
    /// locally.
    pub fn run(
        &self,
        opts: RunOptions,
        mut on_chunk: impl FnMut(&str),
    ) -> Result<BashResult, RemoteError> {
        self.start_run(opts)?.finish(&mut on_chunk)
    }

    /// Asks the server to run a command; the returned run is driven by the
    /// caller, on its thread, as a local [`conch_core::Run`] is.
    pub fn start_run(&self, opts: RunOptions) -> Result<RemoteRun, RemoteError> {
        self.check_turn("a run was started")?;
        let cancel = opts.cancel.clone();
        let options = serde_json::to_value(&opts).expect("run options serialize");
        let waiting = self.session.ask("run", with_options(options), cancel)?;
        Ok(RemoteRun::new(waiting, Some(self.busy.clone())))
    }

    /// Refuses a call made from inside a run's callback of this session
    /// that would wait for that run (`call`: what it asks, in the local
    /// words).
    pub(super) fn check_turn(&self, call: &str) -> Result<(), RemoteError> {
        self.busy.check(call, "shell").map_err(RemoteError::Core)
    }

    /// The session's artifact store (its `artifacts_dir`), read on the
    /// server as a local [`conch_core::artifact::ArtifactStore`] is.
    pub fn artifacts(&self) -> RemoteArtifacts {
        self.session.artifacts()
    }

    /// Aborts what the session runs, as [`conch_core::Shell::abort`]:
    /// asked of the server without waiting (the run ends `cancelled`).
    pub fn abort(&self) {
        self.session.abort();
    }

    /// The processes the session still runs in the background (their
    /// pids on the server), as [`conch_core::Shell::background_jobs`].
    pub fn background_jobs(&self) -> Result<Vec<u32>, RemoteError> {
        read_result(self.session.call("background_jobs", Map::new())?)
    }

    /// The loop the session's bash runs on the server, as
    /// [`conch_core::Shell::engine`] (which waits for bash's start-up the
    /// first time).
    pub fn engine(&self) -> Result<Engine, RemoteError> {
        read_result(self.session.call("engine", Map::new())?)
    }

    /// Changes the domains the session may reach, as
    /// [`conch_core::Shell::set_network`] (between runs; `Network::Deny`
    /// allows none; `Network::Allow`, or a session started without a
    /// domain policy, is the core's `InvalidArgument`).
    pub fn set_network(&self, network: &Network) -> Result<(), RemoteError> {
        let mut fields = Map::new();
        fields.insert(
            "network".into(),
            serde_json::to_value(network).expect("a network serializes"),
        );
        self.session.call("set_network", fields).map(drop)
    }

    /// Starts the session afresh on the server, as
    /// [`conch_core::Shell::reset`]: everything it runs killed, its jobs
    /// forgotten, a fresh bash in its start directory.
    pub fn reset(&self) -> Result<(), RemoteError> {
        self.session.call("reset", Map::new()).map(drop)
    }

    /// Closes the session: its processes are killed.
    pub fn close(&self) -> Result<(), RemoteError> {
        self.session.close()
    }
}
