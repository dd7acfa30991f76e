//! Network by name: the domain policy of a sandbox whose commands may
//! reach some hosts and nothing else. The policy is what the session's
//! proxy ([`crate::proxy`]) checks each connection against; the sandbox
//! lets commands connect to that proxy only, so the policy binds programs
//! that ignore the proxy variables too (they fail to connect).
//!
//! A pattern is a name (`example.com`), every name below one
//! (`*.example.com`, not the name itself), either with a port
//! (`example.com:443`), or an address block (`10.0.0.0/8`, `::1/128`, a
//! bare address). Deny wins over allow; an empty allow list allows
//! nothing.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use crate::error::BadValue;

/// What a pattern must look like, in every error about one.
const PATTERN_FORMS: &str = "a domain pattern (example.com, *.example.com, example.com:443) \
     or an address block (10.0.0.0/8)";

/// The domain policy of [`super::Network::Domains`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct DomainPolicy {
    /// What commands may reach; empty: nothing.
    pub allow: Vec<Pattern>,
    /// What they may not, whatever `allow` says.
    pub deny: Vec<Pattern>,
    /// Names the proxy resolves to the given address instead of asking
    /// DNS (as curl's `--resolve`): for mirrors without DNS, and tests.
    /// The host chose these addresses, so they pass the private-address
    /// check a resolved name goes through.
    pub resolve: BTreeMap<String, IpAddr>,
}

/// One allow or deny pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// A name, lower case without a trailing dot; `subdomains`: the names
    /// below it, not itself (`*.name`). `port`: that port only.
    Name {
        name: String,
        subdomains: bool,
        port: Option<u16>,
    },
    /// The addresses whose first `prefix` bits are those of `net`.
    Block { net: IpAddr, prefix: u8 },
}

/// Why the proxy refused a connection: the line the model reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No allow pattern matches, or a deny pattern does.
    NotAllowed,
    /// The name resolved to a loopback, private or link-local address no
    /// pattern allows (a name rebound to reach the host's own services).
    Private(IpAddr),
    /// The name does not resolve, or no connection could be made.
    Unreachable(String),
}

impl Refusal {
    /// The line added to the command's output for `target` (`host:port`).
    pub fn line(&self, target: &str) -> String {
        match self {
            Refusal::NotAllowed => {
                format!("[sandbox] blocked: {target} is not in the allowed domains")
            }
            Refusal::Private(ip) => format!(
                "[sandbox] blocked: {target} resolves to {ip}, a private address no pattern allows"
            ),
            Refusal::Unreachable(why) => format!("[sandbox] {target}: {why}"),
        }
    }

    /// Whether this is the policy's refusal (reported as a violation), not
    /// a failure to reach an allowed host.
    pub fn is_violation(&self) -> bool {
        !matches!(self, Refusal::Unreachable(_))
    }
}

impl DomainPolicy {
    /// Builds a policy from the patterns and overrides as given, each error
    /// naming its entry (`network.allow[2]`) under `name`.
    pub fn parse(
        name: &str,
        allow: &[String],
        deny: &[String],
        resolve: &BTreeMap<String, String>,
    ) -> Result<DomainPolicy, crate::Error> {
        let list = |key: &str, items: &[String]| -> Result<Vec<Pattern>, crate::Error> {
            (items.iter().enumerate())
                .map(|(i, text)| {
                    text.parse::<Pattern>()
                        .map_err(|e| e.named(&format!("{name}.{key}[{i}]")))
                })
                .collect()
        };
        let mut overrides = BTreeMap::new();
        for (host, ip) in resolve {
            let key = normal_name(host).ok_or_else(|| {
                BadValue::new("a host name", format_args!("{host:?}"))
                    .named(&format!("{name}.resolve"))
            })?;
            let ip = ip.parse::<IpAddr>().map_err(|_| {
                BadValue::new("an IP address", format_args!("{ip:?}"))
                    .named(&format!("{name}.resolve.{host}"))
            })?;
            overrides.insert(key, ip);
        }
        Ok(DomainPolicy {
            allow: list("allow", allow)?,
            deny: list("deny", deny)?,
            resolve: overrides,
        })
    }

    /// Whether a connection to `host` (a name, or an address literal) on
    /// `port` may be made before anything is resolved. An address literal
    /// passes only where an address block allows it.
    pub fn check_target(&self, host: &Host, port: u16) -> Result<(), Refusal> {
        let also = match host {
            Host::Ip(ip) => loopback_of(*ip).map(Host::Ip),
            Host::Name(_) => None,
        };
        for host in std::iter::once(host).chain(&also) {
            let matches = |p: &Pattern| p.matches(host, port);
            if self.deny.iter().any(matches) || !self.allow.iter().any(matches) {
                return Err(Refusal::NotAllowed);
            }
        }
        Ok(())
    }

    /// Whether `ip`, which `host` resolved to, may be connected to: not in
    /// a denied block, and not a loopback, private or link-local address
    /// unless a block allows it or the host's own override named it.
    pub fn check_address(&self, host: &Host, ip: IpAddr, port: u16) -> Result<(), Refusal> {
        let reached: Vec<Host> = std::iter::once(ip)
            .chain(loopback_of(ip))
            .map(Host::Ip)
            .collect();
        let denied = |addr: &Host| self.deny.iter().any(|p| p.matches(addr, port));
        if reached.iter().any(denied) {
            return Err(Refusal::NotAllowed);
        }
        let allowed = |addr: &Host| self.allow.iter().any(|p| p.matches(addr, port));
        let overridden = matches!(host, Host::Name(n) if self.resolve.contains_key(n));
        if matches!(host, Host::Name(_))
            && !overridden
            && is_private(ip)
            && !reached.iter().all(allowed)
        {
            return Err(Refusal::Private(ip));
        }
        Ok(())
    }
}

