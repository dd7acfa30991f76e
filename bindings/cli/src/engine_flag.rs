//! `--engine`, which `conch rpc`, `mcp` and `serve` share: the loop that
//! runs the commands inside the sessions' bash (the core's `engine`
//! option, see `conch_core::shell::engine`).

use conch_core::EngineChoice;

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
