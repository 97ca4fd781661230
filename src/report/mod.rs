//! Results: the saved model (`model`), its exporters (`csv`, `console`, `html`), how numbers
//! and points read in all of them (`format`), what they
//! show of it (`summary`, `answers`) and the one place that writes files, atomically.
//!
//! Owns the run directory layout: `report.json`, `results.csv`, `results_ops.csv`,
//! `report.html`, the latency
//! files under `exports/` (`exports`), and the
//! claim on it while a run writes it (`RunDir`). Must not run benchmarks.

pub mod answers;
pub mod compare;
pub mod console;
pub mod csv;
pub mod environment;
pub mod exports;
pub mod format;
pub mod html;
pub mod model;
pub mod paper;
pub mod seal;
pub mod summary;
pub mod uncertainty;

use crate::error::{Error, Result};
use model::Report;
use std::path::{Path, PathBuf};

pub const REPORT_JSON: &str = "report.json";
pub const RESULTS_CSV: &str = "results.csv";
/// The operation types of YCSB workloads' runs, beside results.csv (`csv::render_op_types`).
pub const RESULTS_OPS_CSV: &str = "results_ops.csv";
pub const REPORT_HTML: &str = "report.html";

/// Writes `bytes` to `path` via a temporary file in the same directory and a rename, so a
/// reader never sees a half-written file. A full disk says so: `disk full while writing …`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let failed = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::StorageFull || e.kind() == std::io::ErrorKind::QuotaExceeded {
            Error::runtime(format!("disk full while writing {} ({e})", path.display()))
        } else {
            Error::runtime(format!("cannot write {}: {e}", path.display()))
        }
    };
    let dir = path.parent().ok_or_else(|| Error::runtime(format!("{} has no parent directory", path.display())))?;
    // Created as any file is (0666 less the user's umask), not tempfile's private 0600:
    // colleagues on the host read reports the way they read the user's other files.
    let mut tmp =
        tempfile::Builder::new().permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666)).tempfile_in(dir).map_err(failed)?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(failed)?;
    tmp.persist(path).map_err(|e| failed(e.error))?;
    Ok(())
}

/// The directory a run writes, claimed for it at the start: created by it, or found empty
/// and locked through `RunDir::LOCK` in it (an exclusive `flock` held while the run lives:
/// of two runs with one `--out`, exactly one succeeds, and a run killed outright — SIGKILL,
/// OOM killer, power loss — leaves a lock file no one holds, which the next run or
/// `--resume` simply takes). Until `keep` is called, dropping it removes the lock and the
/// directories it created (the run's own and missing parents such as `dbsweep-runs/`), so
/// a run that fails before writing anything leaves nothing.
pub struct RunDir {
    path: PathBuf,
    /// The directories this claim created, innermost first.
    created: Vec<PathBuf>,
    kept: bool,
    lock: Option<std::fs::File>,
}

impl RunDir {
    /// The lock file inside a directory a run is writing; removed when the run ends.
    pub const LOCK: &str = ".dbsweep-run";

    /// Claims `path` for this run, or refuses with a usage error naming the fix.
    pub fn claim(path: &Path) -> Result<RunDir> {
        let shown = path.display();
        let missing_parents: Vec<PathBuf> =
            path.ancestors().skip(1).take_while(|p| !p.as_os_str().is_empty() && !p.exists()).map(Path::to_path_buf).collect();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::usage(format!("cannot create output directory {shown}: {e}; choose another --out")))?;
        }
        let created = match std::fs::create_dir(path) {
            Ok(()) => std::iter::once(path.to_path_buf()).chain(missing_parents).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && path.is_dir() => missing_parents,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(Error::usage(format!("--out {shown} is a file; name a directory")));
            }
            Err(e) => return Err(Error::usage(format!("cannot create output directory {shown}: {e}; choose another --out"))),
        };
        let mut claimed = RunDir { path: path.to_path_buf(), created, kept: false, lock: None };
        match Self::lock(path, "choose another --out") {
            Ok(file) => claimed.lock = Some(file),
            Err(e) => {
                claimed.created.clear();
                return Err(e);
            }
        }
        let others = std::fs::read_dir(path)
            .map_err(|e| Error::usage(format!("cannot use output directory {shown}: {e}")))?
            .filter_map(|entry| entry.ok())
            .any(|entry| entry.file_name() != Self::LOCK);
        if others {
            return Err(Error::usage(format!(
                "output directory {shown} is not empty; choose a new --out (dbsweep never overwrites results)"
            )));
        }
        Ok(claimed)
    }

    /// Claims the directory of an earlier run to continue it (`run --resume`): it must not
    /// be written by another run; what it holds stays.
    pub fn reopen(path: &Path) -> Result<RunDir> {
        let lock = Self::lock(path, "wait for it to end")?;
        Ok(RunDir { path: path.to_path_buf(), created: Vec::new(), kept: true, lock: Some(lock) })
    }

    /// Takes the lock file in `path` (creating it if needed) and writes this run's pid in
    /// it, or refuses (a usage error ending with `fix`) when a live run holds it.
    fn lock(path: &Path, fix: &str) -> Result<std::fs::File> {
        use std::io::Write;
        use std::os::unix::fs::MetadataExt;
        let shown = path.display();
        let unusable = |e: std::io::Error| Error::usage(format!("cannot use output directory {shown}: {e}; choose another --out"));
        let lock = path.join(Self::LOCK);
        // A run that ends unlinks the file while holding it: a claimant that opened the old
        // file in between holds a lock on a name no longer there, sees it and tries again.
        for _ in 0..8 {
            let mut file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&lock).map_err(unusable)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    let holder = std::fs::read_to_string(&lock).unwrap_or_default();
                    return Err(Error::usage(format!(
                        "output directory {shown} is being written by another dbsweep run ({}); {fix}",
                        holder.trim()
                    )));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(unusable(e)),
            }
            let still_there = std::fs::metadata(&lock)
                .is_ok_and(|named| file.metadata().is_ok_and(|held| held.ino() == named.ino() && held.dev() == named.dev()));
            if !still_there {
                continue;
            }
            file.set_len(0).map_err(unusable)?;
            file.write_all(format!("pid {}\n", std::process::id()).as_bytes()).map_err(unusable)?;
            return Ok(file);
        }
        Err(Error::usage(format!("output directory {shown}: its lock file keeps changing; choose another --out")))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// From now on the directory stays, whatever happens (it holds results).
    pub fn keep(&mut self) {
        self.kept = true;
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        // Only a lock this run holds (a refused claim must not remove its holder's), unlinked
        // while still held, then released: see `lock`.
        if let Some(held) = self.lock.take() {
            let _ = std::fs::remove_file(self.path.join(Self::LOCK));
            drop(held);
        }
        if !self.kept {
            // Only if empty: never removes anything but what this run made.
            for dir in &self.created {
                if std::fs::remove_dir(dir).is_err() {
                    break;
                }
            }
        }
    }
}

