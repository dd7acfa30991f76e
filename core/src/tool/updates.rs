//! Live updates while a command runs: the tail of its output, handed to the
//! host at most once per interval.
//!
//! Sending the whole 50 KiB tail on every chunk would freeze a host's UI
//! under a flood. So the command runs on a scoped worker thread that only
//! appends chunks to a bounded [`TailBuffer`]; the caller's
//! thread sleeps until the tail changed *and* the interval since the last
//! update passed, then copies the tail (never more than 50 KiB) and calls
//! `on_update`. A pause in the output therefore still shows its last lines
//! within one interval, a flood costs one copy per interval, and the
//! callback always runs on the caller's thread (hosts need no locks). One
//! final update follows the last change.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::output::{DEFAULT_MAX_BYTES, TailBuffer};
use crate::sync::lock;

/// One live update: the current tail of the output.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolUpdate {
    pub text: String,
}

struct State {
    tail: TailBuffer,
    /// The tail changed since the last update.
    dirty: bool,
    /// The work is over.
    done: bool,
}

/// Runs `work`, feeding what it passes to its chunk callback to
/// `on_update` as described in the module docs. Without `on_update`, `work`
/// runs on this thread with a no-op callback.
pub(crate) fn with_live_updates<R: Send>(
    interval: Duration,
    on_update: Option<&mut dyn FnMut(ToolUpdate)>,
    work: impl FnOnce(&mut dyn FnMut(&str)) -> R + Send,
) -> R {
    let Some(on_update) = on_update else {
        return work(&mut |_| {});
    };
    let state = Mutex::new(State {
        tail: TailBuffer::new(DEFAULT_MAX_BYTES),
        dirty: false,
        done: false,
    });
    let changed = Condvar::new();
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let result = work(&mut |chunk: &str| {
                let mut s = lock(&state);
                s.tail.push(chunk);
                s.dirty = true;
                drop(s);
                changed.notify_one();
            });
            lock(&state).done = true;
            changed.notify_one();
            result
        });
        let mut last: Option<Instant> = None;
        loop {
            let mut s = lock(&state);
            while !s.done {
                if s.dirty {
                    let now = Instant::now();
                    let due = last.map_or(now, |t| t + interval);
                    if now >= due {
                        break;
                    }
                    s = changed
                        .wait_timeout(s, due - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                } else {
                    s = changed.wait(s).unwrap_or_else(|e| e.into_inner());
                }
            }
            if !s.dirty {
                break;
            }
            s.dirty = false;
            let finished = s.done;
            let text = s.tail.text().to_string();
            drop(s);
            on_update(ToolUpdate { text });
            last = Some(Instant::now());
            if finished {
                break;
            }
        }
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{Receiver, channel};

    /// Waits for an update showing `text` (false after a generous hang
    /// guard): the worker side of a test waits for what the host saw.
    fn shown(updates: &Receiver<String>, text: &str) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match updates.recv_timeout(left) {
                Ok(update) if update == text => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    }

    #[test]
    fn coalesces_a_flood_and_ends_with_the_final_tail() {
        let (tx, rx) = channel();
        let mut updates = Vec::new();
        let mut on_update = |u: ToolUpdate| {
            let _ = tx.send(u.text.clone());
            updates.push(u.text);
        };
        let interval = Duration::from_millis(40);
        let start = Instant::now();
        let n = with_live_updates(interval, Some(&mut on_update), move |chunk| {
            chunk("start\n");
            assert!(shown(&rx, "start\n"), "the first chunk was never shown");
            for i in 0..2000 {
                chunk(&format!("{i}\n"));
                // Pauses spread the flood over several intervals.
                if i % 100 == 0 {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            7
        });
        let elapsed = start.elapsed();
        assert_eq!(n, 7);
        assert_eq!(updates.first().unwrap(), "start\n");
        assert!(updates.last().unwrap().ends_with("1998\n1999\n"));
        // At most one update per interval, plus the first and the final
        // one: a slower run only allows more.
        let most = (elapsed.as_millis() / interval.as_millis()) as usize + 2;
        assert!(
            updates.len() <= most,
            "{} updates in {elapsed:?}",
            updates.len()
        );
    }

    #[test]
    fn a_pause_shows_the_last_output_without_waiting_for_more() {
        let (tx, rx) = channel();
        let mut on_update = |u: ToolUpdate| {
            let _ = tx.send(u.text);
        };
        // The work sends nothing more until the host has seen both lines.
        let seen = with_live_updates(
            Duration::from_millis(30),
            Some(&mut on_update),
            move |chunk| {
                chunk("a\n");
                chunk("b\n");
                shown(&rx, "a\nb\n")
            },
        );
        assert!(seen, "the pending tail was not shown during the pause");
    }

    #[test]
    fn without_a_callback_the_work_runs_here() {
        let here = std::thread::current().id();
        let ran_on = with_live_updates(Duration::ZERO, None, |chunk| {
            chunk("ignored");
            std::thread::current().id()
        });
        assert_eq!(ran_on, here);
    }
}
