//! dbsweep's library against real servers, without the binary: adapters opened through
//! the registry (TPC-H loads and answers, safety of what they send, Cassandra, LedisDB
//! and FerretDB), the spawn code in `servers`, and TPC-H's generated data. One test binary
//! of modules (ripgrep's layout); helpers come from `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod cassandra;
mod insert_find;
mod ledisdb_ferretdb;
mod mariadb_load;
mod pg_mysql_safety;
mod redis_mc_safety;
mod redis_tpch;
mod servers;
mod tpch;
mod tpch_adapters;
