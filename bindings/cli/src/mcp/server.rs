//! The MCP handler: translates MCP requests into calls of the core's tools.
//!
//! - `tools/call` runs `execute` on a blocking thread (the core's calls
//!   block), in its turn: once the calls that came before it ended (see
//!   [`super::turns`]); other requests are answered meanwhile. While it
//!   runs, each live update (the tail of the output so far) becomes a
//!   `notifications/progress` carrying that tail as its message, when the
//!   client sent a progress token.
//! - `notifications/cancelled` for a call cancels its token: the core kills
//!   the command's process tree (the `job` tool's wait ends; the job lives
//!   on); a call still waiting for its turn never runs. The client no
//!   longer waits for the answer.
//! - `artifact://<id>` is a resource: `resources/read` gives its text, at
//!   most [`READ_MAX_BYTES`] of it (the server's memory stays bounded
//!   however large an output was); a longer one ends at a whole line with
//!   a notice naming the next page, `artifact://<id>?offset=<line>`
//!   (`&limit=<lines>` also taken). `resources/list` gives the artifacts
//!   this server's calls spilled, `resources/templates/list` the
//!   `artifact://{id}{?offset,limit}` template.
//! - `conch/set_network` (a request of conch's own, announced in the
//!   capabilities' `experimental`): the host changes the domains the
//!   session may reach (params `{"network": "deny" | {"allow": [...],
//!   "deny": [...], "resolve": {...}}}`, read by the core), for a server
//!   started with a domain policy (`--allow-domain` …); the result is `{}`,
//!   a refusal an invalid-params error with the core's text.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conch_core::CancelToken;
use conch_core::output::notice::format_size;
use conch_core::tool::{
    BashTool, BashToolArgs, JobTool, JobToolArgs, ToolContext, ToolDefinition, ToolError,
    ToolResult, ToolUpdate,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, Implementation, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::watch;

use super::turns::Turn;

/// The most text one `resources/read` answers with.
pub const READ_MAX_BYTES: usize = 1 << 20;

/// The method of conch's own request that changes the session's domains.
pub const SET_NETWORK: &str = "conch/set_network";

/// Least time between two progress notifications of a call.
pub const UPDATE_INTERVAL: Duration = Duration::from_millis(200);

/// The server: the two tools of one session, and the artifacts they spilled.
pub struct Conch {
    bash: Arc<BashTool>,
    job: Arc<JobTool>,
    /// `artifact://` ids of this server's results, oldest first.
    spilled: Arc<Mutex<Vec<String>>>,
    /// Every `artifact://` id a result of this server named (the `job`
    /// tool's too): the only ones it reads. The artifacts directory may
    /// be shared (the CLI's default is), and another process's artifact is
    /// not this client's to read.
    named: Arc<Mutex<HashSet<String>>>,
}

impl Conch {
    pub fn new(bash: BashTool, job: JobTool) -> Conch {
        Conch {
            bash: Arc::new(bash),
            job: Arc::new(job),
            spilled: Arc::default(),
            named: Arc::default(),
        }
    }

    /// Notes the `artifact://` ids `outcome`'s text names, and makes it the
    /// call's result.
    fn result(&self, outcome: Result<ToolResult, ToolError>) -> CallToolResult {
        let text = match &outcome {
            Ok(result) => result.text.as_str(),
            Err(error) => error.message(),
        };
        let mut named = self.named.lock().unwrap_or_else(|e| e.into_inner());
        for (at, _) in text.match_indices("artifact://") {
            let id: String = text[at + "artifact://".len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if !id.is_empty() {
                named.insert(id);
            }
        }
        drop(named);
        call_result(outcome)
    }

    fn tools(&self) -> Vec<Tool> {
        let bash = mcp_tool(self.bash.definition())
            .with_annotations(ToolAnnotations::new().destructive(true).open_world(true));
        let job = mcp_tool(self.job.definition())
            .with_annotations(ToolAnnotations::new().destructive(true).open_world(false));
        vec![bash, job]
    }

    /// One `bash` call, cancelled with `ct`, its updates sent as progress.
    async fn call_bash(
        &self,
        args: BashToolArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let cancel = CancelToken::new();
        // Each update replaces the one before: only the newest is kept, so
        // a slow client never makes the updates pile up.
        let (updates, mut received) = watch::channel(String::new());
        let tool = self.bash.clone();
        let token = cancel.clone();
        let mut run = tokio::task::spawn_blocking(move || {
            let mut forward = |update: ToolUpdate| {
                updates.send_replace(update.text);
            };
            tool.execute(
                args,
                ToolContext {
                    on_update: Some(&mut forward),
                    cancel: Some(token),
                    has_ui: false,
                },
            )
        });
        let progress = ctx.meta.get_progress_token();
        let mut sent = 0u32;
        let mut cancelled = false;
        let outcome = loop {
            tokio::select! {
                done = &mut run => break done,
                _ = ctx.ct.cancelled(), if !cancelled => {
                    cancelled = true;
                    cancel.cancel();
                }
                Ok(()) = received.changed() => {
                    let text = received.borrow_and_update().clone();
                    if let Some(token) = &progress {
                        sent += 1;
                        let note = ProgressNotificationParam::new(token.clone(), f64::from(sent))
                            .with_message(text);
                        let _ = ctx.peer.notify_progress(note).await;
                    }
                }
            }
        };
        let outcome = outcome.unwrap_or_else(|e| Err(lost(e)));
        if let Some(id) = spilled_artifact(&outcome) {
            let mut spilled = self.spilled.lock().unwrap_or_else(|e| e.into_inner());
            if !spilled.contains(&id) {
                spilled.push(id);
            }
        }
        self.result(outcome)
    }

    /// `conch/set_network`: the session's domains, as the host now wants
    /// them.
    async fn set_network(&self, params: Option<Value>) -> Result<CustomResult, McpError> {
        let network = params
            .as_ref()
            .and_then(|p| p.get("network"))
            .filter(|n| !n.is_null())
            .ok_or_else(|| {
                McpError::invalid_params(
                    format!(
                        "{SET_NETWORK} needs params {{\"network\": \"deny\" or {{\"allow\": \
                         [...], \"deny\": [...], \"resolve\": {{...}}}}}}"
                    ),
                    None,
                )
            })?;
        let network = conch_core::Network::deserialize(network)
            .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
        let tool = self.bash.clone();
        let set = tokio::task::spawn_blocking(move || tool.set_network(&network))
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        match set {
            Ok(()) => Ok(CustomResult::new(serde_json::json!({}))),
            Err(e @ conch_core::Error::InvalidArgument(_)) => {
                Err(McpError::invalid_params(e.to_string(), None))
            }
            Err(e) => Err(McpError::internal_error(e.to_string(), None)),
        }
    }

    /// One `job` call; cancelling it ends its wait.
    async fn call_job(
        &self,
        args: JobToolArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let cancel = CancelToken::new();
        let tool = self.job.clone();
        let token = cancel.clone();
        let mut run = tokio::task::spawn_blocking(move || tool.execute(args, Some(token)));
        let outcome = tokio::select! {
            done = &mut run => done,
            _ = ctx.ct.cancelled() => {
                cancel.cancel();
                run.await
            }
        };
        self.result(outcome.unwrap_or_else(|e| Err(lost(e))))
    }
}

/// The failure of a call whose thread ended without an outcome (a panic
/// in the core).
fn lost(error: tokio::task::JoinError) -> ToolError {
    ToolError::Failed {
        message: format!("the call failed: {error}"),
        details: None,
    }
}

/// An MCP tool from the core's definition, as it is.
fn mcp_tool(definition: ToolDefinition) -> Tool {
    let schema = match definition.input_schema {
        Value::Object(map) => map,
        _ => unreachable!("a tool's input schema is a JSON object"),
    };
    Tool::new(definition.name, definition.description, schema)
}

/// What the client reads: the tool's text, as an error when the tool failed.
fn call_result(outcome: Result<ToolResult, ToolError>) -> CallToolResult {
    match outcome {
        Ok(result) => CallToolResult::success(vec![ContentBlock::text(result.text)]),
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.message().to_string())]),
    }
}

