//! The list of systems dbsweep knows (with what each needs to run, which `dbsweep targets`
//! probes) and `open`, which builds the adapter for a target URL.
//!
//! The only module that names every adapter; adapters never import it. Must not connect
//! to anything: adapters connect in `prepare`/`connect`.

use super::embedded::{duckdb, monetdb, redb, sqlite};
use super::kv::{cassandra, memcached, mongodb, redis};
use super::pgwire::{PgWire, h2, hyper, postgres};
use super::{OpenContext, Target, TargetUrl};
use super::{cli_client, mock, mysql, nodb};
use crate::error::{Error, Result};
use crate::servers::ServerKind;
use std::sync::Arc;

/// Systems dbsweep knows of, for `dbsweep targets`.
pub struct SystemEntry {
    pub scheme: &'static str,
    pub system: &'static str,
    pub description: &'static str,
    pub needs: Needs,
}

impl SystemEntry {
    /// Why it cannot run here, if it cannot.
    pub fn unavailable(&self) -> Option<&'static str> {
        match self.needs {
            Needs::Unavailable(why) => Some(why),
            _ => None,
        }
    }
}

/// What a system needs to run here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing: it is part of dbsweep.
    BuiltIn,
    /// Its engine is a library inside dbsweep (an embedded database).
    Library,
    /// The server `--spawn` starts (or one the user runs and names in the URL).
    Server(ServerKind),
    /// A command-line client program on PATH (`CliTarget` looks for it there), in front of
    /// the server `--spawn` starts.
    Client(ServerKind),
    /// It cannot run here: why, and what to use instead, in words for a user.
    Unavailable(&'static str),
}

pub const SYSTEMS: &[SystemEntry] = &[
    SystemEntry {
        scheme: "nodb:",
        system: "nodb",
        description: "no database: each op only bumps a counter (the client-overhead ceiling)",
        needs: Needs::BuiltIn,
    },
    SystemEntry {
        scheme: "mock:",
        system: "mock",
        description: "deterministic in-process reference store (a BTreeMap); answers every op exactly",
        needs: Needs::BuiltIn,
    },
    SystemEntry {
        scheme: "sqlite:[PATH]",
        system: "sqlite",
        description: "SQLite, embedded row store (WAL, synchronous=NORMAL)",
        needs: Needs::Library,
    },
    SystemEntry {
        scheme: "duckdb:[PATH]",
        system: "duckdb",
        description: "DuckDB, embedded column store (prebuilt libduckdb)",
        needs: Needs::Library,
    },
    SystemEntry {
        scheme: "monetdb:[PATH]",
        system: "monetdb",
        description: "MonetDB 11.41 embedded (MonetDBe, prebuilt libmonetdbe), column store; a database directory, one per process",
        needs: Needs::Library,
    },
    SystemEntry {
        scheme: "redb:[PATH]",
        system: "redb",
        description: "redb, embedded copy-on-write B-tree key-value store",
        needs: Needs::Library,
    },
    SystemEntry {
        scheme: "redis://",
        system: "redis",
        description: "Redis: a hash per row, sorted sets for keys and indexes, Lua for MAX (?batch=multi|pipeline); two-column pairs tables as plain string keys (SET/MGET/MSET)",
        needs: Needs::Server(ServerKind::Redis),
    },
    SystemEntry {
        scheme: "ledis://",
        system: "ledisdb",
        description: "LedisDB 0.5 (ledisdb at d35789ec47e6): Redis protocol on LevelDB, SSDB's design; Redis' mapping, batches as pipelines (no MULTI/EXEC)",
        needs: Needs::Server(ServerKind::LedisDb),
    },
    SystemEntry {
        scheme: "memcached://",
        system: "memcached",
        description: "Memcached: one item per row (text protocol); no scans, ranges or queries",
        needs: Needs::Server(ServerKind::Memcached),
    },
    SystemEntry {
        scheme: "postgres://",
        system: "pg-row",
        description: "PostgreSQL, a typed column per attribute (?layout=row, the default)",
        needs: Needs::Server(ServerKind::Postgres),
    },
    SystemEntry {
        scheme: "postgres://?layout=hstore",
        system: "pg-hstore",
        description: "PostgreSQL, key-value table (pk, hstore) with expression indexes",
        needs: Needs::Server(ServerKind::Postgres),
    },
    SystemEntry {
        scheme: "postgres://?layout=jsonb",
        system: "pg-jsonb",
        description: "PostgreSQL, key-value table (pk, jsonb) with expression indexes",
        needs: Needs::Server(ServerKind::Postgres),
    },
    SystemEntry {
        scheme: "mysql://",
        system: "mariadb",
        description: "MariaDB or MySQL, InnoDB tables (also mariadb://)",
        needs: Needs::Server(ServerKind::Mariadb),
    },
    SystemEntry {
        scheme: "mysql-cli://",
        system: "mariadb-cli",
        description: "MariaDB through the `mariadb`/`mysql` command-line client over stdin (?spawn=per-op); echo, insert, get, multi-get, delete",
        needs: Needs::Client(ServerKind::Mariadb),
    },
    SystemEntry {
        scheme: "redis-cli://",
        system: "redis-cli",
        description: "Redis through `redis-cli` over stdin (?spawn=per-op); echo, insert, get, multi-get, delete",
        needs: Needs::Client(ServerKind::Redis),
    },
    SystemEntry {
        scheme: "hyper://",
        system: "hyper",
        description: "HyPer (Tableau Hyper's hyperd), PostgreSQL wire protocol; no indexes (every op scans)",
        needs: Needs::Server(ServerKind::Hyper),
    },
    SystemEntry {
        scheme: "h2://",
        system: "h2",
        description: "H2 (Java), PostgreSQL wire protocol of its PG server; in-memory database mem:NAME, typed columns",
        needs: Needs::Server(ServerKind::H2),
    },
    SystemEntry {
        scheme: "cassandra://",
        system: "cassandra",
        description: "Apache Cassandra (CQL, scylla driver): several contact points h1:p,h2:p, ?replication_factor=N; prepared statements, token-aware; SAI indexes for ranges; IF EXISTS deletes/updates (?affected=read: read then write; ?affected=plain: plain DELETE, read back after the run); no scans",
        needs: Needs::Server(ServerKind::Cassandra),
    },
    SystemEntry {
        scheme: "mongodb://",
        system: "mongodb",
        description: "MongoDB wire protocol (official driver): a document per row, indexes for ranges; a real MongoDB you run, or FerretDB 1.24 (--spawn ferretdb, on SQLite)",
        needs: Needs::Server(ServerKind::FerretDb),
    },
    SystemEntry {
        scheme: "aerospike://",
        system: "aerospike",
        description: "Aerospike key-value store",
        needs: Needs::Unavailable(
            "the Aerospike server has no public package for Debian, PyPI, npm or Maven, so dbsweep cannot start or test one and has no adapter; run your own server with Aerospike's own tools",
        ),
    },
    SystemEntry {
        scheme: "ssdb://",
        system: "ssdb",
        description: "SSDB (Redis protocol on LevelDB)",
        needs: Needs::Unavailable(
            "SSDB has no public package for Debian, PyPI, npm or Maven; use ledis:// (--spawn ledisdb): LedisDB, the same design",
        ),
    },
    SystemEntry {
        scheme: "mongodb:// (mongod)",
        system: "mongod",
        description: "MongoDB's own server, started by dbsweep",
        needs: Needs::Unavailable(
            "mongod has no public package for Debian, PyPI, npm or Maven, so dbsweep cannot start one; use --spawn ferretdb (FerretDB: the MongoDB protocol on SQLite), or point mongodb:// at a MongoDB you run",
        ),
    },
];

