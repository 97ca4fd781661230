//! Build script: links dbsweep against the prebuilt DuckDB library and records the versions
//! of embedded engines that cannot report their own.
//!
//! libduckdb comes from `scripts/setup-embedded` (compiling DuckDB's C++ would take 30+
//! minutes here). Its directory is `$DUCKDB_LIB_DIR` when set, else
//! `${DBSWEEP_NATIVE_DIR:-$HOME/.cache/dbsweep/native}/duckdb-1.5.6`. libduckdb-sys (without
//! its `bundled` feature) only asks for `-l duckdb`; the search path and the rpath that lets
//! binaries and tests find the library at run time come from here, so nobody has to export
//! anything. This script must not download or compile anything.

use std::env;
use std::path::PathBuf;

/// The DuckDB version the `duckdb = "=1.10506.0"` crate is written for.
const DUCKDB_VERSION: &str = "1.5.6";

fn main() {
    for var in ["DUCKDB_LIB_DIR", "DBSWEEP_NATIVE_DIR", "HOME"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=Cargo.lock");
    record_crate_version("redb", "DBSWEEP_REDB_VERSION");
    record_git_revision();

    let dir = duckdb_dir();
    let lib = dir.join("libduckdb.so");
    // Also reruns once the library appears after a failed build.
    println!("cargo::rerun-if-changed={}", lib.display());
    if !lib.is_file() {
        // `cargo::error` fails the build with just this line; a non-zero exit would make
        // cargo dump all of this script's output around it.
        println!("cargo::error=libduckdb not found in {}: run scripts/setup-embedded", dir.display());
        return;
    }
    println!("cargo::rustc-link-search=native={}", dir.display());
    println!("cargo::rustc-link-arg=-Wl,-rpath,{}", dir.display());
    // Recorded in the duckdb target's settings: which library a result was measured with.
    println!("cargo::rustc-env=DBSWEEP_DUCKDB_LIB_DIR={}", dir.display());
}

fn duckdb_dir() -> PathBuf {
    if let Some(dir) = env::var_os("DUCKDB_LIB_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let native = env::var_os("DBSWEEP_NATIVE_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env::var_os("HOME").unwrap_or_default()).join(".cache/dbsweep/native"));
    native.join(format!("duckdb-{DUCKDB_VERSION}"))
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
