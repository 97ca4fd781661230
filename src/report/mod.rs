//! Results: the saved model (`model`), its exporters (`csv`, `console`, `html`) and the one
//! place that writes files, atomically.
//!
//! Owns the run directory layout: `report.json`, `results.csv`, `report.html`, and the
//! claim on it while a run writes it (`RunDir`). Must not run benchmarks.

pub mod compare;
pub mod console;
pub mod csv;
pub mod environment;
pub mod html;
pub mod model;

use crate::error::{Error, Result};
use model::Report;
use std::path::{Path, PathBuf};

pub const REPORT_JSON: &str = "report.json";
pub const RESULTS_CSV: &str = "results.csv";
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
    let mut tmp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(failed)?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(failed)?;
    tmp.persist(path).map_err(|e| failed(e.error))?;
    Ok(())
}

/// The directory a run writes, claimed for it at the start: created by it, or found empty
/// and locked by creating `RunDir::LOCK` in it (`O_EXCL`: of two runs with one `--out`,
/// exactly one succeeds). Until `keep` is called, dropping it removes the lock and a
/// directory it created, so a run that fails before writing anything leaves nothing.
pub struct RunDir {
    path: PathBuf,
    created: bool,
    kept: bool,
}

impl RunDir {
    /// The lock file inside a directory a run is writing; removed when the run ends.
    pub const LOCK: &str = ".dbsweep-run";

    /// Claims `path` for this run, or refuses with a usage error naming the fix.
    pub fn claim(path: &Path) -> Result<RunDir> {
        let shown = path.display();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::usage(format!("cannot create output directory {shown}: {e}; choose another --out")))?;
        }
        let created = match std::fs::create_dir(path) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && path.is_dir() => false,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(Error::usage(format!("--out {shown} is a file; name a directory")));
            }
            Err(e) => return Err(Error::usage(format!("cannot create output directory {shown}: {e}; choose another --out"))),
        };
        let mut claimed = RunDir { path: path.to_path_buf(), created, kept: false };
        if let Err(e) = Self::lock(path, "choose another --out") {
            claimed.created = false;
            return Err(e);
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
        Self::lock(path, "wait for it to end")?;
        Ok(RunDir { path: path.to_path_buf(), created: false, kept: true })
    }

    /// Creates the lock file in `path`, or refuses (a usage error ending with `fix`) when
    /// another run holds it.
    fn lock(path: &Path, fix: &str) -> Result<()> {
        let shown = path.display();
        let lock = path.join(Self::LOCK);
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&lock) {
            Ok(mut file) => {
                let _ = std::io::Write::write_all(&mut file, format!("pid {}\n", std::process::id()).as_bytes());
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let holder = std::fs::read_to_string(&lock).unwrap_or_default();
                Err(Error::usage(format!("output directory {shown} is being written by another dbsweep run ({}); {fix}", holder.trim())))
            }
            Err(e) => Err(Error::usage(format!("cannot use output directory {shown}: {e}; choose another --out"))),
        }
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
        let _ = std::fs::remove_file(self.path.join(Self::LOCK));
        if self.created && !self.kept {
            // Only if empty: never removes anything but what this run made.
            let _ = std::fs::remove_dir(&self.path);
        }
    }
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
}
