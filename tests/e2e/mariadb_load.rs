//! How `dbsweep run` loads MariaDB: a spawned server (local_infile on) by `LOAD DATA LOCAL
//! INFILE`, and a user's server with local_infile off by INSERTs, said once in a warning
//! however many tables load, and recorded in each target's `load` setting in report.json.
//! That both paths store the same values is tests/library's `mariadb_load`.

use crate::support::{dbsweep, report, spawn};
use dbsweep::servers::ServerKind;
use mysql_async::prelude::Queryable;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_local_infile_loads_by_inserts_and_says_so_once() {
    let server = spawn(ServerKind::Mariadb).await;
    let mut admin = mysql_async::Conn::from_url(server.url()).await.unwrap();
    admin.query_drop("SET GLOBAL local_infile = OFF").await.unwrap();
    drop(admin);
    let tmp = tempfile::tempdir().unwrap();
    let study = tmp.path().join("tpch.toml");
    // All eight TPC-H tables, so that "once" is once for eight loads.
    std::fs::write(
        &study,
        "name = \"load-paths\"\nseed = 3\nops = 50\nruns = 1\nwarmup = 0\nclients = [1]\n\n[data]\nkind = \"tpch\"\nscale = 0.001\n\n\
         [[experiments]]\nname = \"get-region\"\nop = \"get\"\ntable = \"region\"\nsweep = [\"clients\"]\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let off = format!("off={}", server.url());
    let o =
        dbsweep(&["run", study.to_str().unwrap(), "--spawn", "mariadb", "--target", &off, "--no-progress", "--out", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{}\n{stderr}", String::from_utf8_lossy(&o.stdout));
    let warning = "local_infile is OFF on the MariaDB/MySQL server";
    assert_eq!(stderr.matches(warning).count(), 1, "one warning for eight tables: {stderr}");
    assert!(stderr.contains(&format!("off: {warning} at 127.0.0.1:{}", server.port())), "{stderr}");

    let json = report(&out);
    let settings = |name: &str| json["targets"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()["settings"].clone();
    let load = |name: &str| settings(name)["load"].as_str().unwrap_or_default().to_string();
    assert!(load("mariadb").starts_with("LOAD DATA LOCAL INFILE"), "{:?}", load("mariadb"));
    assert_eq!(settings("mariadb")["local_infile"], "ON");
    assert!(load("off").starts_with("multi-row prepared INSERTs") && load("off").contains("local_infile is OFF"), "{:?}", load("off"));
    assert_eq!(settings("off")["local_infile"], "OFF");
    server.stop().await.unwrap();
}
