//! The one parser of each option value a face receives as text or as a
//! number. A face hands the value over with the name it gives the option
//! (`timeoutMs` in Node, `timeout` in Python) and reports the error as it
//! is (`<name> must be …, got …`), so every face checks the same values the
//! same way and says so in the same words. The types these values fill
//! (options of the shell, of a job, of the sandbox) live with their engines;
//! this module sits below all of them and imports none.

use std::fmt::Display;
use std::str::FromStr;
use std::time::Duration;

use regex::Regex;

use crate::defaults;
use crate::error::{BadValue, Result};

/// `text`, the value a face received for its option `name`, parsed; the
/// error names the option.
pub fn parse_option<T: FromStr<Err = BadValue>>(name: &str, text: &str) -> Result<T> {
    text.parse().map_err(|e: BadValue| e.named(name))
}

/// A number as a face receives it: JS numbers are `f64`, Python ints
/// `i64`, C's `uint64_t` fields `u64`.
pub trait Number: Copy + Display {
    /// The number when it is whole and not negative.
    fn whole(self) -> Option<u64>;

    /// The number as a float, for a duration (rounded only far past any
    /// bound the core accepts).
    fn float(self) -> f64;

    /// The number as an error message shows it.
    fn shown(self) -> String {
        self.to_string()
    }
}

impl Number for f64 {
    fn whole(self) -> Option<u64> {
        // Past u64 (2^64 and up) is no count: refused, never saturated to
        // a count the caller did not give.
        ((0.0..18_446_744_073_709_551_616.0).contains(&self) && self.fract() == 0.0)
            .then_some(self as u64)
    }

    fn float(self) -> f64 {
        self
    }

    /// Huge and tiny numbers in exponent form (`1e300`, not 301 digits).
    fn shown(self) -> String {
        let magnitude = self.abs();
        if magnitude != 0.0 && !(1e-6..1e16).contains(&magnitude) {
            format!("{self:e}")
        } else {
            self.to_string()
        }
    }
}

impl Number for i64 {
    fn whole(self) -> Option<u64> {
        u64::try_from(self).ok()
    }

    fn float(self) -> f64 {
        self as f64
    }
}

/// Shown as given: `18446744073709551615`, not `1.8446744073709552e19`.
impl Number for u64 {
    fn whole(self) -> Option<u64> {
        Some(self)
    }

    fn float(self) -> f64 {
        self as f64
    }
}

/// A count (`head`, `tail`, a terminal size): a whole number >= 0.
pub fn count_option(name: &str, value: impl Number) -> Result<usize> {
    value
        .whole()
        .map(saturating_usize)
        .ok_or_else(|| whole_number(value, 0).named(name))
}

/// `max_bytes`: a whole number >= 1 (a bound of nothing is a mistake).
pub fn max_bytes_option(name: &str, value: impl Number) -> Result<usize> {
    value
        .whole()
        .filter(|&n| n >= 1)
        .map(saturating_usize)
        .ok_or_else(|| whole_number(value, 1).named(name))
}

/// What a count takes, said to a caller who gave `value`: a whole number
/// from `least`, below 2^64 (past it, no count is what the caller meant).
fn whole_number(value: impl Number, least: u64) -> BadValue {
    let expected = if value.float() >= 18_446_744_073_709_551_616.0 {
        "a whole number below 2^64".to_owned()
    } else {
        format!("a whole number >= {least}")
    };
    BadValue::new(expected, value.shown())
}

fn saturating_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// The unit a face gives durations in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Milliseconds,
}

impl TimeUnit {
    fn name(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "seconds",
            TimeUnit::Milliseconds => "milliseconds",
        }
    }

    fn to_secs(self, value: f64) -> f64 {
        match self {
            TimeUnit::Seconds => value,
            TimeUnit::Milliseconds => value / 1000.0,
        }
    }
}

/// A timeout: a positive number of `unit`s, at most
/// [`defaults::MAX_TIMEOUT_SECS`] (NaN, infinities and larger values are
/// mistakes, refused rather than clamped).
pub fn timeout_option(name: &str, value: impl Number, unit: TimeUnit) -> Result<Duration> {
    checked_duration(
        name,
        value,
        unit,
        value.float() > 0.0,
        "a positive number of",
    )
}

/// An interval (between live updates): a number of `unit`s >= 0, at most
/// [`defaults::MAX_TIMEOUT_SECS`].
pub fn interval_option(name: &str, value: impl Number, unit: TimeUnit) -> Result<Duration> {
    checked_duration(name, value, unit, value.float() >= 0.0, "a number >= 0 of")
}

fn checked_duration(
    name: &str,
    value: impl Number,
    unit: TimeUnit,
    in_range: bool,
    expected: &str,
) -> Result<Duration> {
    let secs = unit.to_secs(value.float());
    if in_range && secs <= defaults::MAX_TIMEOUT_SECS {
        // NaN fails both comparisons; infinities fail the second.
        return Ok(Duration::from_secs_f64(secs));
    }
    let max = match unit {
        TimeUnit::Seconds => defaults::MAX_TIMEOUT_SECS,
        TimeUnit::Milliseconds => defaults::MAX_TIMEOUT_SECS * 1000.0,
    };
    let expected = format!("{expected} {} up to {}", unit.name(), max.shown());
    Err(BadValue::new(expected, value.shown()).named(name))
}

/// `until` as a face receives it: a regular expression (the `regex`
/// crate's syntax); a bad one is refused, naming the option.
pub fn until_option(name: &str, pattern: &str) -> Result<Regex> {
    Regex::new(pattern).map_err(|e| {
        let why = e.to_string();
        let why = why.lines().last().unwrap_or_default().trim();
        BadValue::new(
            "a valid regular expression",
            format_args!("{pattern:?} ({why})"),
        )
        .named(name)
    })
}