/// The loopback address a connection to `ip` reaches besides `ip` itself:
/// for an unspecified address (`0.0.0.0`, `::`, `::ffff:0.0.0.0`), which
/// Linux connects to the machine itself. A policy judges both: a block that
/// denies `127.0.0.0/8` denies `0.0.0.0` too.
fn loopback_of(ip: IpAddr) -> Option<IpAddr> {
    let unspecified_v4 = match ip {
        IpAddr::V4(v4) => v4.is_unspecified(),
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some_and(|v4| v4.is_unspecified()),
    };
    if unspecified_v4 {
        Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
    } else if ip.is_unspecified() {
        Some(IpAddr::V6(std::net::Ipv6Addr::LOCALHOST))
    } else {
        None
    }
}

/// The destination a command asked the proxy for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// Lower case, without a trailing dot.
    Name(String),
    Ip(IpAddr),
}

impl Host {
    /// A host as a request names it: an address (`[::1]` bracketed or
    /// not), else a name, normalized; `None` for what is neither.
    pub fn parse(text: &str) -> Option<Host> {
        let bare = text
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or(text);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Some(Host::Ip(ip));
        }
        normal_name(text).map(Host::Name)
    }
}

/// `host:port`, IPv6 addresses bracketed: how a violation names it.
impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// The pattern as written, normalized (`*.example.com:443`, `10.0.0.0/8`).
impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Name {
                name,
                subdomains,
                port,
            } => {
                f.write_str(if *subdomains { "*." } else { "" })?;
                f.write_str(name)?;
                port.map_or(Ok(()), |p| write!(f, ":{p}"))
            }
            Pattern::Block { net, prefix } => write!(f, "{net}/{prefix}"),
        }
    }
}

impl Pattern {
    fn matches(&self, host: &Host, port: u16) -> bool {
        match (self, host) {
            (
                Pattern::Name {
                    name,
                    subdomains,
                    port: want,
                },
                Host::Name(host),
            ) => {
                let name_ok = if *subdomains {
                    host.len() > name.len()
                        && host.ends_with(name.as_str())
                        && host.as_bytes()[host.len() - name.len() - 1] == b'.'
                } else {
                    host == name
                };
                name_ok && want.is_none_or(|p| p == port)
            }
            (Pattern::Block { net, prefix }, Host::Ip(ip)) => in_block(*ip, *net, *prefix),
            _ => false,
        }
    }
}

impl FromStr for Pattern {
    type Err = BadValue;

    fn from_str(text: &str) -> Result<Pattern, BadValue> {
        let bad = || BadValue::new(PATTERN_FORMS, format_args!("{text:?}"));
        if let Some((net, bits)) = text.split_once('/') {
            let net: IpAddr = net.parse().map_err(|_| bad())?;
            let max = if net.is_ipv4() { 32 } else { 128 };
            let prefix = bits
                .parse::<u8>()
                .ok()
                .filter(|&b| b <= max)
                .ok_or_else(bad)?;
            return Ok(Pattern::Block { net, prefix });
        }
        if let Some(Host::Ip(net)) = Host::parse(text) {
            let prefix = if net.is_ipv4() { 32 } else { 128 };
            return Ok(Pattern::Block { net, prefix });
        }
        let (host, port) = match text.rsplit_once(':') {
            Some((host, port)) => {
                let port = port
                    .parse::<u16>()
                    .ok()
                    .filter(|&p| p > 0)
                    .ok_or_else(bad)?;
                (host, Some(port))
            }
            None => (text, None),
        };
        let (host, subdomains) = match host.strip_prefix("*.") {
            Some(rest) => (rest, true),
            None => (host, false),
        };
        let name = normal_name(host).ok_or_else(bad)?;
        Ok(Pattern::Name {
            name,
            subdomains,
            port,
        })
    }
}

/// `name` lower case without a trailing dot, if it is a host name: labels
/// of letters, digits, `-` and `_`, 1 to 63 bytes each, 253 in all.
fn normal_name(name: &str) -> Option<String> {
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    (!name.is_empty() && name.len() <= 253 && name.split('.').all(label_ok)).then_some(name)
}

fn in_block(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    let bits = |ip: IpAddr| -> Option<(u128, u32)> {
        match ip {
            IpAddr::V4(v4) => Some((u128::from(u32::from(v4)) << 96, 32)),
            IpAddr::V6(v6) => Some((u128::from(v6), 128)),
        }
    };
    let ip = match (ip, net) {
        // An IPv4 address a program wrote as IPv6 (`::ffff:10.0.0.1`).
        (IpAddr::V6(v6), IpAddr::V4(_)) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        _ => ip,
    };
    match (bits(ip), bits(net)) {
        (Some((a, la)), Some((b, lb))) if la == lb => {
            let mask = if prefix == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(prefix))
            };
            // IPv4 addresses sit in the top 32 bits.
            a & mask == b & mask
        }
        _ => false,
    }
}

/// Loopback, private (RFC 1918, unique local), link-local, unspecified or
/// carrier-grade NAT: what a public name should never resolve to.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_private(IpAddr::V4(v4)),
            None => {
                let first = v6.segments()[0];
                v6.is_loopback()
                    || v6.is_unspecified()
                    || (first & 0xfe00) == 0xfc00
                    || (first & 0xffc0) == 0xfe80
            }
        },
    }
}

#[cfg(test)]
#[path = "domains_tests.rs"]
mod tests;
