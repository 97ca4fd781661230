//! End to end: the `dbsweep` binary as a user runs it (`run`, `compare`, `merge`, `report`,
//! `worker`, ...), against in-process engines and real servers that `--spawn` or the test
//! starts, checked through its exit code, console and run directory. One test binary of
//! modules (ripgrep's layout); helpers come from `tests/support`, none are copied here.
//!
//! Opt-in, `#[ignore]`d: `cassandra_cluster` (`cargo test --test e2e cassandra_cluster --
//! --ignored`) and `custom_ops::a_row_agrees_on_sqlite_and_cassandra_cql` (a spawned
//! Cassandra node, about a minute to start: `cargo test --test e2e custom_ops -- --ignored`).

#[path = "../support/mod.rs"]
mod support;

mod cassandra_cluster;
mod cli;
mod cli_conventions;
mod connection_limit;
mod console_and_csv;
mod custom_ops;
mod custom_sql;
mod docs;
mod durability;
mod duration;
mod endings;
mod estimate;
mod exports;
mod faults;
mod golden;
mod interrupts;
mod kv_vs_relational;
mod leases;
mod mariadb_load;
mod named_targets;
mod paper_like_for_like;
mod paper_verdicts;
mod password_channels;
mod precision;
mod recipes;
mod redis_cluster;
mod report_html;
mod resume;
mod servers_e2e;
mod shards;
mod void_points;
mod workers;
mod ycsb;
