//! Truncation metadata and the notice the model reads after truncated output.
//!
//! Every tool result, errors included, carries a [`Truncation`] when the
//! output was cut, and its text ends with [`format_output_notice`]:
//! `[Showing lines A-B of T (50.0KB limit). Full: artifact://<id>]`, which
//! tells the model what it is missing and where the rest is. The metadata is
//! handed to JS, Python and JSON hosts as is (see [`crate::wire`]), and
//! absent values are left out.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// Which end of the output was kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Head,
    Tail,
}

/// Which limit cut the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    Bytes,
    Lines,
}

/// Lines `start..=end` (1-based) of the whole output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LineRange {
    pub start: u64,
    pub end: u64,
}

/// What was shown of an output, and where the whole of it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Truncation {
    /// Which end of the output was kept.
    pub direction: Direction,
    /// Which limit cut the output.
    pub truncated_by: TruncatedBy,
    /// Lines and bytes of the whole output.
    pub total_lines: u64,
    pub total_bytes: u64,
    /// Lines and bytes shown.
    pub output_lines: u64,
    pub output_bytes: u64,
    /// The byte limit that cut the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<usize>,
    /// The lines shown, when they are one contiguous range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown_range: Option<LineRange>,
    /// The artifact holding the whole output (`artifact://<id>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<String>,
}

impl Truncation {
    /// The metadata of an output whose tail was kept, from the counts an
    /// output sink reports (its `OutputSummary`) and the sink's byte limit;
    /// `None` when nothing was cut. The cause is bytes when fewer bytes were
    /// shown than produced, else lines; the shown range is the last
    /// `output_lines` lines.
    pub fn from_counts(
        truncated: bool,
        total_lines: u64,
        total_bytes: u64,
        output_lines: u64,
        output_bytes: u64,
        artifact_id: Option<String>,
        max_bytes: Option<usize>,
    ) -> Option<Truncation> {
        if !truncated {
            return None;
        }
        let truncated_by = if output_bytes < total_bytes || output_lines >= total_lines {
            TruncatedBy::Bytes
        } else {
            TruncatedBy::Lines
        };
        Some(Truncation {
            direction: Direction::Tail,
            truncated_by,
            total_lines,
            total_bytes,
            output_lines,
            output_bytes,
            max_bytes,
            shown_range: Some(LineRange {
                start: (total_lines + 1).saturating_sub(output_lines),
                end: total_lines,
            }),
            artifact_id,
        })
    }

    /// The shown range when it makes sense (1-based, not empty, inside the
    /// output).
    fn valid_range(&self) -> Option<LineRange> {
        self.shown_range
            .filter(|r| r.start >= 1 && r.start <= r.end && r.end <= self.total_lines)
    }

    /// The size named as the limit: the byte limit, else what was shown.
    pub(crate) fn limit_size(&self) -> String {
        format_size(self.max_bytes.map_or(self.output_bytes, |b| b as u64))
    }
}

/// A byte count as the model reads it: `512B`, `50.0KB`, `1.5MB`, `2.0GB` (binary
/// units, one decimal rounded half up like JavaScript's `toFixed(1)`).
pub fn format_size(bytes: u64) -> String {
    const KB: u128 = 1024;
    let (unit, name) = match bytes as u128 {
        b if b < KB => return format!("{b}B"),
        b if b < KB * KB => (KB, "KB"),
        b if b < KB * KB * KB => (KB * KB, "MB"),
        _ => (KB * KB * KB, "GB"),
    };
    let tenths = (bytes as u128 * 10 + unit / 2) / unit;
    format!("{}.{}{name}", tenths / 10, tenths % 10)
}

/// The notice appended to a truncated output:
/// `\n\n[Showing lines A-B of T (50.0KB limit). Full: artifact://<id>]`.
/// Without a valid range it says `Showing X of T lines`; the limit is named
/// only when bytes cut the output, the artifact only when there is one.
pub fn format_output_notice(truncation: &Truncation) -> String {
    let t = truncation;
    let mut notice = String::from("\n\n[");
    // writing to a String cannot fail
    let _ = match t.valid_range() {
        Some(r) => write!(
            notice,
            "Showing lines {}-{} of {}",
            r.start, r.end, t.total_lines
        ),
        None => write!(
            notice,
            "Showing {} of {} lines",
            t.output_lines, t.total_lines
        ),
    };
    if t.truncated_by == TruncatedBy::Bytes {
        let _ = write!(notice, " ({} limit)", t.limit_size());
    }
    if let Some(id) = &t.artifact_id {
        let _ = write!(notice, ". Full: artifact://{id}");
    }
    notice.push(']');
    notice
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixty_thousand_bytes_of_a() {
        let t =
            Truncation::from_counts(true, 1, 60_000, 1, 51_200, Some("0".into()), None).unwrap();
        assert_eq!(t.truncated_by, TruncatedBy::Bytes);
        assert_eq!(
            format_output_notice(&t),
            "\n\n[Showing lines 1-1 of 1 (50.0KB limit). Full: artifact://0]"
        );
    }

    #[test]
    fn nothing_cut_means_no_metadata() {
        assert_eq!(
            Truncation::from_counts(false, 3, 10, 3, 10, None, None),
            None
        );
    }

    #[test]
    fn serializes_without_absent_fields() {
        let t = Truncation::from_counts(true, 10, 100, 4, 100, None, Some(51_200)).unwrap();
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "direction": "tail", "truncated_by": "lines", "total_lines": 10,
                "total_bytes": 100, "output_lines": 4, "output_bytes": 100,
                "max_bytes": 51200, "shown_range": {"start": 7, "end": 10}
            })
        );
    }

    #[test]
    fn sizes_round_like_to_fixed() {
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(1280), "1.3KB");
        assert_eq!(format_size(1_572_864), "1.5MB");
        assert_eq!(format_size(3 << 30), "3.0GB");
        assert_eq!(format_size(u64::MAX), "17179869184.0GB");
    }
}