/// The query parameters each scheme honours besides a password (`?password=` and its
/// aliases are read by `TargetUrl`); `None`: every parameter goes on to the system's own
/// driver, which checks them.
fn accepted_params(scheme: &str) -> Option<&'static [&'static str]> {
    Some(match scheme {
        "mock" => &["latency_us", "fail_every", "lose_deletes_every", "blind_deletes", "execution"],
        "sqlite" => &["synchronous"],
        "redis" | "ledis" | "ledisdb" => &["cluster", "batch"],
        "postgres" | "postgresql" => &["layout"],
        "cassandra" => &["affected", "replication_factor"],
        "mysql-cli" | "mariadb-cli" => &["spawn"],
        "redis-cli" => &["spawn", "batch"],
        "mongodb" => return None,
        _ => &[],
    })
}

/// Refuses a query parameter the target's adapter does not read: a misspelt option
/// (`?layuot=jsonb`) must not silently benchmark the default.
fn check_params(name: &str, url: &TargetUrl) -> Result<()> {
    let Some(accepted) = accepted_params(url.scheme()) else { return Ok(()) };
    let Some(unknown) = url.params().into_keys().find(|key| !accepted.contains(&key.as_str())) else { return Ok(()) };
    let known = if accepted.is_empty() { "it takes none".to_string() } else { format!("it takes: {}", accepted.join(", ")) };
    Err(Error::usage(format!("target '{name}': unknown URL option '{unknown}' for a {} URL ({known})", url.scheme())))
}

/// Every scheme `open` builds an adapter for, in the order the capabilities page lists them.
#[cfg(test)]
pub(super) fn schemes() -> impl Iterator<Item = &'static str> {
    SCHEMES.iter().copied()
}

/// The URL options `scheme` takes (see `accepted_params`), for the capabilities page.
#[cfg(test)]
pub(super) fn url_options(scheme: &str) -> Option<&'static [&'static str]> {
    accepted_params(scheme)
}

