//! A user's SQL script on every SQL system (`run --sql-file`, `--builtin`): pgbench's tables
//! loaded at a small scale in SQLite, DuckDB and a spawned PostgreSQL (row counts checked),
//! scripts run pass by pass through the adapters (answers compared across systems, writes
//! checked by what they left), and the whole command end to end: op counts, agreeing
//! answer digests, a deliberately different per-dialect statement flagged ANSWER MISMATCH
//! with exit 1, and bad scripts refused with exit 2 before anything is created.

use crate::support::{self, csv_rows, dbsweep, report};
use dbsweep::adapter::{Connection, OpenContext, Target, TargetUrl, registry};
use dbsweep::base::op::{Op, Outcome};
use dbsweep::base::rng::Stream;
use dbsweep::base::script::Script;
use dbsweep::data::{DataSpec, Dataset};
use dbsweep::servers::ServerKind;
use std::path::Path;
use std::sync::Arc;

const SCALE: f64 = 0.01;

/// Every table of pgbench's data at `SCALE`, loaded into a target named `name` at `url`.
async fn loaded(name: &str, url: &str, scratch: &Path) -> (Arc<dyn Target>, Dataset) {
    let ctx = OpenContext::new(scratch.to_path_buf());
    let target = registry::open(name, &TargetUrl::parse(url).unwrap(), &ctx).unwrap_or_else(|e| panic!("{name}: {e}"));
    let dataset = Dataset::new(&DataSpec::Pgbench { scale: SCALE }, 42);
    target.prepare(&dataset.tables).await.unwrap_or_else(|e| panic!("{name}: prepare: {e}"));
    for (t, def) in dataset.tables.iter().enumerate() {
        target.load(def, dataset.initial(t)).await.unwrap_or_else(|e| panic!("{name}: load {}: {e}", def.name));
    }
    (target, dataset)
}

fn script(text: &str) -> Arc<Script> {
    let tables: Vec<String> = dbsweep::data::pgbench::TABLES.iter().map(|t| t.to_string()).collect();
    Arc::new(dbsweep::plan::script::parse("test.sql", text, &tables).unwrap())
}

/// Passes `0..passes` of `script` on one connection, with the values every system gets.
async fn passes(conn: &mut dyn Connection, script: &Arc<Script>, passes: u64) -> Vec<Outcome> {
    let stream = Stream::new(42, 7);
    let mut outcomes = Vec::new();
    for seq in 0..passes {
        let values = dbsweep::workload::script::values(script, SCALE, &stream, seq);
        let op = Op::Script { script: script.clone(), values };
        outcomes.push(conn.execute(&op).await.unwrap_or_else(|e| panic!("pass {seq}: {e}")));
    }
    outcomes
}

const READ: &str = "\\set aid random(1, 100000 * :scale)\n\\set n random_exponential(1, 40, 3)\n\
    SELECT aid, bid, abalance FROM pgbench_accounts WHERE aid BETWEEN :aid AND :aid + :n;\n\
    SELECT count(*), sum(abalance) FROM pgbench_accounts JOIN pgbench_branches USING (bid);\n";

const WRITE: &str = "\\set aid random(1, 1000)\n\\set delta random(-5000, 5000)\nBEGIN;\n\
    UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
    SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
    INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, :aid, :delta, CURRENT_TIMESTAMP);\nEND;\n";

