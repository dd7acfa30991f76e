//! The sandbox options `conch run`, `rpc` and `mcp` share: any of them
//! turns the sandbox on (`--sandbox` alone: the defaults, writes only in the
//! cwd and `$TMPDIR`, no network). Values are checked by the core's
//! parsers, so every face accepts and refuses the same ones.
//! `--allow-domain`, `--deny-domain` and `--resolve` make the network a
//! domain policy (the core's `network: {"allow", "deny", "resolve"}`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use conch_core::input::parse_option;
use conch_core::input::{limit_option, port_option};
use conch_core::{DomainPolicy, Limits, Network, Sandbox};

#[derive(clap::Args, Debug, Default)]
pub struct SandboxFlags {
    /// run every command in a sandbox: writes only in the cwd and
    /// $TMPDIR, no network (the flags below imply it)
    #[arg(long)]
    sandbox: bool,
    /// a directory the commands may write too (repeatable)
    #[arg(long = "sandbox-write", value_name = "DIR", action = clap::ArgAction::Append, allow_hyphen_values = true)]
    write: Vec<PathBuf>,
    /// read only this directory (and the system's; repeatable)
    #[arg(long = "sandbox-read", value_name = "DIR", action = clap::ArgAction::Append, allow_hyphen_values = true)]
    read: Vec<PathBuf>,
    /// no network (the sandbox's default)
    #[arg(long = "no-network")]
    no_network: bool,
    /// the network in the sandbox: allow or deny (default deny)
    #[arg(long, value_name = "allow|deny")]
    network: Option<String>,
    /// a host the commands may reach, through the sandbox's proxy:
    /// example.com, *.example.com, example.com:443, 10.0.0.0/8
    /// (repeatable; the network is then by name)
    #[arg(long = "allow-domain", value_name = "PATTERN", action = clap::ArgAction::Append, allow_hyphen_values = true)]
    allow_domain: Vec<String>,
    /// a host they may not reach, whatever --allow-domain says (repeatable)
    #[arg(long = "deny-domain", value_name = "PATTERN", action = clap::ArgAction::Append, allow_hyphen_values = true)]
    deny_domain: Vec<String>,
    /// the proxy resolves NAME to IP instead of asking DNS (repeatable)
    #[arg(long = "resolve", value_name = "NAME=IP", action = clap::ArgAction::Append, allow_hyphen_values = true)]
    resolve: Vec<String>,
    /// a TCP port the commands may connect to without network (repeatable)
    #[arg(long = "allow-tcp-port", value_name = "N", action = clap::ArgAction::Append, allow_hyphen_values = true)]
    allow_tcp_port: Vec<f64>,
    /// CPU seconds of each process
    #[arg(long = "limit-cpu", value_name = "SECS", allow_hyphen_values = true)]
    limit_cpu: Option<f64>,
    /// address space of each process, in bytes
    #[arg(
        long = "limit-memory",
        value_name = "BYTES",
        allow_hyphen_values = true
    )]
    limit_memory: Option<f64>,
    /// largest file a process may write, in bytes
    #[arg(
        long = "limit-file-size",
        value_name = "BYTES",
        allow_hyphen_values = true
    )]
    limit_file_size: Option<f64>,
    /// open files of each process (>= 64)
    #[arg(
        long = "limit-open-files",
        value_name = "N",
        allow_hyphen_values = true
    )]
    limit_open_files: Option<f64>,
    /// processes of the whole session at once (a cgroup)
    #[arg(long = "limit-processes", value_name = "N", allow_hyphen_values = true)]
    limit_processes: Option<f64>,
    /// memory of the whole session, in bytes (a cgroup)
    #[arg(
        long = "limit-session-memory",
        value_name = "BYTES",
        allow_hyphen_values = true
    )]
    limit_session_memory: Option<f64>,
    /// apply what this kernel supports instead of failing
    #[arg(long = "sandbox-best-effort")]
    best_effort: bool,
}

impl SandboxFlags {
    /// The sandbox the flags ask for; `None` when no flag is given.
    pub fn policy(self) -> Result<Option<Sandbox>, String> {
        let limit = |name: &str, value: Option<f64>| {
            value
                .map(|v| limit_option(name, v))
                .transpose()
                .map_err(|e| e.to_string())
        };
        let limits = Limits {
            cpu_seconds: limit("--limit-cpu", self.limit_cpu)?,
            memory_bytes: limit("--limit-memory", self.limit_memory)?,
            file_size_bytes: limit("--limit-file-size", self.limit_file_size)?,
            open_files: limit("--limit-open-files", self.limit_open_files)?,
            processes: limit("--limit-processes", self.limit_processes)?,
            session_memory_bytes: limit("--limit-session-memory", self.limit_session_memory)?,
        };
        let network = match &self.network {
            Some(text) => {
                let network: Network =
                    parse_option("--network", text).map_err(|e| e.to_string())?;
                if self.no_network && network == Network::Allow {
                    return Err("--no-network and --network allow contradict each other".into());
                }
                Some(network)
            }
            None => self.no_network.then_some(Network::Deny),
        };
        let network = match (self.domains()?, network) {
            (Some(_), Some(Network::Allow)) => {
                return Err(
                    "--allow-domain, --deny-domain and --resolve limit the network to \
                            named hosts: they contradict --network allow"
                        .into(),
                );
            }
            (Some(domains), _) => Some(Network::Domains(domains)),
            (None, network) => network,
        };
        let ports = self
            .allow_tcp_port
            .iter()
            .map(|&p| port_option("--allow-tcp-port", p).map_err(|e| e.to_string()))
            .collect::<Result<Vec<u16>, String>>()?;
        let on = self.sandbox
            || !self.write.is_empty()
            || !self.read.is_empty()
            || network.is_some()
            || !ports.is_empty()
            || limits.any()
            || self.best_effort;
        if !on {
            return Ok(None);
        }
        if network == Some(Network::Allow) && !ports.is_empty() {
            return Err("--allow-tcp-port needs the network denied (it is allowed)".into());
        }
        Ok(Some(Sandbox {
            writable: self.write,
            readable: (!self.read.is_empty()).then_some(self.read),
            network: network.unwrap_or_default(),
            allow_tcp_ports: ports,
            limits,
            best_effort: self.best_effort,
        }))
    }

