//! End-to-end tests of the `dbsweep` binary on in-process targets: counts, determinism,
//! re-rendering, bad input and interruption.

use crate::support;
use crate::support::report_has_points;

use std::path::Path;
use std::process::Command;
use support::{csv_rows, dbsweep, report};

#[test]
fn measured_ops_are_exact_and_report_rerenders_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        "--target",
        "m=mock:",
        "--experiments",
        "get,insert",
        "--ops",
        "1000",
        "--runs",
        "3",
        "--warmup",
        "1",
        "--clients",
        "1,3",
        "--batch",
        "7",
        "--rows",
        "5000",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = csv_rows(&out);
    for target in ["nodb", "m"] {
        for exp in ["get", "insert"] {
            let points: Vec<_> = rows.iter().filter(|r| r["target"] == target && r["experiment"] == exp).collect();
            // clients 1 and 3 unbatched, and batch 7 with one client (batch 1 unbatched is
            // shared with the clients sweep): 3 points x 3 measured runs.
            assert_eq!(points.len(), 9, "{target}/{exp}");
            for (clients, batched) in [("1", "false"), ("3", "false"), ("1", "true")] {
                let total: u64 = points
                    .iter()
                    .filter(|r| r["clients"] == clients && r["batched"] == batched)
                    .map(|r| r["ops"].parse::<u64>().unwrap())
                    .sum();
                assert_eq!(total, 3000, "{target}/{exp} c={clients} batched={batched}");
            }
        }
    }
    // batch 7 over 1000 ops: 143 requests per run, and the mock found every key it got.
    let batched = rows.iter().find(|r| r["target"] == "m" && r["experiment"] == "get" && r["batched"] == "true").unwrap();
    assert_eq!(batched["requests"], "143");
    assert_eq!(batched["rows"], "1000");
    let json = report(&out);
    assert_eq!(json["complete"], true);
    assert_eq!(json["format_version"], dbsweep::report::model::FORMAT_VERSION);
    assert!(json["environment"]["cores"].as_u64().unwrap() >= 1);
    // Every run records the host's load average around it, in report.json and the CSV.
    for run in json["points"].as_array().unwrap().iter().flat_map(|p| p["runs"].as_array().unwrap()) {
        let (before, after) = (run["load"]["before"].as_f64(), run["load"]["after"].as_f64());
        assert!(before.is_some_and(|l| l >= 0.0) && after.is_some_and(|l| l >= 0.0), "{run}");
    }
    assert!(rows.iter().all(|r| r["load_before"].parse::<f64>().is_ok() && r["load_after"].parse::<f64>().is_ok()));

    let csv_before = std::fs::read(out.join("results.csv")).unwrap();
    std::fs::remove_file(out.join("results.csv")).unwrap();
    let o = dbsweep(&["report", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(out.join("results.csv")).unwrap(), csv_before);
    assert!(String::from_utf8_lossy(&o.stdout).contains("get (get"));
}

