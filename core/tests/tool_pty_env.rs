//! `CONCH_NO_PTY=1` and `PI_NO_PTY=1` turn the PTY path off. The variables
//! are process-wide, so this binary holds this one test only.

use conch_core::tool::{BashTool, BashToolArgs, BashToolConfig, ToolContext};

fn probe(tool: &BashTool) -> String {
    let ctx = ToolContext {
        has_ui: true,
        ..ToolContext::default()
    };
    let args = BashToolArgs::new("[ -t 1 ] && echo terminal || echo pipe");
    tool.execute(args, ctx).unwrap().text
}

#[test]
fn no_pty_variables_switch_to_the_shell() {
    let mut config = BashToolConfig::new(std::env::temp_dir());
    config.virtual_terminal = true;
    config.snapshot = conch_core::Snapshot::None;
    let tool = BashTool::new(config).unwrap();
    assert_eq!(probe(&tool), "terminal");
    for name in ["CONCH_NO_PTY", "PI_NO_PTY"] {
        // SAFETY: the only test of this binary; no other thread reads the
        // environment while it is changed.
        unsafe { std::env::set_var(name, "1") };
        assert_eq!(probe(&tool), "pipe", "{name}=1");
        unsafe { std::env::set_var(name, "0") };
        assert_eq!(probe(&tool), "terminal", "{name}=0");
        unsafe { std::env::remove_var(name) };
    }
}
