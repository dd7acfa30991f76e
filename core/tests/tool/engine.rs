//! The tool's `engine` option: its session runs the loop asked for, so a
//! syntax error reads as that loop words it (docs/engine.md).

use conch_core::EngineChoice;
use conch_core::shell::Snapshot;
use conch_core::tool::{BashToolArgs, BashToolConfig, ToolContext, ToolError};

use crate::Fixture;

#[test]
fn the_tools_session_runs_the_loop_asked_for() {
    for (engine, said) in [
        (EngineChoice::Builtin, "bash: -c: line 1: syntax error"),
        (EngineChoice::Eval, "bash: eval: line 1: syntax error"),
    ] {
        let dir = std::env::temp_dir().join(format!(
            "conch-tool-engine-{}-{engine:?}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut config = BashToolConfig::new(dir);
        config.snapshot = Snapshot::None;
        config.engine = engine;
        config.session_key = Some(format!("tool-test-engine-{engine:?}"));
        let tool = Fixture::new(config);
        let outcome = tool.execute(BashToolArgs::new("if then"), ToolContext::default());
        let Err(ToolError::Failed { message, .. }) = outcome else {
            panic!("{engine:?}: a syntax error fails the call: {outcome:?}");
        };
        assert!(message.starts_with(said), "{engine:?}: {message:?}");
    }
}
