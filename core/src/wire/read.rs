//! Reading the checked options, one function per option name (serde's
//! `deserialize_with` takes a path): each calls the core's parser, so a bad
//! value is refused with the text every face gives, `<name> must be …, got
//! …`, under the name the sending face gives the option ([`Spelling`]).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use super::camel_key;
use crate::artifact::ArtifactStore;
use crate::input::{
    Number, TimeUnit, count_option, interval_option, limit_option, max_bytes_option, parse_option,
    port_option, timeout_option,
};
use crate::output::SinkOptions;
use crate::output::mask::Mask;
use crate::process::env::Inherit;
use crate::process::sandbox::{DomainPolicy, Network, Sandbox, SandboxOption};
use crate::shell::Snapshot;

/// How the face that sent the options names them and counts time, so that
/// a refused value reads in the face's own words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Spelling {
    /// The wire's: `max_bytes`, `timeout` in seconds (Python, C, JSON).
    #[default]
    Wire,
    /// A camelCase face's: `maxBytes`, `timeoutMs` in milliseconds (Node).
    /// Durations arrive in milliseconds and are read as such.
    CamelCase,
}

thread_local! {
    /// The spelling of the options being read on this thread: serde gives
    /// a `deserialize_with` function no context of its own.
    static SPELLING: Cell<Spelling> = const { Cell::new(Spelling::Wire) };
    /// The keys from the options object down to the value being read
    /// (`sandbox`, `limits`, `cpu_seconds`), kept by a reader that knows
    /// them ([`super::Given`]'s), so an error names a nested option by its
    /// whole path.
    static PATH: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Runs `read` with the options' names and units taken as `spelling`'s,
/// from the top of an options object.
pub(super) fn spelled<R>(spelling: Spelling, read: impl FnOnce() -> R) -> R {
    struct Restore(Spelling, Vec<String>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SPELLING.with(|s| s.set(self.0));
            PATH.with(|p| *p.borrow_mut() = std::mem::take(&mut self.1));
        }
    }
    let _restore = Restore(
        SPELLING.with(|s| s.replace(spelling)),
        PATH.with(|p| std::mem::take(&mut *p.borrow_mut())),
    );
    read()
}

/// Runs `read` (the reading of the value of field `key`) one level down.
pub(super) fn within<R>(key: &str, read: impl FnOnce() -> R) -> R {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            PATH.with(|p| p.borrow_mut().pop());
        }
    }
    PATH.with(|p| p.borrow_mut().push(key.to_owned()));
    let _pop = Pop;
    read()
}

/// The name of the option `key` (a wire name) as the sending face gives
/// it, under the path of the object it is in: `timeout`, or
/// `sandbox.limits.cpuSeconds`; a duration ends in `Ms` for a camelCase
/// face.
fn spelled_name(key: &str) -> String {
    let duration = super::DURATION_KEYS.contains(&key);
    let spelling = SPELLING.with(Cell::get);
    let mut parts: Vec<String> = PATH.with(|p| p.borrow().clone());
    if parts.last().is_some_and(|last| last == key) {
        parts.pop();
    }
    parts.push(key.to_owned());
    let last = parts.len() - 1;
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| match spelling {
            Spelling::Wire => part.clone(),
            Spelling::CamelCase if duration && i == last => format!("{}Ms", camel_key(part)),
            Spelling::CamelCase => camel_key(part),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// The key of the value being read (the innermost of the path).
pub(super) fn current_key() -> Option<String> {
    PATH.with(|p| p.borrow().last().cloned())
}

/// `raw` (a name as a face gave it) under the path of the object it is in.
pub(super) fn path_to(raw: &str) -> String {
    let parent = PATH.with(|p| p.borrow().clone());
    let spelling = SPELLING.with(Cell::get);
    parent
        .iter()
        .map(|part| match spelling {
            Spelling::Wire => part.clone(),
            Spelling::CamelCase => camel_key(part),
        })
        .chain([raw.to_owned()])
        .collect::<Vec<_>>()
        .join(".")
}

/// The name of the option `key` as the sending face gives it.
pub(super) fn name(key: &str) -> String {
    spelled_name(key)
}

/// The name and unit of the duration option `key`: `timeout` in seconds,
/// or `timeoutMs` in milliseconds.
fn duration(key: &str) -> (String, TimeUnit) {
    let unit = match SPELLING.with(Cell::get) {
        Spelling::Wire => TimeUnit::Seconds,
        Spelling::CamelCase => TimeUnit::Milliseconds,
    };
    (spelled_name(key), unit)
}

/// A number as a face sends it: an integer (of any sign) or a float, handed
/// to the core's checks as it came.
#[derive(Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Num::Int(n) => n.fmt(f),
            Num::Float(n) => f.write_str(&n.shown()),
        }
    }
}

impl Number for Num {
    fn whole(self) -> Option<u64> {
        match self {
            Num::Int(n) => n.whole(),
            Num::Float(n) => n.whole(),
        }
    }