#[test]
fn same_seed_same_answers_other_seed_other_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let digest = |name: &str, seed: &str| {
        let out = tmp.path().join(name);
        let o = dbsweep(&[
            "run",
            "--target",
            "m=mock:",
            "--experiments",
            "range-count",
            "--ops",
            "300",
            "--runs",
            "2",
            "--rows",
            "3000",
            "--widths",
            "5",
            "--seed",
            seed,
            "--no-progress",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let json = report(&out);
        let point =
            json["points"].as_array().unwrap().iter().find(|p| p["target"] == "m" && p["experiment"] == "range-count").unwrap().clone();
        let runs = point["runs"].as_array().unwrap();
        let digests: Vec<String> = runs.iter().map(|r| r["answer_digest"].as_str().unwrap().to_string()).collect();
        assert!(digests.windows(2).all(|w| w[0] == w[1]), "read runs must replay the same ops: {digests:?}");
        digests[0].clone()
    };
    assert_eq!(digest("a", "11"), digest("b", "11"));
    assert_ne!(digest("c", "11"), digest("d", "12"));
}

#[test]
fn bad_input_exits_2_with_one_line_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let long_name = format!("{}=nodb:", "n".repeat(100_000));
    let cases: &[&[&str]] = &[
        &["run", "--target", &long_name],
        &["run", "--target", "pg=postgres://u:canary-pw@127.0.0.1:1/db?layuot=jsonb"],
        &["run", "--clients", "100000"],
        &["run", "--clients", "64", "--ops", "10"],
        &["run", "--target", "=nodb:"],
        &["run", "--clients", "-1"],
        &["run", "--runs", "-1"],
        &["run", "--client", "4"],
        &["run", "--target", "pg=postgres://u:canary-pw@:5432/x"],
        &["run", "no-such-study"],
        &["run", "--clients", "0"],
        &["run", "--clients", "two"],
        &["run", "--target", "x=unknownscheme://h:1"],
        &["run", "--target", "x=monetdb://127.0.0.1:50000/db"],
        &["run", "--experiments", "nope"],
        &["run", "--bogus-flag"],
        // Numbers beyond what the machine holds or does (issue 33), and their kin.
        &["run", "insert-find", "--sizes", "99999999999999"],
        &["run", "insert-find", "--sizes", "1:99999999999999:1"],
        &["run", "--batch", "99999999999"],
        &["run", "--rate", "1e-300"],
        &["run", "--rate", "1e300"],
        &["run", "--rate", "NaN"],
        &["run", "--rate", "-0"],
        &["run", "--timeout", "1e300"],
        &["run", "--timeout", "inf"],
        &["run", "--duration", "1e300s"],
        &["run", "--precision", "2%", "--max-time", "1e300"],
        &["run", "ycsb", "-p", "recordcount=99999999999999"],
        &["run", "ycsb", "-p", "fieldcount=273621743033752243"],
        &["run", "ycsb", "-p", "target=1e-300"],
        &["run", "--rows", "99999999999999"],
        &["run", "--ops", "99999999999999999"],
        &["run", "--runs", "4294967295", "--ops", "100000000"],
        &["run", "--target", "pg=postgres://u:canary-pw@127.0.0.1:1/db?layout=row&layout=jsonb"],
        &["run", "--target", "r=redis://127.0.0.1:1/0?batch=mget&batch=pipeline"],
        &["run", "--precision", "-2%"],
        &["run", "--precision", "-2"],
        &["run", "--budget", "-2m"],
        &["run", "--shard", "-1/3"],
        &["run", "--precision", "2%", "--max-time", "-1m"],
        &["run", "--clients", "-1,2"],
        &["run", "-n", "-1x"],
        &["run", "--workers", "2", "--target", "s=sqlite:"],
    ];
    for args in cases {
        let mut full: Vec<&str> = args.to_vec();
        full.extend(["--out", out.to_str().unwrap(), "--no-progress"]);
        let o = dbsweep(&full);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: not one line: {stderr}");
        assert!(!stderr.contains("canary-pw"), "password leaked: {stderr}");
        assert!(!out.exists(), "{args:?} left a run directory");
    }
    let o = dbsweep(&["run", "--target", "x=monetdb://127.0.0.1:50000/db", "--no-progress"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("no client for a MonetDB server"));
    // Each line names the fix.
    let line = |args: &[&str]| String::from_utf8_lossy(&dbsweep(args).stderr).trim_end().to_string();
    assert!(line(&["run", "--target", &long_name]).contains("100000 characters is too long: at most 64"));
    assert!(
        line(&["run", "--target", "pg=postgres://127.0.0.1:1/db?layuot=jsonb"])
            .contains("unknown URL option 'layuot' for a postgres URL (it takes: layout)")
    );
    assert!(line(&["run", "--clients", "100000"]).contains("use at most 1024 and --workers N for more"));
    assert!(line(&["run", "--target", "=nodb:"]).contains("empty name before '='"));
    assert!(line(&["run", "--clients", "-1"]).contains("--clients: '-1' is not a whole number of at least 1; use e.g. 4"));
    assert!(line(&["run", "--client", "4"]).contains("a similar argument exists: '--clients'"));
    // Misspelt names get the closest one, and a misspelt scheme is refused by --dry-run too.
    assert!(line(&["run", "embeded"]).contains("unknown study 'embeded' (did you mean 'embedded'?)"));
    assert!(line(&["run", "--spawn", "redsi"]).contains("unknown server 'redsi' for --spawn (did you mean 'redis'?)"));
    let scheme = line(&["run", "--target", "x=postgress://127.0.0.1:1/db", "--dry-run"]);
    assert!(scheme.contains("unknown URL scheme 'postgress:' (did you mean 'postgres'?)"), "{scheme}");

    // Each refusal of a number says the bound and the value that fits.
    let available = "of memory available here";
    let sizes = line(&["run", "insert-find", "--sizes", "99999999999999"]);
    assert!(sizes.starts_with("dbsweep: --sizes 99999999999999: 1 client holding 99999999999999 ops of about "), "{sizes}");
    assert!(sizes.contains(available) && sizes.contains("use --sizes "), "{sizes}");
    let batch = line(&["run", "--batch", "99999999999"]);
    assert!(batch.contains(available) && batch.contains("use --batch "), "{batch}");
    let slow = line(&["run", "--rate", "1e-300"]);
    assert!(slow.starts_with("dbsweep: --rate 1e-300: a run of ") && slow.contains("lasts more than a week; use --rate "), "{slow}");
    let fast = line(&["run", "--rate", "1e300"]);
    assert!(fast.starts_with("dbsweep: --rate 1e300: one op every 1e-300 s is below the clock's resolution"), "{fast}");
    assert!(line(&["run", "--timeout", "1e300"]).contains("--timeout must be a positive number of seconds, at most 604800"));
    let records = line(&["run", "ycsb", "-p", "recordcount=99999999999999"]);
    assert!(records.contains("--rows 99999999999999: loading 99999999999999 rows of about") && records.contains("more than a week"));
    let rows = line(&["run", "--rows", "99999999999999"]);
    assert!(rows.contains("dbsweep keeps 0.8 bytes per row here") && rows.contains(available) && rows.contains("use --rows "), "{rows}");
    let ops = line(&["run", "--ops", "99999999999999999"]);
    assert!(ops.contains("one run of 99999999999999999 ops takes more than a week even at ") && ops.contains("use --ops "), "{ops}");
    let twice = line(&["run", "--target", "pg=postgres://u:canary-pw@127.0.0.1:1/db?layout=row&layout=jsonb"]);
    assert!(twice.contains("option 'layout' is given twice; give each URL option once"), "{twice}");
    // Negative values: the value parser's line, never clap's "use '-- -2'".
    assert_eq!(line(&["run", "--budget", "-2m"]), "dbsweep: --budget '-2m': give a duration such as 500ms, 90s, 30m or 8h");
    assert_eq!(line(&["run", "--shard", "-1/3"]), "dbsweep: --shard '-1/3': write I/N with 0 <= I < N, e.g. --shard 0/3");
    assert!(line(&["run", "--precision", "-2%"]).contains("--precision '-2%': give a relative amount such as 2%"));
    assert!(line(&["run", "--precision", "2%", "--max-time", "-1m"]).contains("--max-time '-1m': give a duration"));
    assert!(line(&["run", "-n", "-1x"]).starts_with("dbsweep: -n -1x: a negative number, where dbsweep takes 0 or more"));
    // Printed by the coordinator alone, before any local worker starts.
    assert!(line(&["run", "--workers", "2", "--target", "s=sqlite:"]).contains("target s (sqlite) cannot be shared by worker processes"));

    // `gen keys`: the same rules, and nothing written.
    let keys = tmp.path().join("keys.csv");
    let not_a_dir = tmp.path().join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    let inside_a_file = not_a_dir.join("keys.csv");
    let gen_cases: &[&[&str]] = &[
        &["gen", "keys", "99999999999999999", "--out", keys.to_str().unwrap()],
        &["gen", "keys", "10", "--out", "/proc/x"],
        &["gen", "keys", "10", "--out", inside_a_file.to_str().unwrap()],
        &["gen", "keys", "10", "--out", tmp.path().to_str().unwrap()],
        &["gen", "keys", "-5"],
        &["gen", "keys", "5", "--seed", "-1"],
    ];
    for args in gen_cases {
        let o = dbsweep(args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: not one line: {stderr}");
        assert!(o.stdout.is_empty() && !keys.exists(), "{args:?} wrote keys");
    }
    assert!(line(&["gen", "keys", "99999999999999999"]).contains(available));
    assert!(line(&["gen", "keys", "10", "--out", "/proc/x"]).contains("cannot write a file in /proc"));
}

#[test]
fn bad_toml_names_the_line_and_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let study = tmp.path().join("s.toml");
    std::fs::write(&study, "name = \"s\"\nruns = \"three\"\n[data]\nkind = \"kv\"\nrows = 10\n[[experiments]]\nname = \"e\"\nop = \"echo\"\nsweep = [\"clients\"]\n").unwrap();
    let o = dbsweep(&["run", study.to_str().unwrap(), "--no-progress"]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("line 2"), "{stderr}");
}

#[test]
fn a_custom_toml_study_runs_with_its_own_targets() {
    let tmp = tempfile::tempdir().unwrap();
    let study = tmp.path().join("mine.toml");
    std::fs::write(
        &study,
        r#"
name = "mine"
ops = 200
runs = 2
warmup = 0
clients = [2]
[data]
kind = "kv"
rows = 500
payload_bytes = 8
[[targets]]
name = "ref"
url = "mock:"
[[experiments]]
name = "reads"
op = "get"
sweep = ["clients"]
"#,
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&["run", study.to_str().unwrap(), "--no-progress", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = csv_rows(&out);
    let reads: Vec<_> = rows.iter().filter(|r| r["experiment"] == "reads").collect();
    assert_eq!(reads.iter().filter(|r| r["target"] == "ref").count(), 2);
    assert!(reads.iter().all(|r| r["study"] == "mine" && r["clients"] == "2"));
    assert!(reads.iter().filter(|r| r["target"] == "ref").all(|r| r["rows"] == "200"));
    // Every run also records each target's echo floor: 3 measured runs, one client.
    let floor: Vec<_> = rows.iter().filter(|r| r["experiment"] == "echo-floor" && r["target"] == "ref").collect();
    assert_eq!(floor.len(), 3);
    assert!(floor.iter().all(|r| r["clients"] == "1" && r["ops"] == "2000"));
}

#[test]
fn failing_ops_are_counted_by_class_and_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        "--target",
        "flaky=mock:?fail_every=10",
        "--experiments",
        "get",
        "--ops",
        "1000",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--clients",
        "1",
        "--batch",
        "1,10",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    // A run with void points ends with exit code 1 and a last line naming them; the
    // results are saved.
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains("points void") && last.contains("get / flaky / c=1"), "{stderr}");
    let json = report(&out);
    let points: Vec<_> =
        json["points"].as_array().unwrap().iter().filter(|p| p["target"] == "flaky" && p["experiment"] == "get").cloned().collect();
    let unbatched = points.iter().find(|p| p["batched"] == false).unwrap();
    let run = &unbatched["runs"][0];
    // Requests are numbered across the target's connections (the echo floor's 8,000 come
    // first); every tenth fails, and a failed request adds nothing but failed ops.
    assert_eq!(run["errors"]["server"], 100);
    assert_eq!((run["ops"].as_u64(), run["ok_ops"].as_u64(), run["failed_ops"].as_u64()), (Some(1000), Some(900), Some(100)));
    assert_eq!(run["rows"], 900);
    assert_eq!(run["service"]["get"]["count"], 900, "only ok requests are timed");
    assert!(unbatched["flags"].as_array().unwrap().iter().any(|f| f["flag"] == "errors" && f["failed_ops"] == 100));
    assert!(unbatched["summary"]["median_ops_per_sec"].is_null(), "a void point has no throughput: {}", unbatched["summary"]);
    // A batch that fails fails all of its ops.
    let batched = points.iter().find(|p| p["batched"] == true && p["batch"] == 10).unwrap();
    assert_eq!(batched["runs"][0]["failed_ops"].as_u64(), Some(10 * batched["runs"][0]["errors"]["server"].as_u64().unwrap()));
    // The CSV publishes no throughput for it either.
    let rows = csv_rows(&out);
    let flaky: Vec<_> = rows.iter().filter(|r| r["target"] == "flaky" && r["experiment"] == "get").collect();
    assert!(flaky.iter().all(|r| r["ops_per_sec"].is_empty() && r["flags"].contains("errors")), "{flaky:?}");
    assert!(flaky.iter().any(|r| r["failed_ops"] == "100" && r["ok_ops"] == "900"), "{flaky:?}");
}

#[test]
fn ctrl_c_writes_partial_results_marked_incomplete_and_exits_130() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let child = support::command()
        .args([
            "run",
            "--target",
            "slow=mock:?latency_us=2000",
            "--experiments",
            "get,echo",
            "--ops",
            "2000",
            "--runs",
            "3",
            "--clients",
            "1",
            "--batch",
            "1",
            "--no-progress",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first point has been saved, then interrupt.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !report_has_points(&out) {
        assert!(std::time::Instant::now() < deadline, "no results appeared");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", String::from_utf8_lossy(&o.stderr));
    let json = report(&out);
    assert_eq!(json["complete"], false);
    assert!(json["incomplete_reason"].as_str().unwrap().contains("interrupted"));
    let points = json["points"].as_array().unwrap();
    assert!(points.iter().any(|p| p["status"]["state"] == "incomplete"));
    assert!(out.join("results.csv").exists());
}

/// `dbsweep targets --format json`, run with `env` set for the child, parsed.
fn targets_json(env: &[(&str, &Path)]) -> Vec<serde_json::Value> {
    let mut command = support::command();
    command.args(["targets", "--format", "json"]);
    for var in ["DBSWEEP_HYPERD", "DBSWEEP_H2_JAR", "DBSWEEP_CASSANDRA_LIB", "DBSWEEP_LEDIS_SERVER", "DBSWEEP_FERRETDB"] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    let o = command.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let systems = json["systems"].as_array().unwrap().clone();
    let names: Vec<&str> = systems.iter().map(|s| s["system"].as_str().unwrap()).collect();
    let known: Vec<&str> = dbsweep::adapter::registry::SYSTEMS.iter().map(|s| s.system).collect();
    assert_eq!(names, known, "every known system, in order");
    systems
}

fn system<'a>(systems: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    systems.iter().find(|s| s["system"] == name).unwrap()
}

/// What a program prints for `--version`, or its first line (the test machine has them installed).
fn version_text(program: &str) -> String {
    let o = Command::new(program).arg("--version").output().unwrap_or_else(|e| panic!("{program}: {e}"));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn studies_and_targets_list_what_exists() {
    let o = dbsweep(&["studies"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("embedded"));
    let o = dbsweep(&["targets"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    let line =
        |scheme: &str| text.lines().find(|l| l.starts_with(scheme)).unwrap_or_else(|| panic!("{scheme} not listed:\n{text}")).to_string();
    // The servers the test machine has, with the versions their own programs print.
    let redis = version_text("redis-server");
    let redis = redis.split_whitespace().find_map(|w| w.strip_prefix("v=")).unwrap();
    let newest_pg = std::fs::read_dir("/usr/lib/postgresql")
        .unwrap()
        .map(|e| e.unwrap().path().join("bin/postgres"))
        .max_by_key(|p| p.parent().unwrap().parent().unwrap().file_name().unwrap().to_str().unwrap().parse::<u32>().unwrap_or(0))
        .unwrap();
    let postgres = version_text(newest_pg.to_str().unwrap());
    let postgres = postgres.lines().next().unwrap().strip_prefix("postgres (PostgreSQL) ").unwrap().to_string();
    let mariadb = version_text("/usr/sbin/mariadbd");
    let mariadb = mariadb.split_whitespace().skip_while(|w| *w != "Ver").nth(1).unwrap();
    for (scheme, version) in [("redis://", redis), ("postgres://", postgres.as_str()), ("mysql://", mariadb)] {
        let listed = line(scheme);
        let words: Vec<&str> = listed.split_whitespace().collect();
        assert_eq!(words[2], "ready", "{scheme}");
        assert_eq!(words[3..].join(" "), version, "{scheme}");
    }
    // MonetDB (embedded), the SSDB- and MongoDB-class servers run here.
    for ready in ["monetdb:", "ledis://", "mongodb://", "redis-cli://", "mysql-cli://"] {
        assert_eq!(line(ready).split_whitespace().nth(2), Some("ready"), "{}", line(ready));
    }
    // What cannot run says what to use instead.
    for unavailable in ["aerospike://", "ssdb://", "mongodb:// (mongod)"] {
        assert!(line(unavailable).contains(" n/a "), "{}", line(unavailable));
    }
    assert!(text.contains("use ledis:// (--spawn ledisdb)") && text.contains("use --spawn ferretdb"), "{text}");
    assert!(text.contains("no public package for Debian, PyPI, npm or Maven"), "{text}");
    assert!(!text.contains("these machines") && !text.contains("runnable"), "{text}");

    let systems = targets_json(&[]);
    let redis_json = system(&systems, "redis");
    assert_eq!((redis_json["status"].as_str(), redis_json["version"].as_str()), (Some("ready"), Some(redis)));
    assert_eq!(redis_json["spawn"], "redis");
    assert!(redis_json["files"][0].as_str().unwrap().ends_with("/redis-server"), "{redis_json}");
    for s in &systems {
        let ready = s["status"] == "ready";
        assert!(["ready", "not installed", "n/a"].contains(&s["status"].as_str().unwrap()), "{s}");
        assert_eq!(ready, s["version"].is_string() && s["reason"].is_null(), "{s}");
        assert_eq!(ready, !s["version"].is_null(), "{s}");
    }
    assert_eq!(system(&systems, "ssdb")["status"], "n/a");
}

/// With nothing on PATH and an empty native directory, what only those provide is not
/// installed, each with what to install; servers found in the system directories --spawn
/// also searches (/usr/sbin, /usr/lib/postgresql) stay ready.
#[test]
fn targets_say_what_to_install_when_nothing_is_found() {
    let empty = tempfile::tempdir().unwrap();
    let systems = targets_json(&[("PATH", Path::new("")), ("HOME", empty.path()), ("DBSWEEP_NATIVE_DIR", empty.path())]);
    for (name, hint) in [
        ("ledisdb", "ledis-server not found: build it with scripts/setup-servers"),
        ("mongodb", "ferretdb not found: build it with scripts/setup-servers"),
        ("hyper", "hyperd not found: install it with scripts/setup-servers"),
        ("h2", "the H2 jar was not found: install it with scripts/setup-servers"),
        ("cassandra", "Cassandra's jars (cassandra-all-*.jar) not found: install them with scripts/setup-servers"),
        ("redis-cli", "no `redis-cli` on PATH; install redis-tools"),
        ("mariadb-cli", "no `mariadb` or `mysql` client on PATH; install mariadb-client"),
    ] {
        let s = system(&systems, name);
        assert_eq!(s["status"], "not installed", "{s}");
        assert!(s["reason"].as_str().unwrap().starts_with(hint), "{s}");
        assert!(s["version"].is_null() && s["files"].as_array().unwrap().is_empty(), "{s}");
    }
    for name in ["redis", "pg-row", "mariadb", "sqlite", "monetdb"] {
        assert_eq!(system(&systems, name)["status"], "ready", "{}", system(&systems, name));
    }
    let o = support::command()
        .arg("targets")
        .env("PATH", "")
        .env("HOME", empty.path())
        .env("DBSWEEP_NATIVE_DIR", empty.path())
        .env_remove("DBSWEEP_LEDIS_SERVER")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let ledis = text.lines().find(|l| l.starts_with("ledis://")).unwrap();
    assert!(ledis.contains(" not installed ledis-server not found"), "{ledis}");
}

#[test]
fn fixed_rate_runs_follow_the_schedule_and_record_response_time() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        "--target",
        "m=mock:",
        "--experiments",
        "get",
        "--ops",
        "400",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--clients",
        "2",
        "--batch",
        "1",
        "--rate",
        "2000",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = csv_rows(&out);
    for r in rows.iter().filter(|r| r["target"] == "m" && r["experiment"] == "get") {
        // 400 ops at 2000/s cannot finish before the last op's intended start at 0.1995 s.
        assert!(r["seconds"].parse::<f64>().unwrap() >= 0.1995, "{r:?}");
        assert!(r["ops_per_sec"].parse::<f64>().unwrap() <= 2010.0, "{r:?}");
        assert_eq!(r["rate"], "2000");
        assert!(!r["resp_p99_ns"].is_empty());
    }
    let json = report(&out);
    let p = json["points"].as_array().unwrap().iter().find(|p| p["target"] == "m" && p["experiment"] == "get").unwrap();
    assert_eq!(p["runs"][0]["response"]["get"]["count"], 400);
}

/// A target that needs 1 ms per request keeps up with 20 and 50 ops/s from one client but
/// not with 2000: the rate sweep runs each point at each rate, flags the missed one, and
/// report.html draws response time against throughput. (The kept rates leave 19 ms of
/// slack per request, so a busy test machine's stalls do not make them late.)
#[test]
fn a_rate_sweep_runs_each_point_at_each_rate_and_shows_where_the_target_falls_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        "--target",
        "slow=mock:?latency_us=1000&execution=async_threads",
        "--experiments",
        "get",
        "--ops",
        "80",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--clients",
        "1",
        "--batch",
        "1",
        "--rate",
        "2000,20,50,20",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<_> =
        csv_rows(&out).into_iter().filter(|r| r["target"] == "slow" && r["experiment"] == "get" && r["batched"] == "false").collect();
    let rates: Vec<&str> = rows.iter().map(|r| r["rate"].as_str()).collect();
    assert_eq!(rates, ["20", "50", "2000"], "each rate once, ascending");
    for r in &rows[..2] {
        let (asked, achieved) = (r["rate"].parse::<f64>().unwrap(), r["ops_per_sec"].parse::<f64>().unwrap());
        assert!(achieved > 0.95 * asked && achieved < 1.1 * asked, "kept the rate: {r:?}");
        assert!(!r["flags"].contains("missed_rate"), "{r:?}");
    }
    let fast = &rows[2];
    assert!(fast["ops_per_sec"].parse::<f64>().unwrap() < 1200.0, "1 ms per request caps one client near 1000/s: {fast:?}");
    assert!(fast["flags"].contains("missed_rate"), "{fast:?}");
    let (resp, service) = (fast["resp_p99_ns"].parse::<f64>().unwrap(), fast["p99_ns"].parse::<f64>().unwrap());
    assert!(resp > 3.0 * service, "behind the schedule, requests queue: response p99 {resp} ns, service p99 {service} ns");

    let json = report(&out);
    assert_eq!(json["plan"]["rate"], serde_json::json!([20.0, 50.0, 2000.0]));
    let floor = json["points"].as_array().unwrap().iter().find(|p| p["experiment"] == "echo-floor").unwrap();
    assert!(floor["rate"].is_null(), "the echo floor stays a closed-loop round trip");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for (id, kind) in [
        ("fig-get-latency-throughput", "latency-throughput"),
        ("fig-get-response", "response-percentiles"),
        ("fig-get-latency", "percentiles"),
    ] {
        assert!(html.contains(&format!("data-figure=\"{id}\" data-kind=\"{kind}\"")), "{id} missing");
    }
    assert!(!html.contains("data-figure=\"fig-get-clients\""), "a fixed rate decides throughput: no throughput-vs-clients figure");
}

#[test]
fn sqlite_stores_exactly_the_inserted_rows_and_dbsweep_removes_them_again() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("mine.db");
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        "--target",
        &format!("lite=sqlite:{}", db.display()),
        "--experiments",
        "insert",
        "--ops",
        "500",
        "--runs",
        "2",
        "--warmup",
        "1",
        "--clients",
        "1,3",
        "--batch",
        "25",
        "--rows",
        "2000",
        "--keep-data",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json = report(&out);
    assert!(json["warnings"].as_array().unwrap().is_empty(), "every inserted row was found stored: {}", json["warnings"]);
    for r in csv_rows(&out).iter().filter(|r| r["target"] == "lite" && r["experiment"] == "insert") {
        assert_eq!(r["rows"], "500", "{r:?}");
    }
    // dbsweep removed exactly what it inserted: the preloaded rows remain, no more, no less.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let n: i64 = conn.query_row("SELECT count(*) FROM dbsweep_kv", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 2000);
    let max: i64 = conn.query_row("SELECT max(k) FROM dbsweep_kv", [], |r| r.get(0)).unwrap();
    assert_eq!(max, 1999);
}

#[test]
fn insert_find_inserts_n_keys_in_one_request_or_n_and_finds_subsets() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        "insert-find",
        "--target",
        "m=mock:",
        "--sizes",
        "50,300",
        "--rows",
        "1000",
        "--runs",
        "2",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = csv_rows(&out);
    let of = |exp: &str, n: &str| -> Vec<&std::collections::HashMap<String, String>> {
        rows.iter().filter(|r| r["target"] == "m" && r["experiment"] == exp && r["param"] == n).collect()
    };
    for n in ["50", "300"] {
        for r in of("insert-all", n) {
            assert_eq!((r["ops"].as_str(), r["requests"].as_str(), r["rows"].as_str()), (n, "1", n), "all N in one request");
        }
        for r in of("insert-each", n) {
            assert_eq!((r["ops"].as_str(), r["requests"].as_str(), r["rows"].as_str()), (n, n, n), "one key per request");
        }
        for r in of("find", n) {
            // One multi-get per run (one per repeat, as the paper), finding all n keys.
            assert_eq!((r["requests"].as_str(), r["rows"].as_str()), ("1", n));
        }
        assert_eq!(of("find", n).len(), 2);
    }
    let json = report(&out);
    assert!(json["warnings"].as_array().unwrap().is_empty(), "{}", json["warnings"]);
}

#[test]
fn compare_puts_runs_side_by_side_with_ratios() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, latency: &str| {
        let out = tmp.path().join(name);
        let o = dbsweep(&[
            "run",
            "--target",
            &format!("m=mock:{latency}"),
            "--experiments",
            "get",
            "--ops",
            "500",
            // Three runs a side: with two, Welch's interval has about one degree of freedom
            // and the fast mock's microsecond runs vary enough to span 1.
            "--runs",
            "3",
            "--clients",
            "1",
            "--batch",
            "10",
            "--no-progress",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let fast = run("fast", "");
    let slow = run("slow", "?latency_us=2000");
    let o = dbsweep(&["compare", fast.to_str().unwrap(), slow.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(json["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("another plan")), "the URLs differ");
    // A 2 ms sleep per request makes the mock at least 10x slower unbatched: significantly.
    let row =
        json["rows"].as_array().unwrap().iter().find(|r| r["experiment"] == "get" && r["target"] == "m" && r["point"] == "c=1").unwrap();
    let cell = &row["cells"][1];
    assert!(cell["ratio"].as_f64().unwrap() < 0.1, "{row}");
    assert!(cell["ratio_high"].as_f64().unwrap() < 1.0, "{row}");
    assert_eq!(cell["verdict"], "slower", "{row}");
    assert!(cell["p50_ratio"].as_f64().unwrap() > 10.0, "latency grows with the sleep: {row}");
    assert_eq!(row["cells"][0]["verdict"], serde_json::Value::Null, "the baseline has no verdict");
    let text = String::from_utf8_lossy(&dbsweep(&["compare", fast.to_str().unwrap(), slow.to_str().unwrap()]).stdout).to_string();
    let line =
        text.lines().find(|l| l.trim_start().starts_with("get") && l.contains(" m ") && l.contains("c=1") && !l.contains("b=")).unwrap();
    assert!(line.contains(" slower "), "{line}");
    let csv = String::from_utf8_lossy(&dbsweep(&["compare", fast.to_str().unwrap(), slow.to_str().unwrap(), "--format", "csv"]).stdout)
        .to_string();
    assert!(csv.starts_with("experiment,target,point,run,ops_per_sec,"), "{csv}");
    assert_eq!(csv.lines().count(), 1 + 2 * json["rows"].as_array().unwrap().len(), "one line per point and run");
    let markdown =
        String::from_utf8_lossy(&dbsweep(&["compare", fast.to_str().unwrap(), slow.to_str().unwrap(), "--format", "markdown"]).stdout)
            .to_string();
    assert!(markdown.lines().any(|l| l.starts_with("| get | m | c=1 |")), "{markdown}");
    let o = dbsweep(&["compare", fast.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let o = dbsweep(&["compare", fast.to_str().unwrap(), tmp.path().join("nope").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn dry_run_prints_the_op_budget_and_touches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("never");
    let o = dbsweep(&[
        "run",
        "kv-vs-relational",
        "--dry-run",
        "--spawn",
        "postgres,redis",
        "--experiments",
        "get-orders,tpch-q1",
        "--clients",
        "1,2",
        "--batch",
        "1,10",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    // The servers named (PostgreSQL in its three layouts) beside the NO-DB ceiling, not the study's engines.
    assert!(text.contains("\ntargets (5): nodb, pg-row, pg-hstore, pg-jsonb, redis\n"), "{text}");
    // get-orders: clients 1,2 + batch 1 unbatched (same as c=1? no: batched flag differs) + b=1,10 batched.
    let line = text.lines().find(|l| l.starts_with("get-orders")).unwrap_or_else(|| panic!("{text}"));
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (points, runs, ops): (u64, u64, u64) = (fields[1].parse().unwrap(), fields[2].parse().unwrap(), fields[3].parse().unwrap());
    assert_eq!((points, runs), (4, 4), "{line}");
    assert_eq!(ops, points * runs * 50_000, "{line}");
    let q1 = text.lines().find(|l| l.starts_with("tpch-q1")).unwrap();
    assert!(q1.split_whitespace().nth(3) == Some("6"), "one query per run, 5 runs + 1 warm-up: {q1}");
    assert!(!out.exists(), "a dry run writes nothing");
}
