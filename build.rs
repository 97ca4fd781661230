//! Build script: links dbsweep against the prebuilt DuckDB and MonetDBe libraries and records
//! the versions of embedded engines that cannot report their own.
//!
//! Both libraries come from `scripts/setup-embedded` (compiling them would take 30+ minutes
//! here). libduckdb's directory is `$DUCKDB_LIB_DIR` when set, else
//! `${DBSWEEP_NATIVE_DIR:-$HOME/.cache/dbsweep/native}/duckdb-1.5.6`; libmonetdbe's is
//! `$MONETDBE_LIB_DIR` when set, else `.../native/monetdbe-0.11`. libduckdb-sys (without its
//! `bundled` feature) and the MonetDBe binding (`src/adapter/embedded/monetdb/ffi.rs`) only
//! ask for `-l duckdb` / `-l monetdbe`; the search paths and the rpath that lets binaries and
//! tests find the libraries at run time come from here, so nobody has to export anything. The
//! rpath is written as `DT_RPATH`, not the linker's default `DT_RUNPATH`: libmonetdbe's own
//! dependencies (libmonetdbsql, libbat, ...) sit beside it and are found only through the
//! executable's `DT_RPATH`, which the loader also applies to libraries' dependencies
//! (`DT_RUNPATH` applies to the executable's direct dependencies only). This script must not
//! download or compile anything.

use std::env;
use std::path::{Path, PathBuf};

/// The DuckDB version the `duckdb = "=1.10506.0"` crate is written for.
const DUCKDB_VERSION: &str = "1.5.6";
/// The `monetdbe` wheel whose libraries `scripts/setup-embedded` installs.
const MONETDBE_PACKAGE_VERSION: &str = "0.11";

fn main() {
    for var in ["DUCKDB_LIB_DIR", "MONETDBE_LIB_DIR", "DBSWEEP_NATIVE_DIR", "HOME"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=Cargo.lock");
    record_crate_version("redb", "DBSWEEP_REDB_VERSION");
    record_git_revision();

    let duckdb = native_dir("DUCKDB_LIB_DIR", &format!("duckdb-{DUCKDB_VERSION}"));
    let monetdbe = native_dir("MONETDBE_LIB_DIR", &format!("monetdbe-{MONETDBE_PACKAGE_VERSION}"));
    if !(link_library(&duckdb, "libduckdb.so") & link_library(&monetdbe, "libmonetdbe.so")) {
        return;
    }
    println!("cargo::rustc-link-arg=-Wl,--disable-new-dtags");
    // Recorded in the targets' settings: which library a result was measured with.
    println!("cargo::rustc-env=DBSWEEP_DUCKDB_LIB_DIR={}", duckdb.display());
    println!("cargo::rustc-env=DBSWEEP_MONETDBE_LIB_DIR={}", monetdbe.display());
}

/// `$var` when set, else `name` under dbsweep's native directory.
fn native_dir(var: &str, name: &str) -> PathBuf {
    if let Some(dir) = env::var_os(var).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let native = env::var_os("DBSWEEP_NATIVE_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env::var_os("HOME").unwrap_or_default()).join(".cache/dbsweep/native"));
    native.join(name)
}

/// Adds `dir` to the link search path and the rpath; false (with a build error) when
/// `library` is not there.
fn link_library(dir: &Path, library: &str) -> bool {
    let lib = dir.join(library);
    // Also reruns once the library appears after a failed build.
    println!("cargo::rerun-if-changed={}", lib.display());
    if !lib.is_file() {
        // `cargo::error` fails the build with just this line; a non-zero exit would make
        // cargo dump all of this script's output around it.
        println!("cargo::error={library} not found in {}: run scripts/setup-embedded", dir.display());
        return false;
    }
    println!("cargo::rustc-link-search=native={}", dir.display());
    println!("cargo::rustc-link-arg=-Wl,-rpath,{}", dir.display());
    true
}

/// Reads a dependency's locked version from Cargo.lock into a compile-time env var, for
/// engines without a run-time version call.
fn record_crate_version(krate: &str, var: &str) {
    let lock = std::fs::read_to_string(PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("Cargo.lock")).unwrap_or_default();
    let name_line = format!("name = \"{krate}\"");
    let version = lock
        .split("[[package]]")
        .find(|block| block.lines().any(|l| l.trim() == name_line))
        .and_then(|block| block.lines().find_map(|l| l.trim().strip_prefix("version = \"")?.strip_suffix('"').map(str::to_owned)))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo::rustc-env={var}={version}");
}

/// Records the commit dbsweep is built from (saved in every report), when built from a git
/// checkout; a tarball build simply has none.
fn record_git_revision() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(&root)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = root.join(dir);
        println!("cargo::rerun-if-changed={}", dir.join("HEAD").display());
        println!("cargo::rerun-if-changed={}", dir.join("refs").display());
    }
    if let Some(rev) = git(&["rev-parse", "HEAD"]) {
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        println!("cargo::rustc-env=DBSWEEP_GIT_REVISION={rev}{}", if dirty { "-dirty" } else { "" });
    }
}