    fn float(self) -> f64 {
        match self {
            Num::Int(n) => n.float(),
            Num::Float(n) => n,
        }
    }

    fn shown(self) -> String {
        self.to_string()
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E>(self, n: i64) -> Result<Num, E> {
                Ok(Num::Int(n))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Num, E> {
                Ok(i64::try_from(n).map_or(Num::Float(n as f64), Num::Int))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Num, E> {
                Ok(Num::Float(n))
            }
        }
        d.deserialize_any(V)
    }
}

/// `T` read from the wire, then checked by `check` (a core parser, whose
/// error is the face's error text); `null` is `None`.
fn optional<'de, D, T, R>(
    d: D,
    check: impl FnOnce(T) -> crate::Result<R>,
) -> Result<Option<R>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)?
        .map(check)
        .transpose()
        .map_err(de::Error::custom)
}

pub fn timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    optional(d, |n: Num| {
        let (name, unit) = duration("timeout");
        timeout_option(&name, n, unit)
    })
}

pub fn yield_after<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    optional(d, |n: Num| {
        let (name, unit) = duration("yield_after");
        timeout_option(&name, n, unit)
    })
}

pub fn update_interval<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    optional(d, |n: Num| {
        let (name, unit) = duration("update_interval");
        interval_option(&name, n, unit)
    })
    .map(|given| given.unwrap_or(crate::defaults::UPDATE_INTERVAL))
}

pub fn auto_background_after<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Duration>, D::Error> {
    optional(d, |n: Num| {
        let (name, unit) = duration("auto_background_after");
        timeout_option(&name, n, unit)
    })
}

pub fn wait<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    optional(d, |n: Num| {
        let (name, unit) = duration("wait");
        interval_option(&name, n, unit)
    })
    .map(Option::unwrap_or_default)
}

pub fn head<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    optional(d, |n: Num| count_option(&name("head"), n))
}

pub fn tail<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    optional(d, |n: Num| count_option(&name("tail"), n))
}

pub fn max_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    optional(d, |n: Num| max_bytes_option(&name("max_bytes"), n))
        .map(|n| n.unwrap_or(crate::defaults::MAX_BYTES))
}

pub fn cursor<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    optional(d, |n: Num| {
        count_option(&name("cursor"), n).map(|n| n as u64)
    })
}

pub fn poll_max_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    optional(d, |n: Num| max_bytes_option(&name("max_bytes"), n))
}

/// `0` is a session that starts no job, as every face takes it.
pub fn max_jobs<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    optional(d, |n: Num| count_option(&name("max_jobs"), n))
        .map(|n| n.unwrap_or(crate::defaults::MAX_JOBS))
}

/// `0`: a job's artifact keeps nothing, as every face takes it.
pub fn job_artifact_cap<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    optional(d, |n: Num| {
        count_option(&name("job_artifact_cap"), n).map(|n| n as u64)
    })
    .map(|n| n.unwrap_or(crate::defaults::JOB_ARTIFACT_CAP))
}

pub fn snapshot<'de, D: Deserializer<'de>>(d: D) -> Result<Snapshot, D::Error> {
    optional(d, |s: String| parse_option(&name("snapshot"), &s)).map(Option::unwrap_or_default)
}

pub fn inherit<'de, D: Deserializer<'de>>(d: D) -> Result<Inherit, D::Error> {
    optional(d, |s: String| parse_option(&name("inherit"), &s)).map(Option::unwrap_or_default)
}

/// The `network` of a sandbox as a face gives it: a word, or the lists
/// of a domain policy. Read by its visitor, not as an untagged enum, so
/// a value of neither shape is a type error under the option's name
/// (`sandbox.network: invalid type: …`).
enum NetworkGiven {
    Word(String),
    Domains(DomainsGiven),
}

impl<'de> Deserialize<'de> for NetworkGiven {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Shapes;
        impl<'de> Visitor<'de> for Shapes {
            type Value = NetworkGiven;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    r#""allow", "deny" or a domain policy (an object of allow, deny and resolve)"#,
                )
            }
            fn visit_str<E: de::Error>(self, word: &str) -> Result<NetworkGiven, E> {
                Ok(NetworkGiven::Word(word.to_owned()))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<NetworkGiven, A::Error> {
                DomainsGiven::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(NetworkGiven::Domains)
            }
        }
        d.deserialize_any(Shapes)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DomainsGiven {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    resolve: BTreeMap<String, String>,
}

/// A sandbox's `network`: `null` or missing is the default, `"deny"`.
pub fn network<'de, D: Deserializer<'de>>(d: D) -> Result<Network, D::Error> {
    optional(d, checked_network).map(Option::unwrap_or_default)
}