/// Writes every output of a report into `dir`; a paper study's report.json gets the
/// verdicts on its paper's findings as they stand (`paper::PaperVerdicts`).
pub fn write_all(dir: &Path, report: &Report) -> Result<()> {
    let judged;
    let report = match paper::PaperVerdicts::of(report) {
        Some(verdicts) => {
            judged = Report { paper_verdicts: Some(verdicts), ..report.clone() };
            &judged
        }
        None => report,
    };
    let json = serde_json::to_vec_pretty(report).map_err(|e| Error::runtime(format!("cannot encode report: {e}")))?;
    write_atomic(&dir.join(REPORT_JSON), &json)?;
    write_atomic(&dir.join(RESULTS_CSV), csv::render(report).as_bytes())?;
    write_atomic(&dir.join(RESULTS_OPS_CSV), csv::render_op_types(report).as_bytes())?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn written_files_have_the_mode_of_any_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::File::create(&plain).unwrap();
        let written = dir.path().join("written");
        write_atomic(&written, b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&written), mode(&plain), "0666 less the umask, as File::create");
        assert_eq!(std::fs::read(&written).unwrap(), b"x");
    }

    #[test]
    fn a_live_run_holds_its_directory_and_releases_it_when_done() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let first = RunDir::claim(&out).unwrap();
        let refused = RunDir::claim(&out).err().expect("a second run on the same --out").to_string();
        assert!(refused.contains("being written by another dbsweep run"), "{refused}");
        assert!(refused.contains(&format!("pid {}", std::process::id())), "names the holder: {refused}");
        let refused = RunDir::reopen(&out).err().expect("--resume while it runs").to_string();
        assert!(refused.ends_with("wait for it to end"), "{refused}");
        drop(first);
        assert!(!out.exists(), "an unkept directory it created is removed");
    }

    #[test]
    fn an_abandoned_claim_removes_the_parents_it_created_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("dbsweep-runs").join("day").join("run");
        drop(RunDir::claim(&out).unwrap());
        assert!(!dir.path().join("dbsweep-runs").exists(), "the parents it created are gone");
        let shared = dir.path().join("dbsweep-runs");
        std::fs::create_dir_all(shared.join("earlier")).unwrap();
        drop(RunDir::claim(&shared.join("day").join("run")).unwrap());
        assert!(!shared.join("day").exists(), "its own parent is gone");
        assert!(shared.join("earlier").exists(), "a parent that was there stays, with what is in it");
        let mut kept = RunDir::claim(&out).unwrap();
        kept.keep();
        drop(kept);
        assert!(out.exists(), "a kept run keeps its directories");
    }

    #[test]
    fn a_lock_left_by_a_killed_run_does_not_block_resume() {
        let dir = tempfile::tempdir().unwrap();
        // What a SIGKILLed run leaves: the file, with no process holding it.
        std::fs::write(dir.path().join(RunDir::LOCK), "pid 4194304\n").unwrap();
        std::fs::write(dir.path().join(REPORT_JSON), "{}").unwrap();
        let resumed = RunDir::reopen(dir.path()).expect("a stale lock is taken over");
        let holder = std::fs::read_to_string(dir.path().join(RunDir::LOCK)).unwrap();
        assert_eq!(holder, format!("pid {}\n", std::process::id()));
        drop(resumed);
        assert!(!dir.path().join(RunDir::LOCK).exists());
        assert!(dir.path().join(REPORT_JSON).exists(), "what the run wrote stays");
    }
}
