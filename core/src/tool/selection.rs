//! The part of a command's output the model reads, and what is missing
//! from it.
//!
//! Without limits that is the sink's tail. With `head`/`tail` limits (from
//! `| head -n N` / `| tail -n N` or explicit arguments) the model asked for
//! lines of the **complete** stream, exactly as the pipeline it wrote would
//! have printed them; when the sink held that selection whole (the usual
//! case) the text is the selection and nothing is reported missing, as
//! with real bash. Only when the selection itself did not fit the byte
//! bound is it reported truncated, with the real line numbers it shows.
//!
//! The engine gets the head limit only: its sink keeps the first lines of
//! the stream itself, and the command is stopped once they are complete.
//! The tail is taken here, from what the sink kept, except in the one case
//! memory cannot answer: a tail of a long head (`head -n 100000 | tail -n
//! 10` of a big stream), of which the sink kept only the first 50 KiB.
//! Those lines are read from the artifact, which holds the whole stream,
//! keeping at most the byte bound of them ([`crate::output::lines`], as an
//! engine run's own head and tail limits do).

use std::path::Path;

use crate::command::normalize::apply_head_tail;
use crate::output::lines::read_lines;
use crate::output::notice::{Direction, LineRange, TruncatedBy, Truncation};
use crate::output::{DEFAULT_MAX_BYTES, count_lines};
use crate::run_result::BashResult;

/// Line limits of the complete stream: the first `head` lines, then the
/// last `tail` of those.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub head: Option<usize>,
    pub tail: Option<usize>,
}

impl Limits {
    fn any(&self) -> bool {
        self.head.is_some() || self.tail.is_some()
    }
}

/// What the model is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shown {
    pub text: String,
    pub truncation: Option<Truncation>,
}

/// Picks the text shown for `result`, whose output without any stop
/// notice is `body`: what the sink kept, which with a head limit is the
/// head itself (the engine was given the head, never the tail, so `body`
/// and the counts here do not depend on how it applies limits).
pub(crate) fn select(
    result: &BashResult,
    body: &str,
    limits: Limits,
    artifact_path: Option<&Path>,
) -> Shown {
    let total_lines = result.total_lines;
    let total_bytes = result.total_bytes;
    let kept_lines = count_lines(body);
    let artifact_id = result.artifact_id.clone();
    let with_tail = |text: &str| Shown {
        text: apply_head_tail(text, None, limits.tail),
        truncation: None,
    };

    if !limits.any() {
        return Shown {
            text: body.to_string(),
            truncation: Truncation::from_counts(
                result.truncated,
                total_lines,
                total_bytes,
                kept_lines,
                body.len() as u64,
                artifact_id,
                Some(DEFAULT_MAX_BYTES),
            ),
        };
    }
    // The sink held the whole stream (or the whole head): exact.
    if !result.truncated {
        return with_tail(body);
    }
    let Some(head) = limits.head else {
        let tail = limits.tail.map_or(u64::MAX, |n| n as u64);
        if kept_lines >= tail {
            return with_tail(body);
        }
        // The last `tail` lines are more than the bound: show the bound.
        return Shown {
            text: body.to_string(),
            truncation: Some(bytes_cut(
                Direction::Tail,
                (total_lines, total_bytes),
                (kept_lines, body.len() as u64),
                range_ending(total_lines, kept_lines),
                artifact_id,
            )),
        };
    };
    let head_end = (head as u64).min(total_lines);
    if kept_lines >= head_end {
        return with_tail(body);
    }
    // The sink kept only the start of the head: the lines asked for are
    // in the artifact.
    if let (Some(tail), Some(path), Some(_)) = (limits.tail, artifact_path, &artifact_id) {
        let first = head_end.saturating_sub(tail as u64);
        if let Some(read) = read_lines(path, first, head_end, DEFAULT_MAX_BYTES) {
            if read.complete {
                return Shown {
                    text: read.text,
                    truncation: None,
                };
            }
            return Shown {
                truncation: Some(bytes_cut(
                    Direction::Tail,
                    (total_lines, total_bytes),
                    (read.lines, read.text.len() as u64),
                    range_ending(head_end, read.lines),
                    artifact_id,
                )),
                text: read.text,
            };
        }
    }
    // Without the artifact: the kept start of the head (or its last lines,
    // with a tail limit), labelled with the lines it really is.
    let text = apply_head_tail(body, None, limits.tail);
    let shown_lines = count_lines(&text);
    let (direction, end) = if shown_lines < kept_lines {
        (Direction::Tail, kept_lines)
    } else {
        (Direction::Head, shown_lines)
    };
    Shown {
        truncation: Some(bytes_cut(
            direction,
            (total_lines, total_bytes),
            (shown_lines, text.len() as u64),
            range_ending(end, shown_lines),
            artifact_id,
        )),
        text,
    }
}

