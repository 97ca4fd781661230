//! The one place the test binaries (`e2e`, `library`, `conformance`, `quiet`) share helpers from:
//! running the `dbsweep` binary and reading its run directories (here), servers started
//! by dbsweep's own spawn code (`servers`), clients of the libraries' own (`clients`),
//! and waiting on processes (`processes`). Test modules call these and define no copy of
//! their own; nothing here asserts on timing.

// Each test binary uses a part of what is here.
#![allow(dead_code, unused_imports)]

mod clients;
pub mod faults;
mod processes;
mod servers;
pub mod slurm;

pub use clients::{open, open_in, pg_client, redis_calls, redis_info};
pub use processes::{process_exists, wait_until};
pub use servers::{pid, spawn, url, url_as};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The path of the dbsweep binary under test (for scripts and wrappers that run it:
/// `DBSWEEP=` for the recipes, `srun`, `ip netns exec`).
pub const BIN: &str = env!("CARGO_BIN_EXE_dbsweep");

/// The dbsweep binary as a command: add arguments and environment, then run it.
pub fn command() -> Command {
    Command::new(BIN)
}

/// The dbsweep binary as a command with its stdout and stderr piped, to start it and
/// collect its output when it ends (`wait_with_output`).
pub fn piped() -> Command {
    let mut command = command();
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// The repository's root directory (docs, recipes, golden files).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What a finished dbsweep printed: its stdout, then its stderr.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Runs the dbsweep binary with `args` to its end.
pub fn dbsweep(args: &[&str]) -> Output {
    command().args(args).output().expect("run dbsweep")
}

/// Starts the dbsweep binary with `args` (stdout and stderr piped) and returns at once.
pub fn start(args: &[&str]) -> Child {
    piped().args(args).spawn().expect("start dbsweep")
}

/// Starts the dbsweep binary with `args` and its temporary directories (spawned servers'
/// data, scratch) in `tmp`, so the test sees everything it leaves behind.
pub fn start_in(tmp: &Path, args: &[&str]) -> Child {
    piped().args(args).env("TMPDIR", tmp).spawn().expect("start dbsweep")
}

/// Names of the entries of `dir`, sorted (none when it does not exist).
pub fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// Every file under `dir`, at any depth, with its bytes, sorted by path.
pub fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// The rows of a run directory's results.csv, by column name.
pub fn csv_rows(dir: &Path) -> Vec<HashMap<String, String>> {
    rows_of(&dir.join("results.csv"))
}

/// The rows of a run directory's results_ops.csv (each operation type of YCSB workloads'
/// runs), by column name.
pub fn op_type_rows(dir: &Path) -> Vec<HashMap<String, String>> {
    rows_of(&dir.join("results_ops.csv"))
}

fn rows_of(path: &Path) -> Vec<HashMap<String, String>> {
    rows_in(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// The rows of a CSV text (dbsweep's: a header line, no quoted commas), by column name.
pub fn rows_in(text: &str) -> Vec<HashMap<String, String>> {
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(str::to_string).collect();
    lines.map(|l| header.iter().cloned().zip(l.split(',').map(str::to_string)).collect()).collect()
}

/// Per (experiment, op, point, run) of `target`'s results.csv rows: its ops, ok ops, rows
/// and requests, to compare two deployments that ran the same plan.
pub fn counts_by_point(dir: &Path, target: &str) -> std::collections::BTreeMap<String, [String; 4]> {
    csv_rows(dir)
        .into_iter()
        .filter(|r| r["target"] == target)
        .map(|r| {
            let key = ["experiment", "op", "clients", "batch", "batched", "param", "run"].map(|c| r[c].clone()).join("|");
            (key, ["ops", "ok_ops", "rows", "requests"].map(|c| r[c].clone()))
        })
        .collect()
}

/// Runs `study` (the arguments after `dbsweep`) with `--spawn spawn` (one server and one
/// cluster), one run a point, and checks that target `cluster` measured every point target
/// `single` did, with the same ops, ok ops, rows and requests, every op successful; returns
/// `cluster`'s target from report.json.
pub fn cluster_counts_what_one_server_counts(study: &[&str], spawn: &str, single: &str, cluster: &str) -> serde_json::Value {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o =
        dbsweep(&[study, &["--spawn", spawn, "--runs", "1", "--warmup", "0", "--no-progress", "--out", out.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (one, many) = (counts_by_point(&out, single), counts_by_point(&out, cluster));
    assert!(!one.is_empty(), "{single} measured something");
    assert_eq!(one, many, "{cluster} sent the same ops and found the same rows as {single}");
    for (key, [ops, ok_ops, ..]) in &many {
        assert_eq!(ops, ok_ops, "{key}: every op of {cluster} succeeded");
    }
    let targets = report(&out)["targets"].take();
    targets.as_array().unwrap().iter().find(|t| t["name"] == cluster).unwrap_or_else(|| panic!("{cluster}'s target")).clone()
}

/// A run directory's report.json.
pub fn report(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("report.json")).unwrap_or_else(|e| panic!("{}/report.json: {e}", dir.display()));
    serde_json::from_str(&text).expect("report.json is valid JSON")
}

/// Whether `dir` has a report.json with at least one point saved (false while there is
/// none, or while it is being replaced).
pub fn report_has_points(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("report.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|j| j["points"].as_array().is_some_and(|p| !p.is_empty()))
}

/// Whether a report.json point carries the flag `flag` (`"not_converged"`, `"void"`, ...).
pub fn has_flag(point: &serde_json::Value, flag: &str) -> bool {
    point["flags"].as_array().unwrap().iter().any(|f| f["flag"] == flag)
}
