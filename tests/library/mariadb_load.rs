//! MariaDB's two bulk-load paths store the same values: TPC-H at SF 0.01 loaded with `LOAD
//! DATA LOCAL INFILE` (a spawned server has `local_infile` on) and again with multi-row
//! INSERTs (the same server with `local_infile` switched off, as a user's server may have
//! it) give every table the same row count and the same `CHECKSUM TABLE`, and each
//! target's `load` setting names the path it took. The load's timing is bench/'s
//! (`bench/tpch-load SERVER=mariadb`).

use crate::support::{self, open_in};
use dbsweep::adapter::Target;
use dbsweep::data::tpch::TABLE_NAMES;
use dbsweep::data::{DataSpec, Dataset};
use dbsweep::servers::ServerKind;
use mysql_async::prelude::Queryable;
use std::sync::Arc;

/// Loads TPC-H at SF 0.01 into `target`; returns each table's (rows loaded, rows stored,
/// checksum), in `TABLE_NAMES` order, and cleans up.
async fn load_and_checksum(target: Arc<dyn Target>, admin: &mut mysql_async::Conn) -> Vec<(u64, u64, u64)> {
    let dataset = Dataset::new(&DataSpec::Tpch { scale: 0.01 }, 11);
    target.prepare(&dataset.tables).await.unwrap();
    let mut sums = Vec::new();
    for (id, table) in dataset.tables.iter().enumerate() {
        let loaded = target.load(table, dataset.initial(id)).await.unwrap_or_else(|e| panic!("load {}: {e}", table.name));
        assert_eq!(loaded, dataset.initial_rows(id), "{}: rows loaded", table.name);
        let stored: Option<u64> = admin.query_first(format!("SELECT COUNT(*) FROM dbsweep.{}", table.name)).await.unwrap();
        let checksum: Option<(String, Option<u64>)> = admin.query_first(format!("CHECKSUM TABLE dbsweep.{}", table.name)).await.unwrap();
        let checksum = checksum.and_then(|(_, sum)| sum).unwrap_or_else(|| panic!("{}: no checksum", table.name));
        sums.push((loaded, stored.unwrap(), checksum));
    }
    target.cleanup().await.unwrap();
    sums
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_data_and_inserts_store_the_same_tpch_rows() {
    let server = support::spawn(ServerKind::Mariadb).await;
    assert_eq!(server.settings().get("local_infile").map(String::as_str), Some("ON"), "spawned with local_infile on");
    let mut admin = mysql_async::Conn::from_url(server.url()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();

    let infile = open_in("by-load-data", &server.url(), dir.path());
    let by_load_data = load_and_checksum(infile.clone(), &mut admin).await;
    assert!(infile.info().settings["load"].starts_with("LOAD DATA LOCAL INFILE"), "{:?}", infile.info().settings["load"]);

    admin.query_drop("SET GLOBAL local_infile = OFF").await.unwrap();
    let inserts = open_in("by-inserts", &server.url(), dir.path());
    let by_inserts = load_and_checksum(inserts.clone(), &mut admin).await;
    assert!(inserts.info().settings["load"].starts_with("multi-row prepared INSERTs"), "{:?}", inserts.info().settings["load"]);

    for (name, (a, b)) in TABLE_NAMES.iter().zip(by_load_data.iter().zip(&by_inserts)) {
        assert_eq!(a.0, a.1, "{name}: LOAD DATA stored every row it loaded");
        assert_eq!(a, b, "{name}: (rows loaded, rows stored, CHECKSUM TABLE) by LOAD DATA and by INSERTs");
    }
    let distinct: std::collections::BTreeSet<u64> = by_load_data.iter().map(|t| t.2).collect();
    assert_eq!(distinct.len(), TABLE_NAMES.len(), "every table has a checksum of its own: {by_load_data:?}");
    drop(admin);
    server.stop().await.unwrap();
}