const TOTAL: &str = "SELECT sum(abalance), count(*) FROM pgbench_accounts;\nSELECT count(*), sum(delta) FROM pgbench_history;\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_load_run_and_agree_on_sqlite_duckdb_and_postgres() {
    let pg = support::url(ServerKind::Postgres);
    let dir = tempfile::tempdir().unwrap();
    let (read, write, total) = (script(READ), script(WRITE), script(TOTAL));
    let mut answers = Vec::new();
    for (name, url) in [("sqlite", "sqlite:"), ("duckdb", "duckdb:"), ("pg", pg.as_str())] {
        let (target, dataset) = loaded(name, url, dir.path()).await;
        for (t, def) in dataset.tables.iter().enumerate() {
            let expected = [1000, 1, 10, 0][t];
            assert_eq!(dataset.initial_rows(t), expected, "{}", def.name);
            assert_eq!(target.count_rows(def).await.unwrap(), expected, "{name}: rows of {}", def.name);
        }
        assert!(target.info().capabilities.ops.contains(&dbsweep::base::op::OpKind::Script), "{name}");
        let mut conn = target.connect().await.unwrap();
        let reads = passes(conn.as_mut(), &read, 40).await;
        assert!(reads.iter().all(|o| o.rows >= 2 && o.answer.is_some()), "{name}: every pass answers: {reads:?}");
        let writes = passes(conn.as_mut(), &write, 25).await;
        assert!(writes.iter().all(|o| o.answer.is_none() && o.rows == 3), "{name}: a writing pass is not compared: {writes:?}");
        assert_eq!(target.count_rows(&dataset.tables[3]).await.unwrap(), 25, "{name}: one history row per pass");
        let after = passes(conn.as_mut(), &total, 1).await;
        answers.push((name, reads.into_iter().map(|o| o.answer).collect::<Vec<_>>(), after[0].answer.clone()));
        drop(conn);
        target.cleanup().await.unwrap();
    }
    let (first, reads, totals) = &answers[0];
    for (name, other_reads, other_totals) in &answers[1..] {
        assert_eq!(other_reads, reads, "{name} and {first} answer the same reads alike");
        assert_eq!(other_totals, totals, "{name} and {first} hold the same balances after the same writes");
    }
    let fresh = passes(loaded("again", "sqlite:", dir.path()).await.0.connect().await.unwrap().as_mut(), &total, 1).await;
    assert_ne!(fresh[0].answer, *totals, "the writes changed what the totals read");
}

/// One script point of a run's report.
#[derive(Debug)]
struct ScriptPoint {
    target: String,
    /// Ops of each run.
    ops: Vec<u64>,
    /// Answer digest of each run (`none` when it has none).
    digests: Vec<String>,
    /// Its flags about answers, errors and support.
    flags: Vec<String>,
}