/// The artifact a bash result points to, if any.
fn spilled_artifact(outcome: &Result<ToolResult, ToolError>) -> Option<String> {
    let details = match outcome {
        Ok(result) => result.details.as_ref(),
        Err(error) => error.details(),
    };
    details?.truncation()?.artifact_id.clone()
}

impl ServerHandler for Conch {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_experimental_with(
                    [(SET_NETWORK.to_string(), serde_json::Map::new())].into(),
                )
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("conch", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Run shell commands with the bash tool; read, feed and stop background jobs with the \
             job tool. Outputs cut to 50 KB name an artifact://<id> resource holding the whole text.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // The transport gave the call its turn as it came: calls run in
        // that order, one at a time. The turn passes on as this returns.
        let Some(turn) = context.extensions.get::<Turn>().cloned() else {
            return Err(McpError::internal_error(
                "a tools/call without its turn",
                None,
            ));
        };
        tokio::select! {
            biased;
            // Cancelled while it waited: it never runs (nor is answered:
            // rmcp drops the reply to a cancelled request).
            () = context.ct.cancelled() => {
                let aborted = ToolError::Aborted {
                    message: "Cancelled before it ran".to_string(),
                    details: None,
                };
                return Ok(call_result(Err(aborted)).into());
            }
            () = turn.come() => {}
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let name = request.name.as_ref();
        let result = if name == self.bash.config().name {
            match BashToolArgs::from_json(&args) {
                Ok(args) => self.call_bash(args, &context).await,
                Err(e) => call_result(Err(e)),
            }
        } else if name == self.job.definition().name {
            match JobToolArgs::from_json(&args) {
                Ok(args) => self.call_job(args, &context).await,
                Err(e) => call_result(Err(e)),
            }
        } else {
            return Err(McpError::invalid_params(
                format!("unknown tool: {name}"),
                None,
            ));
        };
        Ok(result.into())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        match request.method.as_str() {
            SET_NETWORK => {
                let result = self.set_network(request.params).await?;
                // The bash tool's description states the lists in force.
                let _ = context.peer.notify_tool_list_changed().await;
                Ok(result)
            }
            method => Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("unknown method: {method}"),
                None,
            )),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let spilled = self
            .spilled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let resources = spilled
            .into_iter()
            .map(|id| {
                Resource::new(format!("artifact://{id}"), format!("artifact {id}"))
                    .with_description("The whole output of a bash call")
                    .with_mime_type("text/plain")
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let template = ResourceTemplate::new("artifact://{id}{?offset,limit}", "artifact")
            .with_description(
                "The whole output a tool result cut to 50 KB names; offset (0-based) and \
                 limit select lines",
            )
            .with_mime_type("text/plain");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let Some(store) = self.bash.artifacts().cloned() else {
            return Err(McpError::resource_not_found("no artifacts directory", None));
        };
        let uri = request.uri;
        let page = Page::parse(&uri).map_err(|e| McpError::invalid_params(e, None))?;
        if let Some(id) = page.artifact.strip_prefix("artifact://")
            && !self
                .named
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(id)
        {
            return Err(McpError::resource_not_found(
                format!(
                    "{} is not an artifact of this server (resources/list names them)",
                    page.artifact
                ),
                None,
            ));
        }
        let read = page.clone();
        let found = tokio::task::spawn_blocking(move || {
            store.read_page(&read.artifact, read.offset, read.limit, READ_MAX_BYTES)
        })
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let found = match found {
            Ok(found) => found,
            Err(e @ conch_core::Error::InvalidArgument(_)) => {
                return Err(McpError::invalid_params(e.to_string(), None));
            }
            Err(e) => return Err(McpError::resource_not_found(e.to_string(), None)),
        };
        let text = page.text_of(found);
        let contents = ResourceContents::text(text, uri).with_mime_type("text/plain");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// The lines an `artifact://` read asks for.
#[derive(Clone)]
struct Page {
    /// `artifact://<id>`, the query taken off.
    artifact: String,
    offset: usize,
    limit: Option<usize>,
}

impl Page {
    /// `artifact://<id>`, with `?offset=<n>` and `&limit=<n>` optional.
    fn parse(uri: &str) -> Result<Page, String> {
        let (artifact, query) = uri.split_once('?').unwrap_or((uri, ""));
        let mut page = Page {
            artifact: artifact.to_string(),
            offset: 0,
            limit: None,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let number = || {
                value.parse::<usize>().map_err(|_| {
                    format!("{key} must be a whole number of lines, got {value:?} in {uri}")
                })
            };
            match key {
                "offset" => page.offset = number()?,
                "limit" => page.limit = Some(number()?),
                _ => {
                    return Err(format!(
                        "unknown parameter {key:?} in {uri} (offset and limit are known)"
                    ));
                }
            }
        }
        Ok(page)
    }

    /// The page's text, and when the byte bound ended it early, a notice
    /// on a line of its own naming the rest.
    fn text_of(&self, found: conch_core::artifact::ArtifactPage) -> String {
        let mut text = found.text;
        if found.cut {
            let first = found.offset_line + 1;
            let last = found.offset_line + found.lines;
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "\n[Showing lines {first}-{last} of {} ({} limit). Next: {}?offset={last}]",
                found.total_lines,
                format_size(READ_MAX_BYTES as u64),
                self.artifact,
            ));
        }
        text
    }
}
