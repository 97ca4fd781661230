//! End-to-end tests of the ycsb study as YCSB users and its paper expect: YCSB's command
//! line (`-P`, `-p`, a workload file as the study), record counts as a sweep, YCSB's
//! operation names, and a real Redis holding exactly the records and receiving exactly the
//! operations asked for.

use crate::support;
use crate::support::{redis_calls, redis_info};

use dbsweep::servers::ServerKind;
use support::{csv_rows, dbsweep, op_type_rows, report};

/// YCSB's `workloads/workloada` and `workloadc`, as shipped with YCSB.
const WORKLOADA: &str = include_str!("../fixtures/ycsb/workloada");

const WORKLOADC: &str = include_str!("../fixtures/ycsb/workloadc");

#[test]
fn p_workloada_with_recordcount_5000_loads_5000_records_into_redis_and_sends_operationcount_ops() {
    let url = support::url(ServerKind::Redis);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("workloada");
    std::fs::write(&file, WORKLOADA).unwrap();
    let out = tmp.path().join("run");
    {
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut conn = client.get_connection().unwrap();
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut conn).unwrap();
    }
    let o = dbsweep(&[
        "run",
        "ycsb",
        "-P",
        file.to_str().unwrap(),
        "-p",
        "recordcount=5000",
        "-p",
        "operationcount=700",
        "-p",
        "threadcount=2",
        "-p",
        "measurementtype=timeseries",
        "-p",
        "redis.host=10.1.2.3",
        "--target",
        &format!("redis={url}"),
        "--runs",
        "2",
        "--warmup",
        "1",
        "--keep-data",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("warning: -p: measurementtype=timeseries: ignored"), "{stderr}");
    // Exactly the 5,000 records, stored in Redis (dbsweep left them with --keep-data).
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_connection().unwrap();
    let records: u64 = redis::cmd("ZCARD").arg("dbsweep:usertable:pk").query(&mut conn).unwrap();
    assert_eq!(records, 5000);
    let hashes: Vec<String> = redis::cmd("KEYS").arg("dbsweep:usertable[0-9]*").query(&mut conn).unwrap();
    assert_eq!(hashes.len(), 5000);
    let fields: u64 = redis::cmd("HLEN").arg(&hashes[0]).query(&mut conn).unwrap();
    assert_eq!(fields, 11, "the key and YCSB's 10 fields");
    // operationcount ops per run reached the server: 3 runs (1 warm-up) of reads (HGETALL)
    // and updates (one script call each).
    let info = redis_info(&url, "commandstats");
    assert_eq!(redis_calls(&info, "hgetall") + redis_calls(&info, "evalsha"), 3 * 700, "{info}");
    let rows = csv_rows(&out);
    let overall: Vec<_> = rows.iter().filter(|r| r["target"] == "redis" && r["op"] == "mixed").collect();
    assert_eq!(overall.len(), 2, "one point (2 threads) x 2 measured runs");
    for r in &overall {
        assert_eq!((r["experiment"].as_str(), r["clients"].as_str(), r["param"].as_str()), ("workloada", "2", "5000"));
        assert_eq!(
            (r["ops"].as_str(), r["rows"].as_str(), r["errors"].as_str()),
            ("700", "700", "0"),
            "every read and update found its record"
        );
    }
    let by_op: u64 = op_type_rows(&out)
        .iter()
        .filter(|r| r["target"] == "redis" && (r["op"] == "get" || r["op"] == "update"))
        .map(|r| r["ok_ops"].parse::<u64>().unwrap())
        .sum();
    assert_eq!(by_op, 2 * 700);
    // The properties dbsweep does not honour are listed in report.json.
    let json = report(&out);
    let warnings: Vec<&str> = json["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert!(warnings.iter().any(|w| w.starts_with("-p: measurementtype=timeseries: ignored")), "{warnings:?}");
    assert!(warnings.iter().any(|w| w.starts_with("-p: redis.host=10.1.2.3: ignored") && w.contains("--target")), "{warnings:?}");
    assert_eq!(json["plan"]["data"]["recordcount"], 5000);
    let _: () = redis::cmd("FLUSHDB").query(&mut conn).unwrap();
}

#[test]
fn a_workload_file_runs_as_the_ycsb_study_and_record_counts_sweep_in_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("workloadc");
    std::fs::write(&file, WORKLOADC).unwrap();
    let db = tmp.path().join("y.db");
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        file.to_str().unwrap(),
        "--target",
        &format!("lite=sqlite:{}", db.display()),
        "--rows",
        "1000,3000",
        "--clients",
        "1,2",
        "--ops",
        "400",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = csv_rows(&out);
    let overall: Vec<_> = rows.iter().filter(|r| r["target"] == "lite" && r["op"] == "mixed").collect();
    let points: Vec<(&str, &str)> = overall.iter().map(|r| (r["clients"].as_str(), r["param"].as_str())).collect();
    assert_eq!(points, [("1", "1000"), ("2", "1000"), ("1", "3000"), ("2", "3000")]);
    for r in &overall {
        assert_eq!(r["experiment"], "workloadc", "the one workload, named after its file");
        // Zipfian reads over 3,000 records find every one: each count was loaded whole.
        assert_eq!((r["ops"].as_str(), r["rows"].as_str(), r["errors"].as_str()), ("400", "400", "0"), "{r:?}");
    }
    assert!(rows.iter().filter(|r| r["experiment"] == "workloadc").all(|r| r["op"] == "mixed"));
    assert!(op_type_rows(&out).iter().filter(|r| r["experiment"] == "workloadc").all(|r| r["op"] == "get"), "workload C only reads");
    let json = report(&out);
    assert_eq!(json["plan"]["data"]["recordcount"], serde_json::json!([1000, 3000]));
    assert!(json["warnings"].as_array().unwrap().is_empty(), "{}", json["warnings"]);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for id in ["fig-ycsb-n1000", "fig-ycsb-n3000", "fig-workloadc-n1000-ops", "fig-workloadc-n3000-op-latency"] {
        assert!(html.contains(&format!("data-figure=\"{id}\"")), "{id}");
    }
    // dbsweep removed its table afterwards.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master WHERE name LIKE 'dbsweep%'", [], |r| r.get(0)).unwrap();
    assert_eq!(tables, 0);
}

