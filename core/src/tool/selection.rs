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
//! The one case the sink cannot answer from memory is a tail of a long
//! head (`head -n 100000 | tail -n 10` of a big stream): the sink kept only
//! the first 50 KiB of the head. Those lines are read from the artifact,
//! which holds the whole stream, keeping at most the byte bound of them.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::output::DEFAULT_MAX_BYTES;
use crate::output::notice::{Direction, LineRange, TruncatedBy, Truncation};
use crate::shell::BashResult;

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

/// Picks the text shown for `result`, whose output (without any stop
/// notice) is `body`. With limits, the engine already applied them to what
/// its sink kept; `result.output_lines`/`output_bytes` still count what the
/// sink kept before that.
pub(crate) fn select(
    result: &BashResult,
    body: &str,
    limits: Limits,
    artifact_path: Option<&Path>,
) -> Shown {
    let total_lines = result.total_lines;
    let total_bytes = result.total_bytes;
    let kept_lines = result.output_lines;
    let artifact_id = result.artifact_id.clone();
    let whole = |text: &str| Shown {
        text: text.to_string(),
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
                result.output_bytes,
                artifact_id,
                Some(DEFAULT_MAX_BYTES),
            ),
        };
    }
    // The sink held the whole stream: the engine's selection is exact.
    if !result.truncated {
        return whole(body);
    }
    match limits.head {
        None => {
            let tail = limits.tail.map_or(u64::MAX, |n| n as u64);
            if kept_lines >= tail {
                return whole(body);
            }
            // The last `tail` lines are more than the bound: show the bound.
            let shown_lines = crate::output::count_lines(body);
            Shown {
                text: body.to_string(),
                truncation: Some(bytes_cut(
                    Direction::Tail,
                    total_lines,
                    total_bytes,
                    shown_lines,
                    body.len() as u64,
                    range_ending(total_lines, shown_lines),
                    artifact_id,
                )),
            }
        }
        Some(head) => {
            let head_end = (head as u64).min(total_lines);
            if kept_lines >= head_end {
                return whole(body);
            }
            // The sink kept only the start of the head.
            match (limits.tail, artifact_path.filter(|_| artifact_id.is_some())) {
                (Some(tail), Some(path)) => {
                    let first = head_end.saturating_sub(tail as u64);
                    match read_lines(path, first, head_end, DEFAULT_MAX_BYTES) {
                        Some(read) if read.complete => whole(&read.text),
                        Some(read) => Shown {
                            truncation: Some(bytes_cut(
                                Direction::Tail,
                                total_lines,
                                total_bytes,
                                read.lines,
                                read.text.len() as u64,
                                range_ending(head_end, read.lines),
                                artifact_id,
                            )),
                            text: read.text,
                        },
                        None => kept_start(result, body, artifact_id),
                    }
                }
                _ => kept_start(result, body, artifact_id),
            }
        }
    }
}

/// The text when only the start of a head selection is in memory and the
/// artifact cannot help: what the engine made of the kept lines, labelled
/// with the lines it really is.
fn kept_start(result: &BashResult, body: &str, artifact_id: Option<String>) -> Shown {
    let kept_lines = result.output_lines;
    let shown_lines = crate::output::count_lines(body);
    let (direction, end) = if shown_lines < kept_lines {
        (Direction::Tail, kept_lines)
    } else {
        (Direction::Head, shown_lines)
    };
    Shown {
        text: body.to_string(),
        truncation: Some(bytes_cut(
            direction,
            result.total_lines,
            result.total_bytes,
            shown_lines,
            body.len() as u64,
            range_ending(end, shown_lines),
            artifact_id,
        )),
    }
}

/// Lines `end - count + 1 ..= end` (1-based), or none when nothing is shown.
fn range_ending(end: u64, count: u64) -> Option<LineRange> {
    (count > 0 && end >= count).then(|| LineRange {
        start: end - count + 1,
        end,
    })
}

fn bytes_cut(
    direction: Direction,
    total_lines: u64,
    total_bytes: u64,
    output_lines: u64,
    output_bytes: u64,
    shown_range: Option<LineRange>,
    artifact_id: Option<String>,
) -> Truncation {
    Truncation {
        direction,
        truncated_by: TruncatedBy::Bytes,
        total_lines,
        total_bytes,
        output_lines,
        output_bytes,
        max_bytes: Some(DEFAULT_MAX_BYTES),
        shown_range,
        artifact_id,
    }
}

