//! Results: the saved model (`model`), its exporters (`csv`, `console`, `html`) and the one
//! place that writes files, atomically.
//!
//! Owns the run directory layout: `report.json`, `results.csv`, `report.html`. Must not run
//! benchmarks.

pub mod compare;
pub mod console;
pub mod csv;
pub mod environment;
pub mod html;
pub mod model;

use crate::error::{Error, Result};
use model::Report;
use std::path::Path;

pub const REPORT_JSON: &str = "report.json";
pub const RESULTS_CSV: &str = "results.csv";
pub const REPORT_HTML: &str = "report.html";

/// Writes `bytes` to `path` via a temporary file in the same directory and a rename, so a
/// reader never sees a half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().ok_or_else(|| Error::runtime(format!("{} has no parent directory", path.display())))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::runtime(format!("cannot write in {}: {e}", dir.display())))?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(|e| Error::runtime(format!("cannot write {}: {e}", path.display())))?;
    tmp.persist(path).map_err(|e| Error::runtime(format!("cannot write {}: {e}", path.display())))?;
    Ok(())
}

/// Writes every output of a report into `dir`.
pub fn write_all(dir: &Path, report: &Report) -> Result<()> {
    let json = serde_json::to_vec_pretty(report).map_err(|e| Error::runtime(format!("cannot encode report: {e}")))?;
    write_atomic(&dir.join(REPORT_JSON), &json)?;
    write_atomic(&dir.join(RESULTS_CSV), csv::render(report).as_bytes())?;
    write_atomic(&dir.join(REPORT_HTML), html::render(report).as_bytes())?;
    Ok(())
}

/// Reads a saved report.
pub fn load(dir: &Path) -> Result<Report> {
    let path = dir.join(REPORT_JSON);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::usage(format!("cannot read {}: {e}; pass a run directory written by `dbsweep run`", path.display())))?;
    let mut report: Report =
        serde_json::from_str(&text).map_err(|e| Error::usage(format!("{} is not a dbsweep report: {e}", path.display())))?;
    if report.format_version > model::FORMAT_VERSION {
        return Err(Error::usage(format!(
            "{} has format version {}, newer than this dbsweep ({}); upgrade dbsweep",
            path.display(),
            report.format_version,
            model::FORMAT_VERSION
        )));
    }
    report.upgrade();
    Ok(report)
}