#[test]
fn bad_or_result_changing_properties_exit_2_with_one_line_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    for (args, needle) in [
        (vec!["-p", "recordcount"], "-p key=value"),
        (vec!["-p", "readallfields=false"], "whole records"),
        (vec!["-p", "fieldlengthdistribution=histogram"], "histogram"),
        (vec!["-p", "recordcount=5000", "--rows", "1000"], "--rows"),
        (vec!["-P", "/nonexistent/workloadz"], "cannot read workload file"),
    ] {
        let mut all = vec!["run", "ycsb", "--target", "mock:", "--no-progress", "--out", out.to_str().unwrap()];
        all.extend(args.iter().copied());
        let o = dbsweep(&all);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
    let o = dbsweep(&["run", "embedded", "-p", "recordcount=5", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("ycsb study"));
}

#[test]
fn ycsb_workloads_mix_op_types_in_their_proportions_and_accept_workload_files() {
    let tmp = tempfile::tempdir().unwrap();
    let workload = tmp.path().join("workloadb");
    std::fs::write(
        &workload,
        "# YCSB workload B\nworkload=site.ycsb.workloads.CoreWorkload\nrecordcount=1000\noperationcount=1000\n\
         readallfields=true\nreadproportion=0.95\nupdateproportion=0.05\nscanproportion=0\ninsertproportion=0\n\
         requestdistribution=zipfian\n",
    )
    .unwrap();
    let study = tmp.path().join("y.toml");
    std::fs::write(
        &study,
        format!(
            r#"
name = "y"
ops = 4000
runs = 1
warmup = 0
clients = [2]
[data]
kind = "ycsb"
recordcount = 2000
fieldcount = 4
fieldlength = 20
[[targets]]
name = "ref"
url = "mock:"
[[experiments]]
name = "a"
op = "ycsb"
workload = "a"
sweep = ["clients"]
[[experiments]]
name = "b-file"
op = "ycsb"
workload = "{}"
sweep = ["clients"]
[[experiments]]
name = "d"
op = "ycsb"
workload = "d"
sweep = ["clients"]
"#,
            workload.display()
        ),
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&["run", study.to_str().unwrap(), "--no-progress", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = csv_rows(&out);
    let types = op_type_rows(&out);
    // A type's ops from results_ops.csv; `mixed`, the whole runs', from results.csv.
    let count = |exp: &str, op: &str| -> f64 {
        let (rows, ops) = if op == "mixed" { (&rows, "ops") } else { (&types, "ok_ops") };
        rows.iter()
            .filter(|r| r["target"] == "ref" && r["experiment"] == exp && r["op"] == op)
            .map(|r| r[ops].parse::<f64>().unwrap())
            .sum()
    };
    // Within 4 standard deviations of the binomial expectation over 4,000 ops; the CSVs
    // name operation types by dbsweep's names (YCSB's READ is get), the whole run mixed.
    let near_of = |n: f64| move |got: f64, p: f64| (got - n * p).abs() <= 4.0 * (n * p * (1.0 - p)).sqrt();
    let near = near_of(4000.0);
    assert!(near(count("a", "get"), 0.5) && near(count("a", "update"), 0.5), "A: {} / {}", count("a", "get"), count("a", "update"));
    // The workload file's own recordcount and operationcount (1000 each) are honoured.
    let near_file = near_of(1000.0);
    assert!(near_file(count("b-file", "get"), 0.95) && near_file(count("b-file", "update"), 0.05));
    assert_eq!(count("b-file", "mixed"), 1000.0);
    let params = |exp: &str| -> Vec<String> {
        let mut v: Vec<String> = rows.iter().filter(|r| r["experiment"] == exp).map(|r| r["param"].clone()).collect();
        v.dedup();
        v
    };
    assert_eq!(
        (params("a"), params("b-file"), params("d")),
        (vec!["2000".to_string()], vec!["1000".to_string()], vec!["2000".to_string()])
    );
    assert!(near(count("d", "get"), 0.95) && near(count("d", "insert"), 0.05));
    assert_eq!(count("a", "get") + count("a", "update"), 4000.0);
    assert_eq!(count("a", "mixed"), 4000.0);
    let names = |rows: &[std::collections::HashMap<String, String>]| {
        rows.iter().map(|r| r["op"].clone()).collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(names(&rows), ["echo", "mixed"].map(String::from).into(), "the echo floor's runs and the workloads' runs");
    assert_eq!(names(&types), ["get", "insert", "update"].map(String::from).into(), "dbsweep's names, lower case");
    // The reference store found every key YCSB read, and every insert was new.
    for r in rows.iter().filter(|r| r["target"] == "ref") {
        assert_eq!(r["errors"], "0", "{r:?}");
    }
    let json = report(&out);
    let a = json["points"].as_array().unwrap().iter().find(|p| p["target"] == "ref" && p["experiment"] == "a").unwrap();
    assert_eq!(a["op"], "mixed");
    // Workload A reads and updates loaded records only: every op found its row. (D reads
    // the latest inserts, which another client may not have written yet, as in YCSB.)
    assert_eq!(a["runs"][0]["rows"], 4000);
}

#[test]
fn maxexecutiontime_ends_a_run_early_and_the_run_still_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        "ycsb",
        "--target",
        "nodb=nodb:",
        "--experiments",
        "workload-c",
        "-p",
        "maxexecutiontime=1",
        "-p",
        "operationcount=1000000000",
        "-p",
        "threadcount=1",
        "--rows",
        "100",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = csv_rows(&out);
    let overall = rows.iter().find(|r| r["op"] == "mixed").unwrap();
    let ops: u64 = overall["ops"].parse().unwrap();
    assert!(ops > 0 && ops < 1_000_000_000, "{ops}");
    assert_eq!(overall["complete"], "true");
    assert_eq!(report(&out)["complete"], true);
}

#[test]
fn each_workload_starts_from_exactly_the_loaded_records() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("y.db");
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        "ycsb",
        "--target",
        &format!("lite=sqlite:{}", db.display()),
        "--experiments",
        "workload-d,workload-e",
        "--rows",
        "500",
        "--clients",
        "2",
        "--ops",
        "600",
        "--keep-data",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = csv_rows(&out);
    let inserts: u64 = op_type_rows(&out)
        .iter()
        .filter(|r| r["target"] == "lite" && r["op"] == "insert")
        .map(|r| r["ok_ops"].parse::<u64>().unwrap())
        .sum();
    assert!(inserts > 0, "D and E insert records");
    for r in rows.iter().filter(|r| r["target"] == "lite") {
        assert_eq!(r["errors"], "0", "no insert collided with an earlier workload's: {r:?}");
    }
    assert!(report(&out)["warnings"].as_array().unwrap().is_empty());
    // Kept with --keep-data: the 500 loaded records, without the inserted ones.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let n: i64 = conn.query_row("SELECT count(*) FROM dbsweep_usertable", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 500);
}

/// The paper's comparison: Redis beside the SSDB-class store (LedisDB stands in for SSDB,
/// which has no package), each operation type's line for both in the same figures.
#[test]
fn ledisdb_runs_beside_redis_in_the_papers_per_operation_type_figures() {
    let ledis_url = support::url(ServerKind::LedisDb);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        "ycsb",
        "--spawn",
        "redis",
        "--target",
        "nodb=nodb:",
        "--target",
        &format!("ledisdb={ledis_url}"),
        "--experiments",
        "workload-a,workload-f",
        "--rows",
        "1000",
        "--clients",
        "1,2",
        "--ops",
        "300",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--keep-data",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (rows, type_rows) = (csv_rows(&out), op_type_rows(&out));
    let types = [("workload-a", ["get", "update"]), ("workload-f", ["get", "read_modify_write"])];
    for target in ["redis", "ledisdb"] {
        for (experiment, ops) in types {
            for clients in ["1", "2"] {
                let at = |rows: &[std::collections::HashMap<String, String>], op: &str| {
                    rows.iter()
                        .find(|r| r["target"] == target && r["experiment"] == experiment && r["clients"] == clients && r["op"] == op)
                        .unwrap_or_else(|| panic!("no {op} row for {target} {experiment} c={clients}"))
                        .clone()
                };
                let overall = at(&rows, "mixed");
                // Every op found its record (the run's counters are on its row in results.csv).
                let counters = ["param", "ops", "rows", "errors"].map(|c| overall[c].as_str());
                assert_eq!(counters, ["1000", "300", "300", "0"], "{overall:?}");
                let sum: u64 = ops.iter().map(|op| at(&type_rows, op)["ok_ops"].parse::<u64>().unwrap()).sum();
                assert_eq!(sum, 300, "{target} {experiment} c={clients}: the types add up to operationcount");
            }
        }
    }
    // LedisDB holds exactly the 1,000 records (kept with --keep-data), each a hash of the
    // key and YCSB's 10 fields.
    let client = redis::Client::open(ledis_url.replacen("ledis://", "redis://", 1)).unwrap();
    let mut conn = client.get_connection().unwrap();
    let records: u64 = redis::cmd("ZCARD").arg("dbsweep:usertable:pk").query(&mut conn).unwrap();
    assert_eq!(records, 1000);
    let first: Vec<i64> = redis::cmd("ZRANGE").arg("dbsweep:usertable:pk").arg(0).arg(0).query(&mut conn).unwrap();
    let fields: u64 = redis::cmd("HLEN").arg(format!("dbsweep:usertable{}", first[0])).query(&mut conn).unwrap();
    assert_eq!(fields, 11);
    // One figure per workload: a line per (target, operation type), Redis and LedisDB side by side.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for (experiment, ops) in types {
        let id = format!("data-figure=\"fig-{experiment}-n1000-ops\"");
        let start = html.find(&id).unwrap_or_else(|| panic!("no {id}"));
        let figure = &html[start..];
        let figure = &figure[..figure[id.len()..].find("data-figure=").map_or(figure.len(), |end| end + id.len())];
        for target in ["redis", "ledisdb"] {
            // The figures keep YCSB's names of the types, as the paper's do.
            for op in ops.map(|op| op.replace('_', "-").to_uppercase().replace("GET", "READ")) {
                assert!(figure.contains(&format!("{target} {op}")), "{id}: no line '{target} {op}'");
            }
        }
    }
}

/// LedisDB leaves every Lua script's reply on its one shared Lua stack and panics once
/// 5,120 are there ("index out of range [5120]"): workload A's 6,000 updates run on a
/// LedisDB that dbsweep spawns, every one finds its record, and the server lives to the end.
#[test]
fn ledisdb_takes_more_updates_than_its_lua_stack_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        "ycsb",
        "--spawn",
        "ledisdb",
        "-e",
        "workload-a",
        "--rows",
        "1000",
        "-c",
        "1,4",
        "--ops",
        "6000",
        "-p",
        "readproportion=0",
        "-p",
        "updateproportion=1",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = csv_rows(&out);
    for clients in ["1", "4"] {
        let row = rows
            .iter()
            .find(|r| r["target"] == "ledisdb" && r["experiment"] == "workload-a" && r["clients"] == clients)
            .unwrap_or_else(|| panic!("no ledisdb row at c={clients}: {rows:?}"));
        let counters = ["ops", "rows", "errors"].map(|c| row[c].as_str());
        assert_eq!(counters, ["6000", "6000", "0"], "{row:?}");
    }
}