/// Lines read back from an artifact.
struct ReadLines {
    /// The last lines of the range that fit in the byte bound.
    text: String,
    /// How many lines `text` holds.
    lines: u64,
    /// `text` is the whole range.
    complete: bool,
}

/// Lines `first..end` (0-based) of the file at `path`, keeping only the
/// last ones that fit in `max_bytes` (whole lines; a single line longer
/// than that is kept whole, as the sink does with the line it cuts). Reads
/// the file once, holding at most the bound plus one line. `None` when the
/// file cannot be read.
fn read_lines(path: &Path, first: u64, end: u64, max_bytes: usize) -> Option<ReadLines> {
    let mut reader = BufReader::new(File::open(path).ok()?);
    let mut kept: VecDeque<Vec<u8>> = VecDeque::new();
    let mut kept_bytes = 0usize;
    let mut dropped = false;
    let mut index = 0u64;
    let mut line = Vec::new();
    while index < end {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            break;
        }
        if index >= first {
            kept_bytes += line.len();
            kept.push_back(std::mem::take(&mut line));
            while kept_bytes > max_bytes && kept.len() > 1 {
                kept_bytes -= kept.pop_front().map_or(0, |l| l.len());
                dropped = true;
            }
        }
        index += 1;
    }
    let lines = kept.len() as u64;
    let bytes: Vec<u8> = kept.into_iter().flatten().collect();
    Some(ReadLines {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        lines,
        complete: !dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(output: &str, truncated: bool, total_lines: u64, kept_lines: u64) -> BashResult {
        BashResult {
            output: output.to_string(),
            exit_code: Some(0),
            cancelled: false,
            timed_out: false,
            truncated,
            total_lines,
            total_bytes: total_lines * 7,
            output_lines: kept_lines,
            output_bytes: kept_lines * 7,
            artifact_id: truncated.then(|| "4".to_string()),
            working_dir: None,
            session_reset: false,
        }
    }

    #[test]
    fn a_selection_held_whole_is_not_truncated() {
        let r = result("9\n10\n", false, 10, 10);
        let limits = Limits {
            head: None,
            tail: Some(2),
        };
        assert_eq!(select(&r, "9\n10\n", limits, None).truncation, None);
        // truncated stream, but the tail asked for is in the kept window
        let r = result("x\n", true, 1000, 300);
        assert_eq!(select(&r, "x\n", limits, None).truncation, None);
    }

    #[test]
    fn a_tail_longer_than_the_bound_shows_the_bound_with_real_line_numbers() {
        let r = result("a\nb\nc\n", true, 1000, 3);
        let limits = Limits {
            head: None,
            tail: Some(10),
        };
        let t = select(&r, "a\nb\nc\n", limits, None).truncation.unwrap();
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
    fn a_cut_head_is_labelled_from_line_one() {
        let r = result("1\n2\n", true, 1000, 2);
        let limits = Limits {
            head: Some(500),
            tail: None,
        };
        let t = select(&r, "1\n2\n", limits, None).truncation.unwrap();
        assert_eq!(t.direction, Direction::Head);
        assert_eq!(t.shown_range, Some(LineRange { start: 1, end: 2 }));
    }

    #[test]
    fn reads_a_line_range_within_a_byte_bound() {
        let path = std::env::temp_dir().join(format!("conch-select-{}", std::process::id()));
        let text: String = (1..=100).map(|i| format!("{i}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let r = read_lines(&path, 10, 20, 1000).unwrap();
        assert_eq!(r.text, "11\n12\n13\n14\n15\n16\n17\n18\n19\n20\n");
        assert!(r.complete);
        let r = read_lines(&path, 10, 20, 7).unwrap();
        assert_eq!(
            (r.text.as_str(), r.lines, r.complete),
            ("19\n20\n", 2, false)
        );
        let r = read_lines(&path, 95, 200, 1000).unwrap();
        assert_eq!(r.text, "96\n97\n98\n99\n100\n");
        std::fs::remove_file(&path).unwrap();
        assert!(read_lines(&path, 0, 1, 10).is_none());
    }
}
