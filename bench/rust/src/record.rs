//! One measurement as a JSON line, the format every harness prints:
//! `{"lang","runtime","scenario","unit","samples":[..],"note"?}` or, for a
//! runtime that could not run, `{"lang","runtime","scenario","unavailable"}`.

use serde_json::{Value, json};

pub struct Record(Value);

impl Record {
    pub fn samples(scenario: &str, runtime: &str, unit: &str, samples: &[f64]) -> Record {
        Record(json!({
            "lang": "rust",
            "runtime": runtime,
            "scenario": scenario,
            "unit": unit,
            "samples": samples,
        }))
    }

    pub fn unavailable(scenario: &str, runtime: &str, why: &str) -> Record {
        Record(json!({
            "lang": "rust",
            "runtime": runtime,
            "scenario": scenario,
            "unavailable": why,
        }))
    }

    /// Adds a remark shown under the table (e.g. a failed correctness check).
    pub fn note(mut self, note: impl Into<String>) -> Record {
        self.0["note"] = Value::String(note.into());
        self
    }

    pub fn print(&self) {
        println!("{}", self.0);
    }
}