/// LedisDB gives each connection an 8 KiB socket receive buffer, which over loopback's
/// 64 KiB segments let the load's pipelines through at about 8 KiB per 200 ms: 10,000
/// records took minutes and the run looked hung (dbsweep's connections to it now use
/// 1,460-byte segments). 10,000 records load into a LedisDB that dbsweep's spawn code
/// started, 8 clients read them, and every record holds exactly the fields generated for
/// it (in a namespace of its own, beside the file's other tests on that server). The
/// deadline only tells a finished run from a stalled one (this one takes seconds).
#[test]
fn ledisdb_loads_ten_thousand_records_and_holds_each_as_generated() {
    use dbsweep::base::table::Value;
    use dbsweep::data::ycsb;
    const RECORDS: u64 = 10_000;
    let ledis_url = support::url(ServerKind::LedisDb);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let target = format!("ledisdb={ledis_url}");
    let mut run = support::start(&[
        "run",
        "ycsb",
        "--target",
        &target,
        "-e",
        "workload-c",
        "--rows",
        "10000",
        "--clients",
        "8",
        "--ops",
        "800",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--seed",
        "42",
        "--keep-data",
        "--namespace",
        "load10k",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    support::wait_until("dbsweep has loaded 10,000 records into LedisDB and ended", || run.try_wait().unwrap().is_some());
    let o = run.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", support::text(&o));
    let row = csv_rows(&out).into_iter().find(|r| r["target"] == "ledisdb" && r["clients"] == "8").expect("a ledisdb row at 8 clients");
    assert_eq!(["param", "ops", "rows", "errors"].map(|c| row[c].as_str()), ["10000", "800", "800", "0"], "{row:?}");

    let client = redis::Client::open(ledis_url.replacen("ledis://", "redis://", 1)).unwrap();
    let mut conn = client.get_connection().unwrap();
    let held: u64 = redis::cmd("ZCARD").arg("dbsweep_load10k:usertable:pk").query(&mut conn).unwrap();
    assert_eq!(held, RECORDS);
    let shape = ycsb::Shape::constant(10, 100);
    let columns = ycsb::table_def(10).columns;
    for record in 0..RECORDS {
        let key = ycsb::hashed_key(record);
        let stored: std::collections::HashMap<String, String> =
            redis::cmd("HGETALL").arg(format!("dbsweep_load10k:usertable{key}")).query(&mut conn).unwrap();
        let expected: std::collections::HashMap<String, String> = columns
            .iter()
            .zip(ycsb::row(42, key, &shape))
            .map(|(column, value)| {
                let text = match value {
                    Value::Int(i) => i.to_string(),
                    Value::Text(t) => t.to_string(),
                    other => panic!("a YCSB record holds only its key and text fields, not {other:?}"),
                };
                (column.name.clone(), text)
            })
            .collect();
        assert_eq!(stored, expected, "record {record} (key {key})");
    }
}
