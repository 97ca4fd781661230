//! A paper study's verdicts end to end: `dbsweep run insert-find --quick` on its embedded
//! targets prints the verdict table at the end of the console output (within the width),
//! writes it into report.json (`paper_verdicts`) and at the top of report.html, and says
//! which findings it could not judge and the command that would. Then the mock target, under
//! the paper's names, forces the measured order of PG-row and PG-jsonb (kv-vs-relational's
//! batched selects) one way and the other: the verdict flips from reproduced to differs.

use crate::support;
use std::path::Path;

/// Runs `dbsweep run STUDY --quick` with `extra` arguments into `out` at 100 columns;
/// returns stdout.
fn run(study: &str, out: &Path, extra: &[&str]) -> String {
    let output = support::command()
        .args(["run", study, "--quick", "--no-progress", "--out"])
        .arg(out)
        .args(extra)
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(output.status.success(), "run failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

fn report_json(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap()
}

fn verdict<'a>(report: &'a serde_json::Value, finding: &str) -> &'a serde_json::Value {
    report["paper_verdicts"]["verdicts"].as_array().unwrap().iter().find(|v| v["finding"] == finding).unwrap()
}

#[test]
fn a_quick_run_shows_every_finding_with_its_verdict_in_console_json_and_html() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let console = run("insert-find", &out, &[]);
    for line in console.lines() {
        assert!(line.chars().count() <= 100, "wider than COLUMNS: {line:?}");
    }
    // Its wrapped lines joined.
    let console = console.split_whitespace().collect::<Vec<_>>().join(" ");

    // Console: last, after the findings, every line within the width.
    let table = console.find("the paper's findings, judged on this run").expect("the verdicts are printed");
    assert!(console.find("findings (each experiment").is_some_and(|f| f < table), "after the findings");
    assert!(console[table..].contains("21 findings: 0 reproduced, 0 differ, 21 not comparable"), "{console}");
    assert!(console[table..].contains(" NOT COMPARABLE insert-cli-hdd (insert-all n=100000): paper: Redis (HDD) 0.0518 < MySQL"));
    assert!(console[table..].contains("`dbsweep run insert-find --spawn mariadb,redis --sizes 100000` would"), "{console}");

    // report.json: every finding of the paper, each with a verdict and a reason.
    let report = report_json(&out);
    let verdicts = report["paper_verdicts"]["verdicts"].as_array().unwrap();
    // Table I's 16 findings, then the 5 trends over N the text states.
    assert_eq!(verdicts.len(), 21);
    assert!(verdicts.iter().all(|v| v["verdict"] == "not_comparable" && v["not_run"] == true && !v["reason"].as_str().unwrap().is_empty()));
    assert_eq!(report["paper_verdicts"]["judge_with"], "dbsweep run insert-find --spawn mariadb,redis --sizes 100000");
    assert_eq!(verdict(&report, "insert-driver-hdd")["paper"], "Redis (HDD) 0.2500 < MySQL (HDD) 2.5508 s (10.2x)");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.schema.json")).unwrap())
            .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&report).take(3).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "report.json with verdicts does not validate against docs/report.schema.json: {errors:#?}");
    let mut broken = report.clone();
    broken["paper_verdicts"]["verdicts"][0]["verdict"] = serde_json::json!("maybe");
    assert!(!validator.is_valid(&broken), "the schema knows the verdicts");

    // report.html: the table after the header, before the findings.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let section = html.find("<section id=\"paper-verdicts\"").expect("the verdict table");
    assert!(html.find("<section id=\"findings\"").is_some_and(|f| f > section), "before the findings");
    assert!(html.find("</header>").is_none_or(|h| h < section), "after the header");
    assert_eq!(html.matches("<tr data-finding=").count(), 21);
    assert!(html.contains("<tr data-finding=\"insert-all-driver-penalty-size\" data-verdict=\"not-comparable\">"));
    assert!(html.contains("<tr data-finding=\"find-cli-ssd\" data-verdict=\"not-comparable\">"));
    assert!(html.contains("<code>dbsweep run insert-find --spawn mariadb,redis --sizes 100000</code> would run them."));
}

#[test]
fn the_verdict_flips_when_the_measured_order_flips() {
    // kv-vs-relational's Figure 3(b): batched primary-key selects, PG-jsonb slower than
    // PG-row. Batches of 100 with 100 ops: one request per run, the mock's latency decides.
    let order = |row_us: u32, jsonb_us: u32| {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let (row, jsonb) = (format!("pg-row=mock:?latency_us={row_us}"), format!("pg-jsonb=mock:?latency_us={jsonb_us}"));
        let extra = ["--experiments", "get-orders", "--ops", "100", "--clients", "4", "--target", &row, "--target", &jsonb];
        run("kv-vs-relational", &out, &extra);
        verdict(&report_json(&out), "get-orders-batched-pg-row-jsonb").clone()
    };
    let same = order(1000, 8000);
    assert_eq!(same["verdict"], "reproduced", "{same:#}");
    assert!(same["dbsweep"].as_str().unwrap().starts_with("pg-row "), "{same:#}");
    assert!(same["reason"].as_str().unwrap().starts_with("the paper's order; at SF 0.01, the paper's SF 1"), "{same:#}");
    let flipped = order(8000, 1000);
    assert_eq!(flipped["verdict"], "differs", "{flipped:#}");
    assert!(flipped["reason"].as_str().unwrap().starts_with("the opposite order here: pg-jsonb "), "{flipped:#}");
}