/// A `network` given on its own (`set_network`): `null` is no policy, a
/// type error, rather than a silent `"deny"`.
pub fn network_value<'de, D: Deserializer<'de>>(d: D) -> Result<Network, D::Error> {
    checked_network(NetworkGiven::deserialize(d)?).map_err(de::Error::custom)
}

fn checked_network(given: NetworkGiven) -> crate::Result<Network> {
    let name = name("network");
    match given {
        NetworkGiven::Word(word) => parse_option(&name, &word),
        NetworkGiven::Domains(d) => {
            DomainPolicy::parse(&name, &d.allow, &d.deny, &d.resolve).map(Network::Domains)
        }
    }
}

pub fn ports<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u16>, D::Error> {
    optional(d, |ports: Vec<Num>| {
        ports
            .into_iter()
            .enumerate()
            .map(|(i, p)| port_option(&format!("{}[{i}]", name("allow_tcp_ports")), p))
            .collect()
    })
    .map(Option::unwrap_or_default)
}

/// One function per limit, each naming its own field.
macro_rules! limits {
    ($($name:ident),*) => {$(
        pub fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
            optional(d, |n: Num| limit_option(&name(stringify!($name)), n))
        }
    )*};
}
limits!(
    cpu_seconds,
    memory_bytes,
    file_size_bytes,
    open_files,
    processes,
    session_memory_bytes
);

/// A terminal's width (`cols`) or height (`rows`): a count, past what a
/// terminal takes the largest it takes (the session clamps it further).
fn cells<'de, D: Deserializer<'de>>(d: D, key: &str, default: u16) -> Result<u16, D::Error> {
    optional(d, |n: Num| {
        count_option(&name(key), n).map(|n| u16::try_from(n).unwrap_or(u16::MAX))
    })
    .map(|n| n.unwrap_or(default))
}

pub fn cols<'de, D: Deserializer<'de>>(d: D) -> Result<u16, D::Error> {
    cells(d, "cols", crate::defaults::PTY_COLS)
}

pub fn rows<'de, D: Deserializer<'de>>(d: D) -> Result<u16, D::Error> {
    cells(d, "rows", crate::defaults::PTY_ROWS)
}

/// `max_bytes` of a PTY run: the bound of its output sink.
pub fn sink<'de, D: Deserializer<'de>>(d: D) -> Result<SinkOptions, D::Error> {
    max_bytes(d).map(|max_bytes| SinkOptions {
        max_bytes,
        ..SinkOptions::default()
    })
}

/// `sandbox`: a policy, `true`, `false` or `null` ([`SandboxOption`]).
pub fn sandbox<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Sandbox>, D::Error> {
    SandboxOption::deserialize(d).map(|option| option.0)
}

/// `artifacts_dir`: a directory; `null` or left out: the process's
/// private directory (as [`crate::ShellOptions::default`]).
pub fn artifacts_dir<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ArtifactStore>, D::Error> {
    let dir = Option::<PathBuf>::deserialize(d)?;
    ArtifactStore::for_option(dir)
        .map(Some)
        .map_err(de::Error::custom)
}

/// Variables as a JSON object `{"NAME": "value"}`, in the order given.
pub fn env<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<(String, String)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a mapping of str to str")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0));
            while let Some(pair) = map.next_entry()? {
                pairs.push(pair);
            }
            Ok(pairs)
        }
    }
    d.deserialize_any(V)
}

/// `mask`: `true` (names that look secret), `false` (nothing), or a list
/// of names (those that look secret, and these); `null` is `true`.
pub fn mask<'de, D: Deserializer<'de>>(d: D) -> Result<Mask, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Mask;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("true, false or a list of variable names")
        }
        fn visit_bool<E>(self, on: bool) -> Result<Mask, E> {
            Ok(if on { Mask::Secrets } else { Mask::Off })
        }
        fn visit_unit<E>(self) -> Result<Mask, E> {
            Ok(Mask::default())
        }
        fn visit_none<E>(self) -> Result<Mask, E> {
            Ok(Mask::default())
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Mask, A::Error> {
            let mut names = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some(name) = seq.next_element::<String>()? {
                names.push(name);
            }
            Ok(Mask::Also(names))
        }
    }
    d.deserialize_any(V)
}

/// A terminal size `{"cols": C, "rows": R}`, each a count.
pub fn terminal<'de, D: Deserializer<'de>>(d: D) -> Result<Option<(u16, u16)>, D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, expecting = "an object with `cols` and `rows`")]
    struct Size {
        cols: Num,
        rows: Num,
    }
    optional(d, |size: Size| {
        let side =
            |side, n| count_option(&name(side), n).map(|n| u16::try_from(n).unwrap_or(u16::MAX));
        Ok((side("cols", size.cols)?, side("rows", size.rows)?))
    })
}

pub fn until<'de, D: Deserializer<'de>>(d: D) -> Result<Option<regex::Regex>, D::Error> {
    optional(d, |s: String| {
        crate::input::until_option(&name("until"), &s)
    })
}
