//! Busy-waiting, briefly, for an answer that usually comes quickly.
//!
//! A thread that sleeps in `poll` and is woken from another CPU pays for
//! waking an idle CPU: tens of microseconds on a virtual machine, as much
//! as bash takes to run a builtin. So a run first polls without sleeping
//! for up to [`SPIN`], but only while fewer threads spin than there are
//! CPUs less one: bash always keeps a CPU, and a host running many
//! sessions at once does not burn its cores.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a run polls without sleeping: long enough for a builtin and for
/// a small external command (`/bin/true` takes ~0.8 ms on the 2-core
/// machine the benchmarks ran on), short against anything slower.
pub const SPIN: Duration = Duration::from_millis(2);

/// Threads spinning now, across every shell of the process.
static SPINNING: AtomicUsize = AtomicUsize::new(0);

fn limit() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()) - 1)
}

/// The right of one thread to spin, until [`SPIN`] after it was taken.
pub struct Spin {
    until: Option<Instant>,
}

impl Spin {
    /// Takes a spinning slot if one is free (else the wait just sleeps).
    pub fn start() -> Spin {
        let taken = SPINNING.fetch_add(1, Ordering::Relaxed) < limit();
        if !taken {
            SPINNING.fetch_sub(1, Ordering::Relaxed);
        }
        Spin {
            until: taken.then(|| Instant::now() + SPIN),
        }
    }

    /// Whether this thread may spin.
    pub fn held(&self) -> bool {
        self.until.is_some()
    }

    /// The deadline to hand to `poll`: now (do not sleep) while spinning,
    /// else `deadline`.
    pub fn deadline(&mut self, deadline: Option<Instant>) -> Option<Instant> {
        if let Some(until) = self.until {
            let now = Instant::now();
            if now < until {
                // bash may be waiting for this very CPU.
                std::thread::yield_now();
                return Some(now);
            }
            self.stop();
        }
        deadline
    }

    /// Gives the slot back (at the latest when dropped).
    pub fn stop(&mut self) {
        if self.until.take().is_some() {
            SPINNING.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Spin {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spin holding a slot until `until`, taken whatever the limit: the
    /// test must not depend on the machine's CPUs or on the clock.
    fn forced(until: Instant) -> Spin {
        SPINNING.fetch_add(1, Ordering::Relaxed);
        Spin { until: Some(until) }
    }

    fn spinning() -> usize {
        SPINNING.load(Ordering::Relaxed)
    }

    // One test for the whole module: the slots are process-wide and no
    // other test of this binary runs a command, so the counts are exact.
    #[test]
    fn slots_are_limited_and_a_spin_polls_at_once_until_it_stops() {
        // Never more spinners than CPUs less one, and every slot comes back.
        let spins: Vec<Spin> = (0..limit() + 3).map(|_| Spin::start()).collect();
        assert_eq!(spins.iter().filter(|s| s.held()).count(), limit());
        assert_eq!(spinning(), limit());
        drop(spins);
        assert_eq!(spinning(), 0);

        // Spinning: poll without sleeping. Stopped: sleep until the deadline.
        let deadline = Some(Instant::now() + Duration::from_secs(3600));
        let mut spin = forced(Instant::now() + Duration::from_secs(3600));
        assert!(spin.deadline(deadline) < deadline);
        assert!(spin.deadline(None).is_some(), "no deadline: still poll now");
        assert!(spin.held());
        spin.stop();
        assert!(!spin.held());
        assert_eq!(spinning(), 0);
        assert_eq!(spin.deadline(deadline), deadline);
        spin.stop();
        assert_eq!(spinning(), 0, "stopping twice gives back one slot");

        // A spin whose time is up gives its slot back and sleeps.
        let mut spin = forced(Instant::now());
        assert_eq!(spin.deadline(deadline), deadline);
        assert!(!spin.held());
        assert_eq!(spinning(), 0);
        drop(spin);
        assert_eq!(spinning(), 0);
    }
}
