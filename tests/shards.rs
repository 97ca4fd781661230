//! `run --shard I/N` and `dbsweep merge` end to end: the embedded study (in-process
//! engines) as one process and as three shards joined by `merge` has every target, point
//! and run exactly once with the same op counts; merging shards of different plans, a
//! shard twice or an incomplete set is refused or flagged.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use support::{csv_rows, dbsweep, report};

/// The embedded study, small: every engine, every experiment.
const STUDY: &[&str] = &["run", "embedded", "--quick", "--ops", "200", "--no-progress"];

/// Starts `dbsweep run` with STUDY, `extra` and `--out out` in the background.
fn start(out: &Path, extra: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_dbsweep"))
        .args(STUDY)
        .args(extra)
        .args(["--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dbsweep")
}

fn wait_ok(child: std::process::Child, what: &str) {
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{what}: {}", String::from_utf8_lossy(&o.stderr));
}

/// One results.csv row's identity (target, experiment, point, run, op type) and its counts.
fn by_unit(dir: &Path) -> BTreeMap<String, (String, String, String, String)> {
    let mut out = BTreeMap::new();
    for r in csv_rows(dir) {
        let key = ["experiment", "target", "op", "clients", "batch", "batched", "param", "run"].map(|c| r[c].clone()).join("|");
        let counts = (r["ops"].clone(), r["requests"].clone(), r["rows"].clone(), r["ok_ops"].clone());
        assert!(out.insert(key.clone(), counts).is_none(), "{key} twice in {}", dir.display());
    }
    out
}

/// Per point and run, the count of each op type's latency histogram.
fn histogram_counts(json: &serde_json::Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for p in json["points"].as_array().unwrap() {
        for r in p["runs"].as_array().unwrap() {
            for (kind, summary) in r["service"].as_object().unwrap() {
                let key = format!("{}|{}|{}|{}|{}|{}", p["experiment"], p["target"], p["clients"], p["batch"], p["batched"], r["run"]);
                out.insert(format!("{key}|{kind}"), summary["count"].as_u64().unwrap());
            }
        }
    }
    out
}

#[test]
fn three_shards_merged_equal_one_process() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole");
    let shards: Vec<_> = (0..3).map(|i| tmp.path().join(format!("shard{i}"))).collect();
    // All four at once: shards are meant to run in parallel, and nothing they touch is shared.
    let children: Vec<_> = std::iter::once(start(&whole, &[]))
        .chain(shards.iter().enumerate().map(|(i, dir)| start(dir, &["--shard", &format!("{i}/3")])))
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        wait_ok(child, &format!("process {i}"));
    }
    let whole_json = report(&whole);
    let mut shard_rows = 0;
    for (i, dir) in shards.iter().enumerate() {
        let json = report(dir);
        assert_eq!(json["plan_hash"], whole_json["plan_hash"], "one plan");
        assert_eq!(json["shard"], serde_json::json!({"index": i, "count": 3}));
        assert!(!json["points"].as_array().unwrap().is_empty(), "shard {i} ran something");
        shard_rows += csv_rows(dir).len();
    }

    let merged = tmp.path().join("merged");
    let args: Vec<&str> =
        ["merge"].into_iter().chain(shards.iter().map(|d| d.to_str().unwrap())).chain(["--out", merged.to_str().unwrap()]).collect();
    let o = dbsweep(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let expected = by_unit(&whole);
    let got = by_unit(&merged);
    assert_eq!(got.len(), shard_rows, "every shard's rows, none dropped");
    assert_eq!(got.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>(), "every target, point and run exactly once");
    for (key, counts) in &expected {
        assert_eq!(&got[key], counts, "{key}: ops, requests, rows, ok_ops");
    }
    let merged_json = report(&merged);
    assert_eq!(histogram_counts(&merged_json), histogram_counts(&whole_json));
    assert_eq!(merged_json["complete"], true);
    assert_eq!(merged_json["plan_hash"], whole_json["plan_hash"]);
    let names = |j: &serde_json::Value| j["targets"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect::<Vec<_>>();
    assert_eq!(names(&merged_json), names(&whole_json), "every target, in plan order");
    assert_eq!(merged_json["merged_from"].as_array().unwrap().len(), 3);
    // The same rows in the same order as one process wrote them.
    let order = |dir: &Path| {
        csv_rows(dir).iter().map(|r| format!("{}|{}|{}|{}", r["experiment"], r["target"], r["clients"], r["run"])).collect::<Vec<_>>()
    };
    assert_eq!(order(&merged), order(&whole));
    let html = std::fs::read_to_string(merged.join("report.html")).unwrap();
    assert!(html.contains("redb") && html.contains("id=\"merged-from\"") && html.contains("<td>2/3</td>"));

    // Two shards of three: merged, but incomplete (exit 1), naming the missing shard.
    let partial = tmp.path().join("partial");
    let o = dbsweep(&["merge", shards[0].to_str().unwrap(), shards[1].to_str().unwrap(), "--out", partial.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("shard 2/3 not merged"), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(report(&partial)["complete"], false);

    // A shard twice: refused, one line, nothing written.
    let twice = tmp.path().join("twice");
    let o = dbsweep(&["merge", shards[0].to_str().unwrap(), shards[0].to_str().unwrap(), "--out", twice.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
    assert!(!twice.exists());
}

#[test]
fn shards_of_different_plans_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    let small = ["--target", "m=mock:", "--experiments", "get", "--runs", "1", "--warmup", "0", "--rows", "1000"];
    let a_child = start(&a, &[&small[..], &["--shard", "0/2", "--seed", "1"]].concat());
    let b_child = start(&b, &[&small[..], &["--shard", "1/2", "--seed", "2"]].concat());
    wait_ok(a_child, "shard 0");
    wait_ok(b_child, "shard 1");
    let out = tmp.path().join("merged");
    let o = dbsweep(&["merge", a.to_str().unwrap(), b.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("ran different plans"), "{stderr}");
    assert!(!out.exists(), "nothing written");
    // A bad --shard is bad input.
    let o = dbsweep(&["run", "--shard", "3/3", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--shard"));
}

/// kv-vs-relational `--quick` (TPC-H on its embedded targets, small: one run of 100 ops a
/// point) in three shards joined by `merge`: one complete report with every target of the
/// plan, every (target, experiment) work unit's every point exactly once, every shard's rows.
#[test]
fn kv_vs_relational_in_three_shards_merges_into_one_report_with_every_target() {
    let tmp = tempfile::tempdir().unwrap();
    let study = ["run", "kv-vs-relational", "--quick", "--ops", "100", "--runs", "1", "--warmup", "0", "--no-progress"];
    let shards: Vec<_> = (0..3).map(|i| tmp.path().join(format!("shard{i}"))).collect();
    let children: Vec<_> = shards
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            Command::new(env!("CARGO_BIN_EXE_dbsweep"))
                .args(study)
                .args(["--shard", &format!("{i}/3"), "--out", dir.to_str().unwrap()])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start dbsweep")
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        wait_ok(child, &format!("shard {i}"));
    }
    let merged = tmp.path().join("merged");
    let args: Vec<&str> =
        ["merge"].into_iter().chain(shards.iter().map(|d| d.to_str().unwrap())).chain(["--out", merged.to_str().unwrap()]).collect();
    let o = dbsweep(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let json = report(&merged);
    assert_eq!(json["complete"], true);
    assert_eq!(json["study"], "kv-vs-relational");
    let plan_targets: Vec<&str> = json["plan"]["targets"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(plan_targets.len() >= 3, "the study's targets: {plan_targets:?}");
    let targets: Vec<&str> = json["targets"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(targets, plan_targets, "every target of the plan, in plan order");

    // Every point the plan lists, for every target, once in the merged report.
    let mut expected = std::collections::BTreeSet::new();
    for e in json["plan"]["experiments"].as_array().unwrap() {
        for p in e["points"].as_array().unwrap() {
            for t in &plan_targets {
                expected.insert(format!("{}|{t}|{}|{}|{}|{}", e["name"], p["clients"], p["batch"], p["batched"], p["param"]));
            }
        }
    }
    let mut got = std::collections::BTreeSet::new();
    for p in json["points"].as_array().unwrap() {
        let key = format!(
            "{}|{}|{}|{}|{}|{}",
            p["experiment"],
            p["target"].as_str().unwrap(),
            p["clients"],
            p["batch"],
            p["batched"],
            p["param"]
        );
        assert!(got.insert(key.clone()), "{key} twice in the merged report");
    }
    assert_eq!(got, expected, "every target's every point, from one shard or another");
    let shard_rows: usize = shards.iter().map(|d| by_unit(d).len()).sum();
    assert_eq!(by_unit(&merged).len(), shard_rows, "every shard's rows, none dropped");
    let html = std::fs::read_to_string(merged.join("report.html")).unwrap();
    assert!(plan_targets.iter().all(|t| html.contains(t)), "every target in report.html");
}
