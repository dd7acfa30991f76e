//! `--engine`, which `conch rpc`, `mcp` and `serve` share: the loop that
//! runs the commands inside the sessions' bash (the core's `engine`
//! option, see `conch_core::shell::engine`).

use conch_core::EngineChoice;
use conch_core::shell::engine::CONCH_ENGINE;

#[derive(clap::Args, Debug, Default)]
pub struct EngineFlag {
    /// the loop that runs the commands inside bash: the loop builtin, or
    /// the eval loop; auto: the builtin where bash loads it (CONCH_ENGINE
    /// decides when set)
    #[arg(long, value_name = "auto|builtin|eval", value_enum)]
    engine: Option<Engine>,
}

/// The values of `--engine`, as the option spells them.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Engine {
    Auto,
    Builtin,
    Eval,
}

impl EngineFlag {
    /// The `engine` option of the sessions made (`auto` without the flag).
    pub fn choice(&self) -> EngineChoice {
        match self.engine {
            None | Some(Engine::Auto) => EngineChoice::Auto,
            Some(Engine::Builtin) => EngineChoice::Builtin,
            Some(Engine::Eval) => EngineChoice::Eval,
        }
    }

    /// For sessions the core makes with the option `auto` (those of the
    /// model's tools, which take no `engine` option): the flag as
    /// `CONCH_ENGINE`, which decides for them. The sessions' bash inherits
    /// it, as it would the variable set by the caller. Called before the
    /// process starts any thread.
    pub fn export(&self) {
        let value = match self.choice() {
            EngineChoice::Auto => return,
            EngineChoice::Builtin => "builtin",
            EngineChoice::Eval => "eval",
        };
        // SAFETY: the caller runs this before it starts any thread, so
        // nothing reads or writes the environment meanwhile.
        unsafe { std::env::set_var(CONCH_ENGINE, value) };
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use conch_core::EngineChoice;

    use super::EngineFlag;

    #[derive(Parser)]
    struct Line {
        #[command(flatten)]
        engine: EngineFlag,
    }

    fn choice(args: &[&str]) -> Result<EngineChoice, String> {
        Line::try_parse_from(std::iter::once("conch").chain(args.iter().copied()))
            .map(|line| line.engine.choice())
            .map_err(|e| e.kind().to_string())
    }

    #[test]
    fn the_flag_names_the_option() {
        assert_eq!(choice(&[]), Ok(EngineChoice::Auto));
        assert_eq!(choice(&["--engine", "auto"]), Ok(EngineChoice::Auto));
        assert_eq!(choice(&["--engine", "builtin"]), Ok(EngineChoice::Builtin));
        assert_eq!(choice(&["--engine=eval"]), Ok(EngineChoice::Eval));
        assert!(choice(&["--engine", "bash"]).is_err());
        assert!(choice(&["--engine"]).is_err());
    }
}
