//! dbsweep end to end against real servers started by its own spawn code: a small study
//! across PostgreSQL (three layouts), MariaDB, Redis and Memcached stores and reads back
//! exactly the generated rows, and leaves data it did not create untouched.

use crate::support;

use dbsweep::servers::{self, ServerKind, SpawnOptions};
use mysql_async::prelude::Queryable;

/// Rows of dbsweep's `kv` table as each system stores them, counted without dbsweep.
async fn stored(
    target: &str,
    pg: &tokio_postgres::Client,
    my: &mut mysql_async::Conn,
    redis: &mut redis::aio::MultiplexedConnection,
    mc_port: u16,
) -> i64 {
    let pg_count = |table: &'static str| async move {
        match pg.query_one(&format!("SELECT count(*) FROM dbsweep.{table}"), &[]).await {
            Ok(row) => row.get::<_, i64>(0),
            Err(_) => 0, // the table (or schema) is gone
        }
    };
    match target {
        "pg-row" => pg_count("kv").await,
        "pg-hstore" => pg_count("kv_hstore").await,
        "pg-jsonb" => pg_count("kv_jsonb").await,
        "mariadb" => my.query_first::<i64, _>("SELECT COUNT(*) FROM dbsweep.kv").await.ok().flatten().unwrap_or(0),
        "redis" => {
            let hashes: Vec<String> = redis::cmd("KEYS").arg("dbsweep:kv[0-9]*").query_async(redis).await.unwrap();
            let indexed: i64 = redis::cmd("ZCARD").arg("dbsweep:kv:pk").query_async(redis).await.unwrap();
            assert_eq!(hashes.len() as i64, indexed, "every row hash has its key-index entry");
            indexed
        }
        "memcached" => {
            memcached_command(mc_port, "lru_crawler metadump all\r\n").lines().filter(|l| l.starts_with("key=dbsweep%3Akv")).count() as i64
        }
        other => panic!("unknown target {other}"),
    }
}