/// A signal as a face receives it: a name with or without `SIG` in any
/// case (`TERM`, `sigint`), or its number (`15`).
pub fn signal_option(name: &str, text: &str) -> Result<rustix::process::Signal> {
    use rustix::process::Signal;
    const NAMES: &[(&str, Signal)] = &[
        ("HUP", Signal::HUP),
        ("INT", Signal::INT),
        ("QUIT", Signal::QUIT),
        ("KILL", Signal::KILL),
        ("USR1", Signal::USR1),
        ("USR2", Signal::USR2),
        ("PIPE", Signal::PIPE),
        ("ALRM", Signal::ALARM),
        ("TERM", Signal::TERM),
        ("CONT", Signal::CONT),
        ("STOP", Signal::STOP),
        ("TSTP", Signal::TSTP),
        ("WINCH", Signal::WINCH),
    ];
    let upper = text.trim().to_ascii_uppercase();
    let short = upper.strip_prefix("SIG").unwrap_or(&upper);
    let found = match short.parse::<i32>() {
        Ok(n) => NAMES.iter().find(|(_, s)| s.as_raw() == n),
        Err(_) => NAMES.iter().find(|(n, _)| *n == short),
    };
    found.map(|(_, s)| *s).ok_or_else(|| {
        let names: Vec<&str> = NAMES.iter().map(|(n, _)| *n).collect();
        BadValue::new(
            format!("a signal name ({}) or its number", names.join(", ")),
            format_args!("{text:?}"),
        )
        .named(name)
    })
}
/// A limit as a face receives it, named `name` there: a whole number >= 1
/// (a limit of nothing would stop every command; leave it out for none).
pub fn limit_option(name: &str, value: impl Number) -> Result<u64> {
    value
        .whole()
        .filter(|&n| n >= 1)
        .ok_or_else(|| whole_number(value, 1).named(name))
}

/// A TCP port as a face receives it, named `name` there: 1 to 65535.
pub fn port_option(name: &str, value: impl Number) -> Result<u16> {
    value
        .whole()
        .and_then(|n| u16::try_from(n).ok())
        .filter(|&n| n >= 1)
        .ok_or_else(|| BadValue::new("a TCP port, 1 to 65535", value.shown()).named(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_checked_with_the_faces_name() {
        assert_eq!(count_option("head", 3.0).unwrap(), 3);
        assert_eq!(count_option("head", 0_i64).unwrap(), 0);
        assert_eq!(
            count_option("head", -1_i64).unwrap_err().to_string(),
            "head must be a whole number >= 0, got -1"
        );
        assert!(count_option("tail", 1.5).is_err());
        assert!(count_option("tail", f64::NAN).is_err());
        assert_eq!(
            count_option("cols", 1e300).unwrap_err().to_string(),
            "cols must be a whole number below 2^64, got 1e300"
        );
        assert_eq!(
            count_option("cols", 18446744073709549568.0).unwrap(),
            usize::MAX - 2047
        );
        assert_eq!(max_bytes_option("maxBytes", 1000.0).unwrap(), 1000);
        assert_eq!(
            max_bytes_option("max_bytes", 0_i64)
                .unwrap_err()
                .to_string(),
            "max_bytes must be a whole number >= 1, got 0"
        );
    }

    #[test]
    fn durations_are_checked_in_the_faces_unit() {
        let ms = TimeUnit::Milliseconds;
        assert_eq!(
            timeout_option("timeoutMs", 1500.0, ms).unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            timeout_option("timeoutMs", -5.0, ms)
                .unwrap_err()
                .to_string(),
            "timeoutMs must be a positive number of milliseconds up to 2147483647, got -5"
        );
        assert!(timeout_option("timeout", 0.0, TimeUnit::Seconds).is_err());
        assert!(timeout_option("timeout", f64::NAN, TimeUnit::Seconds).is_err());
        assert!(timeout_option("timeout", f64::INFINITY, TimeUnit::Seconds).is_err());
        assert_eq!(
            timeout_option("timeout", 1e300, TimeUnit::Seconds)
                .unwrap_err()
                .to_string(),
            "timeout must be a positive number of seconds up to 2147483.647, got 1e300"
        );
        assert!(timeout_option("timeoutMs", 2147483647.0, ms).is_ok());
        assert!(timeout_option("timeoutMs", 2147483648.0, ms).is_err());
        assert_eq!(
            interval_option("update_interval", 0.0, TimeUnit::Seconds).unwrap(),
            Duration::ZERO
        );
        assert_eq!(
            interval_option("updateIntervalMs", -1.0, ms)
                .unwrap_err()
                .to_string(),
            "updateIntervalMs must be a number >= 0 of milliseconds up to 2147483647, got -1"
        );
    }
    #[test]
    fn limits_and_ports_refuse_what_cannot_be_meant() {
        assert_eq!(limit_option("cpu_seconds", 5i64).unwrap(), 5);
        let zero = limit_option("cpu_seconds", 0i64).unwrap_err();
        assert_eq!(
            zero.to_string(),
            "cpu_seconds must be a whole number >= 1, got 0"
        );
        assert!(limit_option("cpuSeconds", 1.5f64).is_err());
        assert_eq!(port_option("port", 8080.0f64).unwrap(), 8080);
        for bad in [0i64, 65536, -1] {
            assert!(port_option("port", bad).is_err(), "{bad}");
        }
    }
}