/// Every scheme `open` builds an adapter for.
const SCHEMES: &[&str] = &[
    "nodb",
    "mock",
    "sqlite",
    "redb",
    "duckdb",
    "monetdb",
    "redis",
    "ledis",
    "ledisdb",
    "memcached",
    "postgres",
    "postgresql",
    "hyper",
    "h2",
    "cassandra",
    "mongodb",
    "mysql",
    "mariadb",
    "mysql-cli",
    "mariadb-cli",
    "redis-cli",
];

/// Refuses, when the plan is made (so `--dry-run` too), a scheme dbsweep has no adapter for:
/// a system that cannot run here says why; a misspelt one gets the closest scheme.
pub fn check_scheme(name: &str, url: &TargetUrl) -> Result<()> {
    let scheme = url.scheme();
    if SCHEMES.contains(&scheme) {
        return Ok(());
    }
    let listed = |s: &SystemEntry| s.scheme.trim_end_matches(":[PATH]").trim_end_matches("://").trim_end_matches(':') == scheme;
    match SYSTEMS.iter().find(|s| listed(s)) {
        Some(SystemEntry { needs: Needs::Unavailable(why), .. }) => {
            Err(Error::usage(format!("target '{name}': {scheme} cannot run here: {why}")))
        }
        _ => Err(Error::usage(format!(
            "target '{name}': unknown URL scheme '{scheme}:'{}; see `dbsweep targets` for the supported ones",
            crate::base::suggest::did_you_mean(scheme, SCHEMES.iter().copied())
        ))),
    }
}

/// Builds the adapter for a target URL.
pub fn open(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Arc<dyn Target>> {
    check_scheme(name, url)?;
    check_params(name, url)?;
    if url.has_several_hosts() && url.scheme() != "cassandra" {
        return Err(Error::usage(format!(
            "target '{name}': only cassandra:// URLs take several contact points (h1:p,h2:p); name one host (a Redis Cluster: its first node and ?cluster=true)"
        )));
    }
    match url.scheme() {
        "nodb" => Ok(Arc::new(nodb::NoDb::new(name, url))),
        "mock" => Ok(Arc::new(mock::Mock::new(name, url)?)),
        "sqlite" => Ok(Arc::new(sqlite::Sqlite::open(name, url, ctx)?)),
        "redb" => Ok(Arc::new(redb::Redb::open(name, url, ctx)?)),
        "duckdb" => Ok(Arc::new(duckdb::DuckDb::open(name, url, ctx)?)),
        "monetdb" => Ok(Arc::new(monetdb::MonetDb::open(name, url, ctx)?)),
        "redis" | "ledis" | "ledisdb" => Ok(Arc::new(redis::Redis::new(name, url, ctx)?)),
        "memcached" => Ok(Arc::new(memcached::Memcached::new(name, url, ctx)?)),
        "postgres" | "postgresql" => Ok(Arc::new(PgWire(postgres::Postgres::new(name, url, ctx)?))),
        "hyper" => Ok(Arc::new(PgWire(hyper::Hyper::new(name, url, ctx)?))),
        "h2" => Ok(Arc::new(PgWire(h2::H2::new(name, url, ctx)?))),
        "cassandra" => Ok(Arc::new(cassandra::Cassandra::new(name, url, ctx)?)),
        "mongodb" => Ok(Arc::new(mongodb::MongoDb::new(name, url, ctx)?)),
        "mysql" | "mariadb" => Ok(Arc::new(mysql::MySql::new(name, url, ctx)?)),
        "mysql-cli" | "mariadb-cli" | "redis-cli" => Ok(Arc::new(cli_client::CliTarget::new(name, url, ctx)?)),
        other => Err(Error::usage(format!("target '{name}': no adapter for '{other}:' (see `dbsweep targets`)"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_error(url: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        match open("t", &TargetUrl::parse(url).unwrap(), &OpenContext::new(dir.path().to_path_buf())) {
            Ok(_) => String::new(),
            Err(e) => {
                assert_eq!(e.exit_code(), 2, "{e}");
                e.to_string()
            }
        }
    }

    #[test]
    fn a_misspelt_url_option_is_refused_and_named() {
        let text = open_error("postgres://u@127.0.0.1:1/db?layuot=jsonb");
        assert_eq!(text, "target 't': unknown URL option 'layuot' for a postgres URL (it takes: layout)");
        assert!(open_error("nodb:?x=1").contains("'x' for a nodb URL (it takes none)"));
        assert!(open_error("redis://127.0.0.1:1/0?batch=pipeline&clustr=true").contains("'clustr'"));
    }

    #[test]
    fn known_options_and_passwords_are_accepted() {
        assert_eq!(open_error("postgres://u@127.0.0.1:1/db?layout=jsonb&password=x"), "");
        assert_eq!(open_error("mock:?fail_every=3&latency_us=1"), "");
        assert_eq!(open_error("redis-cli://127.0.0.1:1/0?spawn=per-op"), "");
        assert_eq!(open_error("cassandra://127.0.0.2:1,127.0.0.3:1?replication_factor=2&affected=plain"), "");
    }
}
