//! `--durability`: one level asked of every target that has a setting for it. Spawned
//! servers start at that level (read back from the servers themselves), embedded engines
//! open at it, every target's `durability` setting states its level, a target that cannot
//! follow is named in the warnings, and the findings call out targets that differ.

use crate::support;

use std::collections::BTreeMap;
use support::{dbsweep, report};

/// Each target's `durability` setting, and the warnings, of a short run.
fn run(extra: &[&str]) -> (BTreeMap<String, String>, Vec<String>, serde_json::Value, String) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut args = vec!["run", "--experiments", "get", "--ops", "200", "--rows", "1000", "--runs", "1", "--warmup", "0", "--no-progress"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let o = dbsweep(&args);
    // The console wraps its lines to the width; the words are what is checked.
    let stdout = String::from_utf8_lossy(&o.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let json = report(&out);
    let levels = json["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["system"] != "nodb")
        .map(|t| (t["name"].as_str().unwrap().to_string(), t["settings"]["durability"].as_str().unwrap_or("(none)").to_string()))
        .collect();
    let warnings = json["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect();
    (levels, warnings, json, stdout)
}

fn level(levels: &BTreeMap<String, String>, target: &str) -> String {
    levels[target].split(':').next().unwrap().to_string()
}

#[test]
fn periodic_durability_reaches_spawned_servers_and_embedded_engines() {
    let (levels, warnings, json, stdout) =
        run(&["--spawn", "redis,postgres,mariadb", "--target", "sqlite=sqlite:", "--target", "duckdb=duckdb:", "--durability", "periodic"]);
    for target in ["redis", "pg-row", "mariadb", "sqlite"] {
        assert_eq!(level(&levels, target), "periodic", "{target}: {levels:?}");
    }
    let settings = |target: &str| json["targets"].as_array().unwrap().iter().find(|t| t["name"] == target).unwrap()["settings"].clone();
    // What the servers and the engine report about themselves.
    assert_eq!(settings("redis")["appendonly"], "yes");
    assert_eq!(settings("redis")["appendfsync"], "everysec");
    assert_eq!(settings("pg-row")["synchronous_commit"], "off");
    assert_eq!(settings("pg-row")["fsync"], "on");
    assert_eq!(settings("mariadb")["innodb_flush_log_at_trx_commit"], "2");
    assert_eq!(settings("sqlite")["synchronous"], "normal");
    // Spawned servers were watched until quiet after their load; embedded engines need not.
    for target in ["redis", "pg-row", "mariadb"] {
        let settle = settings(target)["settle_after_load"].as_str().unwrap_or_default().to_string();
        assert!(settle.starts_with("quiet after ") && settle.contains("server CPU"), "{target}: {settle:?}");
    }
    assert!(settings("sqlite").get("settle_after_load").is_none());
    // DuckDB has one level (commit): named in the warnings, and the findings say who differs.
    assert_eq!(level(&levels, "duckdb"), "commit");
    let about_duckdb: Vec<&String> = warnings.iter().filter(|w| w.starts_with("duckdb: durability is commit")).collect();
    assert_eq!(about_duckdb.len(), 1, "{warnings:?}");
    assert!(about_duckdb[0].ends_with(
        "not the study's periodic (duckdb offers no periodic level, or it is a server dbsweep did not start and never reconfigures)"
    ));
    assert!(!warnings.iter().any(|w| w.starts_with("redis:") || w.starts_with("pg-row:") || w.starts_with("sqlite:")), "{warnings:?}");
    assert!(stdout.contains("Durability differs: commit — duckdb; periodic — "), "{stdout}");
    assert_eq!(json["plan"]["durability"], "periodic");
}

#[test]
fn without_a_level_each_system_keeps_its_own_and_the_difference_is_called_out() {
    let (levels, warnings, _, stdout) = run(&["--spawn", "redis", "--target", "sqlite=sqlite:?synchronous=full"]);
    assert_eq!(level(&levels, "redis"), "none", "{levels:?}");
    assert_eq!(levels["redis"], "none: no append-only file (appendonly no)");
    assert_eq!(level(&levels, "sqlite"), "commit");
    assert!(!warnings.iter().any(|w| w.contains("durability")), "no level asked, nothing to warn: {warnings:?}");
    assert!(stdout.contains("Durability differs: commit — sqlite; none — redis."), "{stdout}");
}

#[test]
fn commit_durability_makes_spawned_redis_fsync_every_write() {
    let (levels, warnings, json, _) = run(&["--spawn", "redis", "--durability", "commit"]);
    assert_eq!(levels["redis"], "commit: append-only file fsynced at every write (appendfsync always)");
    let redis = json["targets"].as_array().unwrap().iter().find(|t| t["name"] == "redis").unwrap();
    assert_eq!(redis["settings"]["appendfsync"], "always");
    assert!(!warnings.iter().any(|w| w.contains("durability")), "{warnings:?}");
}

#[test]
fn a_bad_level_is_a_one_line_usage_error() {
    let o = dbsweep(&["run", "--durability", "always", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--durability must be none, periodic or commit"), "{stderr}");
}
