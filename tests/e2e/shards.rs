//! `run --shard I/N` and `dbsweep merge` end to end: the embedded study (in-process
//! engines) as one process and as three shards joined by `merge` has every target, point
//! and run exactly once with the same op counts; merging shards of different plans, a
//! shard twice or an incomplete set is refused or flagged; a shard whose report.json was
//! tampered with (a point, a run, a throughput, the seed, the plan, another plan's shard),
//! or one not signed with the worker token merge is given, is refused.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use support::{csv_rows, dbsweep, report};

/// The embedded study, small: every engine, every experiment.
const STUDY: &[&str] = &["run", "embedded", "--quick", "--ops", "200", "--no-progress"];

/// Starts `dbsweep run` with STUDY, `extra` and `--out out` in the background.
fn start(out: &Path, extra: &[&str]) -> std::process::Child {
    support::command()
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
            support::command()
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

/// A small plan on two mock targets in two shards: every tampering below stays quick.
const SMALL: &[&str] = &[
    "run",
    "--target",
    "a=mock:",
    "--target",
    "b=mock:",
    "--experiments",
    "get,insert",
    "--runs",
    "2",
    "--warmup",
    "1",
    "--rows",
    "1000",
    "--ops",
    "100",
    "--no-progress",
];

/// Runs SMALL's two shards into `dir`/shard0 and `dir`/shard1 with `extra` flags and the
/// worker token `token` (none: the variable is unset); returns their directories.
fn small_shards(dir: &Path, extra: &[&str], token: Option<&str>) -> [std::path::PathBuf; 2] {
    let shards = [dir.join("shard0"), dir.join("shard1")];
    let children: Vec<_> = shards
        .iter()
        .enumerate()
        .map(|(i, out)| {
            let mut command = support::command();
            command.args(SMALL).args(extra).args(["--shard", &format!("{i}/2"), "--out", out.to_str().unwrap()]);
            command.env_remove("DBSWEEP_WORKER_TOKEN").env_remove("DBSWEEP_WORKER_TOKEN_FILE");
            if let Some(token) = token {
                command.env("DBSWEEP_WORKER_TOKEN", token);
            }
            command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("start dbsweep")
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        wait_ok(child, &format!("shard {i}"));
    }
    shards
}

/// `dbsweep merge` of `dirs` into `out`, with the worker token `token`.
fn merge_with(dirs: &[&Path], out: &Path, token: Option<&str>) -> std::process::Output {
    let mut command = support::command();
    command.arg("merge").args(dirs).args(["--out", out.to_str().unwrap()]);
    command.env_remove("DBSWEEP_WORKER_TOKEN").env_remove("DBSWEEP_WORKER_TOKEN_FILE");
    if let Some(token) = token {
        command.env("DBSWEEP_WORKER_TOKEN", token);
    }
    command.output().expect("run dbsweep merge")
}

/// A copy of `shard`'s report.json in a new directory `to`, edited by `edit` and, with
/// `reseal`, sealed again as a forger who knows the algorithm would (a digest, or an HMAC
/// with the token `reseal` names).
fn tampered(shard: &Path, to: &Path, edit: impl FnOnce(&mut serde_json::Value), reseal: Option<Option<&str>>) -> std::path::PathBuf {
    std::fs::create_dir_all(to).unwrap();
    let mut json = report(shard);
    edit(&mut json);
    if let Some(token) = reseal {
        let mut sealed: dbsweep::report::model::Report = serde_json::from_value(json).unwrap();
        let token = token.map(|t| dbsweep::base::secret::Token::from_text(t, "a test").unwrap());
        dbsweep::report::seal::seal(&mut sealed, token.as_ref());
        json = serde_json::to_value(&sealed).unwrap();
    }
    std::fs::write(to.join("report.json"), serde_json::to_string_pretty(&json).unwrap()).unwrap();
    to.to_path_buf()
}

/// Asserts that merging `dirs` is refused with one line that names `culprit` and says
/// `why`, and that nothing was written.
fn refused(dirs: &[&Path], culprit: &Path, why: &str, token: Option<&str>, case: &str) {
    let out = culprit.with_extension("merged");
    let o = merge_with(dirs, &out, token);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{case}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{case}: one line: {stderr}");
    assert!(stderr.contains(&culprit.display().to_string()), "{case}: names the directory: {stderr}");
    assert!(stderr.contains(why), "{case}: says '{why}': {stderr}");
    assert!(!out.exists(), "{case}: nothing written");
}

/// The index of the first point of `target` and `experiment` in a report.
fn point_of(json: &serde_json::Value, experiment: &str, target: &str) -> usize {
    json["points"].as_array().unwrap().iter().position(|p| p["experiment"] == experiment && p["target"] == target).unwrap()
}

#[test]
fn merge_refuses_every_tampered_shard_and_joins_untouched_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let [zero, one] = small_shards(&tmp.path().join("plan"), &[], None);
    let [_, other_plan] = small_shards(&tmp.path().join("other"), &["--seed", "2"], None);
    let zero_json = report(&zero);
    let one_json = report(&one);
    let get_b = point_of(&one_json, "get", "b");
    let ours = zero_json["plan_hash"].clone();
    assert_ne!(report(&other_plan)["plan_hash"], ours);

    // Untouched: merged, complete.
    let merged = tmp.path().join("merged");
    let o = merge_with(&[&zero, &one], &merged, None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(report(&merged)["complete"], true);

    type Edit = Box<dyn FnOnce(&mut serde_json::Value)>;
    let delete_point: fn() -> Edit = || Box::new(|j| drop(j["points"].as_array_mut().unwrap().remove(1)));
    let cases: Vec<(&str, Edit, bool, &str)> = vec![
        ("a deleted point", delete_point(), false, "report.json does not match its digest"),
        ("a deleted point, digest made again", delete_point(), true, "complete but has no result for"),
        (
            "a throughput x1000",
            Box::new(move |j| {
                let s = &mut j["points"][get_b]["summary"]["median_ops_per_sec"];
                *s = serde_json::json!(s.as_f64().unwrap() * 1000.0);
            }),
            false,
            "report.json does not match its digest",
        ),
        (
            "a throughput x1000, digest made again",
            Box::new(move |j| {
                let s = &mut j["points"][get_b]["summary"]["median_ops_per_sec"];
                *s = serde_json::json!(s.as_f64().unwrap() * 1000.0);
            }),
            true,
            "its summary (throughput, latency) is not what its runs give",
        ),
        (
            "a run's ops x1000, digest made again",
            Box::new(move |j| {
                let ops = &mut j["points"][get_b]["runs"][2]["ops"];
                *ops = serde_json::json!(ops.as_u64().unwrap() * 1000);
            }),
            true,
            "its run 2 did 100000 ops, where its plan has 100",
        ),
        (
            "a deleted run",
            Box::new(move |j| drop(j["points"][get_b]["runs"].as_array_mut().unwrap().pop())),
            false,
            "report.json does not match its digest",
        ),
        (
            "a deleted run, digest made again",
            Box::new(move |j| drop(j["points"][get_b]["runs"].as_array_mut().unwrap().pop())),
            true,
            "2 runs, where its plan has 3 (1 warm-up)",
        ),
        ("an edited seed", Box::new(|j| j["seed"] = serde_json::json!(7)), false, "report.json does not match its digest"),
        ("an edited seed, digest made again", Box::new(|j| j["seed"] = serde_json::json!(7)), true, "its seed 7 is not its plan's seed"),
        (
            "an edited plan seed, hash kept, digest made again",
            Box::new(|j| {
                j["seed"] = serde_json::json!(7);
                j["plan"]["seed"] = serde_json::json!(7);
            }),
            true,
            "its saved plan hashes to",
        ),
        (
            "an edited plan (ops), hash kept, digest made again",
            Box::new(|j| j["plan"]["experiments"][1]["ops"] = serde_json::json!(100_000)),
            true,
            "(the plan or its hash was edited)",
        ),
        (
            "a point for a target not in the plan, digest made again",
            Box::new(move |j| {
                let mut forged = j["points"][get_b].clone();
                forged["target"] = serde_json::json!("evil");
                j["points"].as_array_mut().unwrap().push(forged);
            }),
            true,
            "for a target not in its plan",
        ),
        (
            "a point of the other shard's unit, digest made again",
            Box::new(move |j| {
                let theirs = zero_json["points"][point_of(&zero_json, "get", "nodb")].clone();
                j["points"].as_array_mut().unwrap().push(theirs);
            }),
            true,
            "which shard 0/2 runs",
        ),
        ("no seal", Box::new(|j| drop(j.as_object_mut().unwrap().remove("seal"))), false, "has no seal"),
    ];
    for (i, (case, edit, reseal, why)) in cases.into_iter().enumerate() {
        let culprit = tampered(&one, &tmp.path().join(format!("tampered{i}")), edit, reseal.then_some(None));
        refused(&[&zero, &culprit], &culprit, why, None, case);
    }
    // Another plan's shard with its hash edited to match: its plan does not hash to it.
    let culprit = tampered(&other_plan, &tmp.path().join("other-plan"), |j| j["plan_hash"] = ours, Some(None));
    refused(&[&zero, &culprit], &culprit, "its saved plan hashes to", None, "another plan's shard");
}

#[test]
fn with_a_worker_token_merge_takes_only_shards_signed_with_it() {
    const TOKEN: &str = "0123456789abcdef-the-run's-token";
    const OTHER: &str = "0123456789abcdef-another-token";
    let tmp = tempfile::tempdir().unwrap();
    let [zero, one] = small_shards(&tmp.path().join("signed"), &[], Some(TOKEN));
    let seal = &report(&zero)["seal"];
    assert_eq!(seal["algorithm"], "hmac_sha256", "{seal}");
    assert!(!report(&zero).to_string().contains(TOKEN), "the token itself is nowhere in the report");

    let merged = tmp.path().join("merged");
    let o = merge_with(&[&zero, &one], &merged, Some(TOKEN));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(report(&merged)["complete"], true);

    refused(&[&zero, &one], &zero, "signed with another token", Some(OTHER), "merged with another token");
    refused(&[&zero, &one], &zero, "set DBSWEEP_WORKER_TOKEN", None, "merged without the token");
    // A forger without the token: a shard signed with another token, or only digested.
    let forged = tampered(&one, &tmp.path().join("forged"), |j| j["seed"] = j["seed"].clone(), Some(Some(OTHER)));
    refused(&[&zero, &forged], &forged, "signed with another token", Some(TOKEN), "signed with another token");
    let digested = tampered(&one, &tmp.path().join("digested"), |_| {}, Some(None));
    refused(&[&zero, &digested], &digested, "not signed with the worker token", Some(TOKEN), "a digest only");
}
