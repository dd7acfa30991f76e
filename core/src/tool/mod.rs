//! The tool surfaces: what a host calls when the model calls `bash`
//! ([`BashTool`]), when the user types `!cmd` ([`BashSession`]), and what
//! its UI shows of them ([`render`], [`expand_output`]).

mod args;
mod bang;
mod bash_tool;
mod bash_tool_config;
mod config;
mod definition;
mod expand;
mod job_tool;
pub mod render;
mod result;
mod selection;
mod updates;

pub use bang::{BangOptions, BashExecution, BashSession, BashSessionConfig, model_text};
pub use bash_tool::{BashTool, BashToolArgs, ToolContext, ToolRun, clamp_timeout, started_text};
pub use bash_tool_config::BashToolConfig;
pub use config::{InterceptorConfig, load_interceptor_config, parse_interceptor_config};
pub use definition::ToolDefinition;
pub use expand::expand_output;
pub use job_tool::{JOB_OPS, JobTool, JobToolArgs};
pub use result::{Details, Meta, ToolError, ToolResult};
pub use updates::ToolUpdate;