fn memcached_command(port: u16, command: &str) -> String {
    use std::io::{BufRead, BufReader, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(command.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut out = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let done = matches!(line.trim_end(), "END" | "STORED" | "ERROR" | "DONE");
        out.push_str(&line);
        if done {
            break;
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_study_across_every_server_stores_and_reads_exact_rows_and_spares_foreign_data() {
    let kinds = [ServerKind::Postgres, ServerKind::Mariadb, ServerKind::Redis, ServerKind::Memcached];
    let spawned = servers::spawn_all(&kinds, &SpawnOptions::default()).await.expect("spawn servers");
    let by_kind = |k: ServerKind| spawned.iter().find(|s| s.kind() == k).unwrap();

    // Data dbsweep did not create, in each server.
    let pg_url = by_kind(ServerKind::Postgres).url();
    let (pg, conn) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port={} user=postgres dbname=postgres", by_kind(ServerKind::Postgres).port()),
        tokio_postgres::NoTls,
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    pg.batch_execute("CREATE TABLE public.lineitem (id int primary key, note text); INSERT INTO public.lineitem VALUES (1, 'mine');")
        .await
        .unwrap();
    let redis_url = by_kind(ServerKind::Redis).url();
    let mut redis = redis::Client::open(redis_url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("SET").arg("user:1").arg("alice").query_async(&mut redis).await.unwrap();
    let mc_port = by_kind(ServerKind::Memcached).port();
    assert_eq!(memcached_command(mc_port, "set user:1 0 0 3\r\nbob\r\n").trim(), "STORED");
    let my_url = by_kind(ServerKind::Mariadb).url();
    let mut my = mysql_async::Conn::from_url(my_url.as_str()).await.unwrap();
    my.query_drop("CREATE DATABASE shop").await.unwrap();
    my.query_drop("CREATE TABLE shop.kv (k INT PRIMARY KEY)").await.unwrap();
    my.query_drop("INSERT INTO shop.kv VALUES (7)").await.unwrap();

    let mut targets: Vec<(String, String)> = Vec::new();
    for s in &spawned {
        targets.extend(s.targets());
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let run = |out: &std::path::Path, experiments: &str, keep: bool| {
        let mut args: Vec<String> = vec!["run".into(), "--quick".into(), "--ops".into(), "300".into(), "--rows".into(), "3000".into()];
        args.extend(["--no-progress".to_string(), "--experiments".to_string(), experiments.to_string()]);
        if keep {
            args.push("--keep-data".into());
        }
        args.extend(["--out".to_string(), out.display().to_string()]);
        for (name, url) in &targets {
            args.extend(["--target".to_string(), format!("{name}={url}")]);
        }
        let o = support::command().args(&args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run(&out, "insert,get,range-count,delete", true);

    // 3,000 rows preloaded. Every insert run writes 300 new keys and dbsweep removes them
    // afterwards (later experiments expect the generated data); every delete run loads its
    // own keys and deletes them all. So exactly the preloaded rows remain.
    let expected: i64 = 3_000;
    let csv = support::csv_rows(&out);
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["complete"], true);
    for (name, _) in &targets {
        assert_eq!(stored(name, &pg, &mut my, &mut redis, mc_port).await, expected, "{name}: rows stored");
        // Every get found its row, every delete removed one, every insert wrote one.
        for r in csv.iter().filter(|r| r["target"] == *name) {
            match r["experiment"].as_str() {
                "get" | "insert" | "delete" => assert_eq!(r["rows"], r["ops"], "{name} {r:?}"),
                _ => {}
            }
            if r["flags"] != "not_supported" {
                assert_eq!(r["errors"], "0", "{name} {r:?}");
            }
        }
        // Range counts agree with the other systems (memcached cannot range: not supported).
        let flags: Vec<String> = report["points"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["target"] == *name)
            .flat_map(|p| p["flags"].as_array().unwrap().iter().map(|f| f["flag"].as_str().unwrap().to_string()))
            .collect();
        assert!(!flags.iter().any(|f| f == "answer_mismatch"), "{name}: {flags:?}");
    }
    // A second run without --keep-data replaces dbsweep's own data and removes it all.
    run(&tmp.path().join("again"), "get", false);
    for (name, _) in &targets {
        assert_eq!(stored(name, &pg, &mut my, &mut redis, mc_port).await, 0, "{name}: cleanup left rows");
    }
    let settings = &report["targets"].as_array().unwrap().iter().find(|t| t["name"] == "pg-hstore").unwrap()["settings"];
    assert_eq!(settings["layout"], "hstore");

    // Foreign data survived the run and the cleanup.
    let row = pg.query_one("SELECT note FROM public.lineitem WHERE id = 1", &[]).await.unwrap();
    assert_eq!(row.get::<_, String>(0), "mine");
    let v: String = redis::cmd("GET").arg("user:1").query_async(&mut redis).await.unwrap();
    assert_eq!(v, "alice");
    assert!(memcached_command(mc_port, "get user:1\r\n").contains("bob"));
    let kept: Vec<i32> = my.query("SELECT k FROM shop.kv").await.unwrap();
    assert_eq!(kept, vec![7]);
    let _ = pg_url;
}

#[test]
fn spawn_flag_starts_records_and_removes_servers() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = support::command()
        .args(["run", "--quick", "--spawn", "redis,memcached", "--experiments", "get", "--no-progress", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let targets = report["targets"].as_array().unwrap();
    for name in ["redis", "memcached"] {
        let t = targets.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(t["settings"]["server.spawned"], "true");
        assert!(!t["version"].as_str().unwrap().contains("unknown"), "{t}");
    }
    let names: Vec<&str> = targets.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["nodb", "redis", "memcached"], "the servers named and the NO-DB ceiling, not the study's engines");
    for name in ["redis", "memcached"] {
        let t = targets.iter().find(|t| t["name"] == name).unwrap();
        let dir = t["settings"]["server.data_dir"].as_str().expect("data dir recorded");
        assert!(!std::path::Path::new(dir).exists(), "{dir} left behind");
    }
    let o = support::command().args(["run", "--spawn", "oracle", "--no-progress"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--spawn"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_password_never_reaches_any_output() {
    let server = support::spawn(ServerKind::Postgres).await;
    let canary = "canary-5f3a9e";
    let url = format!("postgres://postgres:{canary}@127.0.0.1:{}/postgres", server.port());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = support::command()
        .args(["run", "--quick", "--experiments", "get", "--no-progress", "--target"])
        .arg(format!("pg={url}"))
        .args(["--target", &format!("pg2=postgres://postgres@127.0.0.1:{}/postgres", server.port())])
        .arg("--out")
        .arg(&out)
        .env("PGPASSWORD", format!("{canary}-env"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut seen = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    let written = support::files_under(&out);
    assert!(written.iter().any(|(path, _)| path.ends_with("report.json")), "no report.json in {}", out.display());
    for (_, bytes) in &written {
        seen.push_str(&String::from_utf8_lossy(bytes));
    }
    assert!(!seen.contains(canary), "the password leaked into an output");
    // Also an unreachable server's error line.
    let o = support::command()
        .args(["run", "--quick", "--no-progress", "--target", &format!("pg=postgres://postgres:{canary}@127.0.0.1:1/postgres")])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&o.stderr).contains(canary));
}
