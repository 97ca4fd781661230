//! Shared by the end-to-end tests: running the `dbsweep` binary and reading its run
//! directory, and servers started by dbsweep's own spawn code (the same code `--spawn`
//! uses): one server per kind per test binary, shared by its tests, killed and removed
//! when the test binary exits.

#![allow(dead_code)]

pub mod faults;
pub mod slurm;

use dbsweep::servers::{self, Server, ServerKind, SpawnOptions};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, Once};

/// Runs the dbsweep binary with `args`.
pub fn dbsweep(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dbsweep")).args(args).output().expect("run dbsweep")
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
#[allow(dead_code)]
pub fn op_type_rows(dir: &Path) -> Vec<HashMap<String, String>> {
    rows_of(&dir.join("results_ops.csv"))
}

fn rows_of(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
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
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
}

static SERVERS: Mutex<Vec<Server>> = Mutex::new(Vec::new());
static AT_EXIT: Once = Once::new();

extern "C" fn stop_all() {
    let servers = std::mem::take(&mut *SERVERS.lock().unwrap_or_else(|e| e.into_inner()));
    drop(servers);
}

/// The URL of this test binary's server of `kind`, starting it on first use.
pub fn url(kind: ServerKind) -> String {
    AT_EXIT.call_once(|| {
        // SAFETY: registers a plain function to run at process exit.
        unsafe {
            libc::atexit(stop_all);
        }
    });
    let mut servers = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = servers.iter().find(|s| s.kind() == kind) {
        return s.url();
    }
    // Spawn on a runtime of our own: test runtimes end with their test, the server must not.
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(servers::spawn(kind, &SpawnOptions::default()))
    })
    .join()
    .expect("spawn thread")
    .unwrap_or_else(|e| panic!("could not start {kind}: {e} (run scripts/setup-servers)"));
    let url = server.url();
    servers.push(server);
    url
}

/// The process id of this test binary's server of `kind` (started on first use), e.g. to
/// pause it with SIGSTOP.
pub fn pid(kind: ServerKind) -> u32 {
    url(kind);
    SERVERS.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|s| s.kind() == kind).expect("started above").pid()
}