/// The script points of a run's report, in order.
fn script_points(dir: &Path) -> Vec<ScriptPoint> {
    let report = report(dir);
    report["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["experiment"] == "script")
        .map(|p| {
            let runs = p["runs"].as_array().unwrap();
            ScriptPoint {
                target: p["target"].as_str().unwrap().to_string(),
                ops: runs.iter().map(|r| r["ops"].as_u64().unwrap()).collect(),
                digests: runs.iter().map(|r| r["answer_digest"].as_str().unwrap_or("none").to_string()).collect(),
                // The flags that say what a point answered (not timing ones such as client-bound).
                flags: (p["flags"].as_array().unwrap().iter())
                    .map(|f| f["flag"].as_str().unwrap().to_string())
                    .filter(|f| ["answer_mismatch", "errors", "missing_rows", "not_supported"].contains(&f.as_str()))
                    .collect(),
            }
        })
        .collect()
}

#[test]
fn select_only_runs_on_sqlite_duckdb_and_a_spawned_postgres_with_answers_agreeing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = dbsweep(&[
        "run",
        "--builtin",
        "select-only",
        "--scale",
        "0.01",
        "--spawn",
        "postgres",
        "--target",
        "sqlite:",
        "--target",
        "duckdb:",
        "--ops",
        "150",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--clients",
        "1,2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let points = script_points(&out);
    let measured: Vec<&str> =
        points.iter().filter(|p| p.target != "nodb" && p.digests.first().is_some_and(|d| d != "none")).map(|p| p.target.as_str()).collect();
    assert_eq!(measured, ["sqlite", "duckdb", "pg-row", "sqlite", "duckdb", "pg-row"], "{points:?}");
    let digest = &points.iter().find(|p| p.target == "sqlite").unwrap().digests[0];
    for p in points.iter().filter(|p| measured.contains(&p.target.as_str())) {
        assert_eq!(p.ops, [150, 150], "{}: every run does --ops passes", p.target);
        assert!(p.digests.iter().all(|d| d == digest), "{}: {:?} vs {digest}", p.target, p.digests);
        assert!(p.flags.is_empty(), "{}: {:?}", p.target, p.flags);
    }
    for p in points.iter().filter(|p| p.target.starts_with("pg-") && p.target != "pg-row") {
        assert_eq!(p.flags, ["not_supported"], "{}: a document layout has no pgbench columns", p.target);
    }
    let rows = csv_rows(&out);
    assert!(rows.iter().any(|r| r["experiment"] == "script" && r["op"] == "script" && r["target"] == "pg-row"), "{rows:?}");
}

#[test]
fn a_different_answer_on_one_dialect_is_an_answer_mismatch_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let sql = dir.path().join("q.sql");
    std::fs::write(
        &sql,
        "-- one account and its branch\n\\set aid random_zipfian(1, 1000, 1.1)\n\
         -- dbsweep:not=duckdb\nSELECT aid, bid FROM pgbench_accounts WHERE aid = :aid;\n\
         -- dbsweep:on=duckdb\nSELECT aid, bid + 1 FROM pgbench_accounts WHERE aid = :aid;\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let run = dbsweep(&[
        "run",
        "--sql-file",
        sql.to_str().unwrap(),
        "--scale",
        "0.01",
        "--target",
        "sqlite:",
        "--target",
        "lite2=sqlite:",
        "--target",
        "duckdb:",
        "--ops",
        "100",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--clients",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(1), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(String::from_utf8_lossy(&run.stderr).contains("ANSWER MISMATCH"));
    let flagged: Vec<(String, Vec<String>)> = script_points(&out).into_iter().map(|p| (p.target, p.flags)).collect();
    assert_eq!(
        flagged,
        [
            ("nodb".to_string(), vec![]),
            ("sqlite".into(), vec![]),
            ("lite2".into(), vec![]),
            ("duckdb".into(), vec!["answer_mismatch".to_string()])
        ]
    );
}

#[test]
fn bad_scripts_are_refused_naming_the_line_before_anything_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("SELECT 1;\n\\shell rm -rf /\n", "bad.sql line 2: pgbench's \\shell is not supported by dbsweep"),
        ("\\set a random(1, 10)\n\\frobnicate\nSELECT :a;\n", "bad.sql line 2: unknown meta-command \\frobnicate"),
        ("\\set a random(1, 10)\nSELECT :a,\n  :b;\n", "bad.sql line 2: undefined variable :b"),
        ("\\set a random(10, 1)\nSELECT :a;\n", "bad.sql line 1: empty range given to random(10, 1)"),
        ("\\set a random(1, 10\nSELECT :a;\n", "bad.sql line 1: random(...): expected ',' or ')'"),
        ("SELECT 1", "bad.sql line 1: the last statement has no ';' at its end"),
    ];
    for (text, expected) in cases {
        let sql = dir.path().join("bad.sql");
        std::fs::write(&sql, text).unwrap();
        let out = dir.path().join("run");
        let run = dbsweep(&["run", "--sql-file", sql.to_str().unwrap(), "--target", "sqlite:", "--out", out.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{text:?}: {stderr}");
        assert!(stderr.trim_end().lines().count() == 1 && stderr.contains(expected), "{text:?}: {stderr}");
        assert!(!out.exists(), "{text:?}: nothing is written");
    }
    let run = dbsweep(&["run", "--builtin", "tpcb-lite", "--target", "sqlite:"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("tpcb-like, simple-update, select-only"));
}
