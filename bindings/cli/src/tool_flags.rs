//! The options `conch run` and `conch mcp` share: how the model's tools are
//! set up (where outputs are spilled, the host's other tools, the
//! interceptor).

use std::path::PathBuf;

use conch_core::tool::{BashToolConfig, load_interceptor_config};

use crate::paths::default_artifacts_dir;

#[derive(clap::Args)]
pub struct ToolFlags {
    /// where full outputs are spilled, read back as artifact://ID
    /// (default: see `conch artifact`)
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    artifacts: Option<PathBuf>,
    /// the host's other tools: turns the interceptor on for them
    #[arg(long, value_name = "a,b", allow_hyphen_values = true)]
    tools: Option<String>,
    /// interceptor configuration (JSON: {enabled, rules})
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    interceptor: Option<PathBuf>,
}

impl ToolFlags {
    /// Sets `config` as the flags say; a bad interceptor file is an error
    /// naming it.
    pub fn apply(self, config: &mut BashToolConfig) -> Result<(), String> {
        config.artifacts_dir = Some(self.artifacts.unwrap_or_else(default_artifacts_dir));
        if let Some(tools) = &self.tools {
            config.tool_names = tool_names(tools);
            config.interceptor = true;
        }
        if let Some(file) = &self.interceptor {
            let interceptor = load_interceptor_config(file).map_err(|e| e.to_string())?;
            config.interceptor = interceptor.enabled;
            config.rules = interceptor.rules;
        }
        Ok(())
    }
}

/// The host's tools from `--tools a,b` (spaces around names and empty
/// names dropped).
fn tool_names(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect()
}
