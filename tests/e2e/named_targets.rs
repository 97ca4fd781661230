//! End-to-end: `--spawn` and `--target` name what a run measures. The run measures those
//! systems beside the NO-DB ceiling, not the study's own engines, and the saved report
//! (its plan's description, the report's title data, the method box) says what ran.

use crate::support;

use support::{dbsweep, report};

#[test]
fn a_spawned_server_runs_beside_the_no_db_ceiling_and_the_report_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&["run", "--spawn", "redis", "--quick", "--experiments", "get", "--no-progress", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json = report(&out);
    let names =
        |list: &serde_json::Value| list.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(names(&json["targets"]), ["nodb", "redis"], "the embedded study's engines stay out");
    assert_eq!(names(&json["plan"]["targets"]), ["nodb", "redis"]);
    let measured: std::collections::BTreeSet<&str> =
        json["points"].as_array().unwrap().iter().map(|p| p["target"].as_str().unwrap()).collect();
    assert_eq!(measured, ["nodb", "redis"].into());

    let description = json["plan"]["description"].as_str().unwrap();
    assert_eq!(description, "The embedded study's experiments on redis, with the NO-DB ceiling");
    let method = json["plan"]["method"]["dbsweep"].as_str().unwrap();
    assert!(method.contains("median and min-max of 2 runs of at least 30 ms after a warm-up."), "--quick's runs: {method}");
    for said in [description, method] {
        assert!(!said.to_lowercase().contains("sqlite") && !said.contains("In-process engines"), "{said}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("The embedded study&#39;s experiments on redis, with the NO-DB ceiling"), "the report's header");
    assert!(!html.contains("In-process engines, no server needed"), "not the study's description");
}
