//! conch where the shells are: [`server`] is `conch serve` (many sessions
//! over stdio or a WebSocket, each outliving a dropped connection for a
//! grace period), [`client`] is what every face's `connect` wraps, and
//! [`protocol`] the frames between them (docs/remote.md); [`files`] the
//! file requests, in the server or in its sandboxed helper.

pub mod auth;
pub mod client;
pub mod files;
pub mod protocol;
pub mod server;
pub mod tls;

pub use auth::Token;
pub use client::{
    ConnectOptions, Remote, RemoteArtifacts, RemoteError, RemoteFiles, RemoteJobTool, RemotePty,
    RemoteRun, RemoteShell, RemoteTool, RemoteToolCall, Target, connect,
};
pub use server::{ServeOptions, Server};
