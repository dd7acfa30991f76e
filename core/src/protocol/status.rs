//! The status records bash writes on the status descriptor after each run:
//! `seq NUL status NUL dir NUL`, dir being the directory bash is in.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::PathBuf;

/// One completed run as reported by bash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusRecord {
    pub seq: u64,
    pub status: i32,
    /// The directory bash is in, as its `pwd` shows it (not a `$PWD` a
    /// command set), byte for byte (a directory's name need not be UTF-8).
    pub cwd: PathBuf,
}

/// Accumulates bytes from the status descriptor into records.
#[derive(Default)]
pub struct StatusParser {
    buf: Vec<u8>,
}

impl StatusParser {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The bytes of a record not complete yet, for another parser to go on.
    pub fn into_pending(self) -> Vec<u8> {
        self.buf
    }

    /// The next complete record, if one has arrived.
    pub fn next_record(&mut self) -> Option<StatusRecord> {
        let mut fields = self.buf.split(|&b| b == 0);
        let (seq, status, cwd) = (fields.next()?, fields.next()?, fields.next()?);
        // A record is complete only when its third field is terminated.
        fields.next()?;
        let used = seq.len() + status.len() + cwd.len() + 3;
        let rec = StatusRecord {
            seq: std::str::from_utf8(seq).ok()?.parse().ok()?,
            status: std::str::from_utf8(status).ok()?.parse().unwrap_or(1),
            cwd: OsStr::from_bytes(cwd).into(),
        };
        self.buf.drain(..used);
        Some(rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_records_parse_across_pushes() {
        let mut p = StatusParser::default();
        p.push(b"3\x000\x00/tm");
        assert_eq!(p.next_record(), None);
        p.push(b"p\x004\x00");
        assert_eq!(
            p.next_record(),
            Some(StatusRecord {
                seq: 3,
                status: 0,
                cwd: "/tmp".into(),
            })
        );
        p.push(b"2\x00/x\x00");
        assert_eq!(
            p.next_record(),
            Some(StatusRecord {
                seq: 4,
                status: 2,
                cwd: "/x".into(),
            })
        );

        assert_eq!(p.next_record(), None);
    }
}