/// Lines `end - count + 1 ..= end` (1-based), or none when nothing is shown.
fn range_ending(end: u64, count: u64) -> Option<LineRange> {
    (count > 0 && end >= count).then(|| LineRange {
        start: end - count + 1,
        end,
    })
}

/// Metadata of a selection that the byte bound cut; `total` and `shown`
/// are (lines, bytes).
fn bytes_cut(
    direction: Direction,
    total: (u64, u64),
    shown: (u64, u64),
    shown_range: Option<LineRange>,
    artifact_id: Option<String>,
) -> Truncation {
    Truncation {
        direction,
        truncated_by: TruncatedBy::Bytes,
        total_lines: total.0,
        total_bytes: total.1,
        output_lines: shown.0,
        output_bytes: shown.1,
        max_bytes: Some(DEFAULT_MAX_BYTES),
        shown_range,
        artifact_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_result::Outcome;

    /// A result whose sink kept `kept` of a `total_lines`-line stream.
    fn result(kept: &str, truncated: bool, total_lines: u64) -> BashResult {
        let summary = crate::output::OutputSummary {
            output: kept.to_string(),
            truncated,
            total_lines,
            total_bytes: total_lines * 7,
            output_lines: count_lines(kept),
            output_bytes: kept.len() as u64,
            artifact_id: truncated.then(|| "4".to_string()),
        };
        let outcome = Outcome {
            exit_code: Some(0),
            ..Outcome::default()
        };
        BashResult::assemble(summary, outcome)
    }

    fn lines(range: std::ops::RangeInclusive<u64>) -> String {
        range.map(|i| format!("{i}\n")).collect()
    }

    #[test]
    fn a_selection_held_whole_is_not_truncated() {
        let tail2 = Limits {
            head: None,
            tail: Some(2),
        };
        let kept = lines(1..=10);
        let shown = select(&result(&kept, false, 10), &kept, tail2, None);
        assert_eq!(
            shown,
            Shown {
                text: "9\n10\n".into(),
                truncation: None
            }
        );
        // a truncated stream whose kept window holds the tail asked for
        let kept = lines(700..=1000);
        let shown = select(&result(&kept, true, 1000), &kept, tail2, None);
        assert_eq!(
            shown,
            Shown {
                text: "999\n1000\n".into(),
                truncation: None
            }
        );
        // a complete head, then a tail of it
        let kept = lines(1..=50);
        let limits = Limits {
            head: Some(50),
            tail: Some(3),
        };
        let shown = select(&result(&kept, true, 9000), &kept, limits, None);
        assert_eq!(
            shown,
            Shown {
                text: "48\n49\n50\n".into(),
                truncation: None
            }
        );
    }

    #[test]
    fn a_tail_longer_than_the_bound_shows_the_bound_with_real_line_numbers() {
        let kept = lines(998..=1000);
        let limits = Limits {
            head: None,
            tail: Some(10),
        };
        let shown = select(&result(&kept, true, 1000), &kept, limits, None);
        assert_eq!(shown.text, kept);
        let t = shown.truncation.unwrap();
        assert_eq!(
            t.shown_range,
            Some(LineRange {
                start: 998,
                end: 1000
            })
        );
        assert_eq!(t.artifact_id.as_deref(), Some("4"));
    }

    #[test]
    fn a_cut_head_without_its_artifact_is_labelled_with_its_lines() {
        let kept = lines(1..=2);
        let head = Limits {
            head: Some(500),
            tail: None,
        };
        let t = select(&result(&kept, true, 1000), &kept, head, None)
            .truncation
            .unwrap();
        assert_eq!(t.direction, Direction::Head);
        assert_eq!(t.shown_range, Some(LineRange { start: 1, end: 2 }));
        let head_tail = Limits {
            head: Some(500),
            tail: Some(1),
        };
        let shown = select(&result(&kept, true, 1000), &kept, head_tail, None);
        assert_eq!(shown.text, "2\n");
        let t = shown.truncation.unwrap();
        assert_eq!(t.direction, Direction::Tail);
        assert_eq!(t.shown_range, Some(LineRange { start: 2, end: 2 }));
    }
}
