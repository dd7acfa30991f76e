//! The file requests of a server (docs/remote.md, "Files"). They are the
//! server's own, and may name a shell session: then they act as its
//! commands could, inside its sandbox (and relative paths start at its
//! cwd). Without a session, the server's sandbox (its sandbox flags)
//! applies when it has one, and relative paths start at the server's cwd.
//! A sandboxed request runs in the files helper, started inside the
//! sandbox ([`crate::files::confined`]); any other in the server's process.

use std::path::Path;

use conch_core::{Error, ProgramSandbox, ShellOptions};
use serde_json::Value;

use super::jobs::{text, wrong};
use super::{ServeOptions, Server};
use crate::files::{FileRequest, base64, confined, ops};
use crate::protocol::{ErrorKind, Refusal, Request};

/// The file requests.
const FILE_OPS: &[&str] = &[
    "file_read",
    "file_write",
    "file_stat",
    "file_list",
    "file_remove",
];

/// Whether `op` is a file request.
pub(super) fn is_file_op(op: &str) -> bool {
    FILE_OPS.contains(&op)
}

/// Handles the file request; its reply's value.
pub(super) fn file_op(server: &Server, request: &Request) -> Result<Value, Refusal> {
    let asked = read(request)?;
    let Some(id) = request.session.as_deref() else {
        let Some(policy) = &server.options().sandbox else {
            return Ok(ops::perform(asked)?);
        };
        let helper = helper(server)?;
        let cwd = std::env::current_dir()
            .map_err(|e| Error::io("cannot read the current directory", e))?;
        let sandbox = ProgramSandbox::new(policy, &cwd, helper)?;
        return Ok(confined::through_helper(&asked, |args, input| {
            sandbox.run(helper, args, input)
        })?);
    };
    let session = server.session(Some(id))?;
    let Some(shell) = session.hosted.shell() else {
        return Err(Refusal::new(
            ErrorKind::BadRequest,
            format!(
                "{} names a session of a shell, and this session is a {}",
                request.op,
                session.hosted.kind()
            ),
        ));
    };
    if shell.sandbox_applied().is_none() {
        return Ok(ops::perform(asked.resolved(&shell.cwd()))?);
    }
    let helper = helper(server)?;
    Ok(confined::through_helper(&asked, |args, input| {
        shell.run_program(helper, args, input)
    })?)
}

/// Lets a session's sandbox execute the server's files helper when its
/// policy lists what it may read (the helper is started inside it).
pub(super) fn let_run_helper(opts: &mut ShellOptions, serve: &ServeOptions) {
    let readable = opts.sandbox.as_mut().and_then(|s| s.readable.as_mut());
    if let (Some(readable), Some(helper)) = (readable, &serve.files_helper) {
        readable.push(helper.clone());
    }
}

/// The server's files helper, which a sandboxed request needs.
fn helper(server: &Server) -> Result<&Path, Error> {
    server.options().files_helper.as_deref().ok_or_else(|| {
        Error::SandboxUnavailable(
            "a file request under a sandbox runs in the server's files helper, \
             and this server has none (ServeOptions::files_helper)"
                .into(),
        )
    })
}

/// The request as a [`FileRequest`].
fn read(request: &Request) -> Result<FileRequest, Refusal> {
    let path = text(request, "path")?.into();
    Ok(match request.op.as_str() {
        "file_read" => FileRequest::Read {
            path,
            offset: whole(request, "offset")?.unwrap_or(0),
            limit: whole(request, "limit")?,
        },
        "file_write" => FileRequest::Write {
            path,
            data: base64::decode(&text(request, "data")?)
                .map_err(|e| Refusal::new(ErrorKind::BadValue, format!("data: {e}")))?,
            mode: whole(request, "mode")?.map(|m| u32::try_from(m).unwrap_or(u32::MAX)),
        },
        "file_stat" => FileRequest::Stat { path },
        "file_list" => FileRequest::List { path },
        "file_remove" => FileRequest::Remove {
            path,
            recursive: match request.field("recursive") {
                None => false,
                Some(Value::Bool(on)) => *on,
                other => return Err(wrong("recursive", "a boolean", other)),
            },
        },
        op => unreachable!("{op} is no file request"),
    })
}

/// The whole number `name` of the request, if given.
fn whole(request: &Request, name: &str) -> Result<Option<u64>, Refusal> {
    match request.field(name) {
        None => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| wrong(name, "a whole number >= 0", Some(value))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::server::ServeOptions;

    fn request(op: &str, fields: Value) -> Request {
        let Value::Object(fields) = fields else {
            unreachable!("an object")
        };
        Request {
            id: json!(1),
            op: op.into(),
            session: None,
            fields,
        }
    }

    #[test]
    fn a_sandboxed_request_without_a_helper_is_refused() {
        let server = Server::new(ServeOptions {
            sandbox: Some(conch_core::Sandbox::default()),
            ..ServeOptions::default()
        });
        match file_op(&server, &request("file_stat", json!({"path": "/"}))) {
            Err(Refusal::Core(error)) => assert_eq!(error["kind"], "sandbox_unavailable"),
            other => panic!("refused as unenforceable: {other:?}"),
        }
    }

    #[test]
    fn fields_of_the_wrong_type_are_named() {
        let server = Server::new(ServeOptions::default());
        let refused = |op: &str, fields: Value| match file_op(&server, &request(op, fields)) {
            Err(Refusal::Request { kind, message }) => (kind, message),
            other => panic!("refused: {other:?}"),
        };
        assert_eq!(
            refused("file_read", json!({"path": 7})),
            (ErrorKind::WrongType, "path must be a string, got 7".into())
        );
        assert_eq!(
            refused("file_read", json!({"path": "/x", "offset": -1})),
            (
                ErrorKind::WrongType,
                "offset must be a whole number >= 0, got -1".into()
            )
        );
        assert_eq!(
            refused("file_write", json!({"path": "/x", "data": "@@"})).0,
            ErrorKind::BadValue
        );
        assert_eq!(
            refused("file_remove", json!({"path": "/x", "recursive": 1})),
            (
                ErrorKind::WrongType,
                "recursive must be a boolean, got 1".into()
            )
        );
    }
}
