//! The commands on saved run directories: `compare` (runs side by side), `merge` (shards
//! into one run) and `report` (the files re-rendered from report.json). Must not run
//! anything.

use super::outcome::finish;
use super::say;
use crate::base::secret::Token;
use crate::error::Result;
use crate::{plan, report, runner};
use std::path::{Path, PathBuf};

/// `dbsweep compare`: the runs in `dirs` side by side, the first the baseline.
pub(super) fn compare(dirs: &[PathBuf], format: report::compare::Format, min_effect: &str) -> Result<()> {
    let min_effect = plan::stopping::parse_fraction("--min-effect", min_effect)?;
    let reports = dirs.iter().map(|d| report::load(d)).collect::<Result<Vec<_>>>()?;
    let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    say(&report::compare::Comparison::new(&names, &reports, min_effect).render(format))
}

/// `dbsweep merge`: joins shard run directories into `out` (new or empty), prints the
/// merged tables and fails (exit 1) as `run` does when the result is incomplete or void.
pub(super) fn merge(dirs: Vec<PathBuf>, out: Option<PathBuf>, command_line: Vec<String>) -> Result<()> {
    let parts = dirs.into_iter().map(|d| report::load(&d).map(|r| (d, r))).collect::<Result<Vec<_>>>()?;
    let token = Token::from_environment(|k| std::env::var(k).ok())?;
    let mut merged = runner::merge::merge(parts, command_line, token.as_ref())?;
    let out = out.unwrap_or_else(|| {
        let stamp = report::environment::stamp(std::time::SystemTime::now());
        PathBuf::from("dbsweep-runs").join(format!("{}-merged-{stamp}", merged.study))
    });
    // Claimed atomically, as `run` claims its --out.
    let mut dir = report::RunDir::claim(&out)?;
    report::exports::write_all(dir.path(), &mut merged)?;
    report::write_all(dir.path(), &merged)?;
    dir.keep();
    let files = [report::REPORT_JSON, report::RESULTS_CSV, report::RESULTS_OPS_CSV, report::REPORT_HTML].join(",");
    say(&format!(
        "{}\nmerged {} run directories: {}/{{{files}}}\n",
        report::console::render(&merged),
        merged.merged_from.len(),
        out.display()
    ))?;
    finish(&merged)
}

/// `dbsweep report`: re-renders the CSV, HTML and console tables of the run in `dir` from
/// its report.json.
pub(super) fn rerender(dir: &Path) -> Result<()> {
    let mut report = report::load(dir)?;
    report::exports::write_all(dir, &mut report)?;
    report::write_all(dir, &report)?;
    let (csv, ops, html) = (report::RESULTS_CSV, report::RESULTS_OPS_CSV, report::REPORT_HTML);
    let line = format!("\nre-rendered {csv}, {ops} and {html} in {} from {}\n", dir.display(), report::REPORT_JSON);
    say(&format!("{}{}", report::console::render(&report), report::console::fit(&line, report::console::width())))
}