    /// The domain policy of `--allow-domain`, `--deny-domain` and
    /// `--resolve`, read by the core (its errors name the entry:
    /// `network.allow[1]`); `None` when none is given.
    fn domains(&self) -> Result<Option<DomainPolicy>, String> {
        if self.allow_domain.is_empty() && self.deny_domain.is_empty() && self.resolve.is_empty() {
            return Ok(None);
        }
        let resolve = (self.resolve.iter())
            .map(|entry| match entry.split_once('=') {
                Some((name, ip)) => Ok((name.to_string(), ip.to_string())),
                None => Err(format!("--resolve must be NAME=IP, got {entry:?}")),
            })
            .collect::<Result<BTreeMap<_, _>, String>>()?;
        DomainPolicy::parse("network", &self.allow_domain, &self.deny_domain, &resolve)
            .map(Some)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    #[command(args_override_self = true)]
    struct Cli {
        #[command(flatten)]
        flags: SandboxFlags,
    }

    fn policy(line: &str) -> Result<Option<Sandbox>, String> {
        let words = std::iter::once("conch").chain(line.split_whitespace());
        Cli::try_parse_from(words).unwrap().flags.policy()
    }

    #[test]
    fn no_flag_no_sandbox_and_any_flag_implies_it() {
        assert_eq!(policy("").unwrap(), None);
        assert_eq!(policy("--sandbox").unwrap(), Some(Sandbox::default()));
        let s = policy("--sandbox-write /a --sandbox-write /b --allow-tcp-port 8080").unwrap();
        let s = s.unwrap();
        assert_eq!(s.writable, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!(s.allow_tcp_ports, vec![8080]);
        assert_eq!(s.network, Network::Deny);
        let s = policy("--network allow --limit-cpu 5 --limit-processes 50").unwrap();
        let s = s.unwrap();
        assert_eq!(s.network, Network::Allow);
        assert_eq!(s.limits.cpu_seconds, Some(5));
        assert_eq!(s.limits.processes, Some(50));
        assert!(
            policy("--sandbox-best-effort")
                .unwrap()
                .unwrap()
                .best_effort
        );
        let s = policy("--sandbox-read /src").unwrap().unwrap();
        assert_eq!(s.readable, Some(vec![PathBuf::from("/src")]));
    }

    #[test]
    fn bad_values_are_refused_in_the_cores_words() {
        assert_eq!(
            policy("--limit-cpu 0").unwrap_err(),
            "--limit-cpu must be a whole number >= 1, got 0"
        );
        assert_eq!(
            policy("--network off").unwrap_err(),
            r#"--network must be "allow" or "deny", got "off""#
        );
        assert!(policy("--allow-tcp-port 70000").is_err());
        assert!(policy("--no-network --network allow").is_err());
        assert!(policy("--network allow --allow-tcp-port 80").is_err());
    }

    #[test]
    fn domain_flags_make_a_domain_policy_the_core_reads() {
        let s = policy("--allow-domain example.com --allow-domain *.pkg.test:443 --deny-domain bad.example.com --resolve example.com=127.0.0.2")
            .unwrap()
            .unwrap();
        let Network::Domains(d) = &s.network else {
            panic!("{:?}", s.network)
        };
        let words = |p: &[conch_core::process::sandbox::Pattern]| {
            p.iter().map(|p| p.to_string()).collect::<Vec<_>>()
        };
        assert_eq!(words(&d.allow), ["example.com", "*.pkg.test:443"]);
        assert_eq!(words(&d.deny), ["bad.example.com"]);
        assert_eq!(d.resolve["example.com"].to_string(), "127.0.0.2");
        // Any of them alone turns the sandbox on, the network by name.
        let s = policy("--deny-domain x.test").unwrap().unwrap();
        assert!(matches!(&s.network, Network::Domains(d) if d.allow.is_empty()));
        assert!(matches!(
            policy("--network deny --resolve a.test=::1")
                .unwrap()
                .unwrap()
                .network,
            Network::Domains(_)
        ));
        let s = policy("--allow-domain a.test --allow-tcp-port 5432")
            .unwrap()
            .unwrap();
        assert_eq!(s.allow_tcp_ports, vec![5432]);
    }

    #[test]
    fn bad_domain_flags_are_refused() {
        let err = policy("--network allow --allow-domain a.test").unwrap_err();
        assert!(err.contains("contradict --network allow"), "{err}");
        let err = policy("--allow-domain a.test --allow-domain a..b").unwrap_err();
        assert!(
            err.starts_with("network.allow[1] must be a domain pattern"),
            "{err}"
        );
        let err = policy("--deny-domain *.").unwrap_err();
        assert!(err.starts_with("network.deny[0] must be"), "{err}");
        assert_eq!(
            policy("--resolve a.test").unwrap_err(),
            r#"--resolve must be NAME=IP, got "a.test""#
        );
        let err = policy("--resolve a.test=nowhere").unwrap_err();
        assert!(err.contains("must be an IP address"), "{err}");
    }
}
