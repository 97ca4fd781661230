//! The list of systems dbsweep knows: one line per system, each a `Declaration` its
//! adapter module makes (`declaration.rs`), in the order `dbsweep targets` lists them;
//! and `open`, which builds the adapter for a target URL from them.
//!
//! The only module that names every adapter; adapters never import it. Must not connect
//! to anything: adapters connect in `prepare`/`connect`.

use super::embedded::{duckdb, monetdb, redb, sqlite};
use super::kv::{cassandra, memcached, mongodb, redis};
use super::pgwire::{h2, hyper, postgres};
use super::{OpenContext, Target, TargetUrl};
use super::{cli_client, mock, mysql, nodb};
use crate::error::{Error, Result};
use std::sync::Arc;

pub use super::declaration::{Declaration, Needs};

/// Every system dbsweep knows of, in the order `dbsweep targets` lists them.
pub const SYSTEMS: &[Declaration] = &[
    nodb::SYSTEM,
    mock::SYSTEM,
    sqlite::SYSTEM,
    duckdb::SYSTEM,
    monetdb::SYSTEM,
    redb::SYSTEM,
    redis::REDIS,
    redis::LEDISDB,
    memcached::SYSTEM,
    postgres::ROW_SYSTEM,
    postgres::HSTORE_SYSTEM,
    postgres::JSONB_SYSTEM,
    mysql::SYSTEM,
    cli_client::MARIADB_CLI,
    cli_client::REDIS_CLI,
    hyper::SYSTEM,
    h2::SYSTEM,
    cassandra::SYSTEM,
    mongodb::SYSTEM,
    Declaration::cannot_run(
        "aerospike",
        &["aerospike"],
        "aerospike://",
        "Aerospike key-value store",
        "the Aerospike server has no public package for Debian, PyPI, npm or Maven, so dbsweep cannot start or test one and has no adapter; run your own server with Aerospike's own tools",
    ),
    Declaration::cannot_run(
        "ssdb",
        &["ssdb"],
        "ssdb://",
        "SSDB (Redis protocol on LevelDB)",
        "SSDB has no public package for Debian, PyPI, npm or Maven; use ledis:// (--spawn ledisdb): LedisDB, the same design",
    ),
    Declaration::cannot_run(
        "mongod",
        &[],
        "mongodb:// (mongod)",
        "MongoDB's own server, started by dbsweep",
        "mongod has no public package for Debian, PyPI, npm or Maven, so dbsweep cannot start one; use --spawn ferretdb (FerretDB: the MongoDB protocol on SQLite), or point mongodb:// at a MongoDB you run",
    ),
];

/// A list of declarations and what is looked up in it: dbsweep's is [`SYSTEMS`]; a test
/// can make one with a system of its own (see docs/adding-a-system.md).
#[derive(Clone, Copy)]
pub struct Registry(pub &'static [Declaration]);

impl Registry {
    /// The declaration `scheme` opens, if any system takes it.
    fn declared(self, scheme: &str) -> Option<&'static Declaration> {
        self.0.iter().find(|system| system.schemes.contains(&scheme))
    }

    /// Every scheme there is an adapter for.
    pub fn schemes(self) -> impl Iterator<Item = &'static str> {
        self.0.iter().filter(|system| system.open.is_some()).flat_map(|system| system.schemes.iter().copied())
    }

    /// Refuses a scheme there is no adapter for: a system that cannot run here says why; a
    /// misspelt one gets the closest scheme.
    pub fn check_scheme(self, name: &str, url: &TargetUrl) -> Result<&'static Declaration> {
        let scheme = url.scheme();
        match self.declared(scheme) {
            Some(system) if system.open.is_some() => Ok(system),
            Some(Declaration { needs: Needs::Unavailable(why), .. }) => {
                Err(Error::usage(format!("target '{name}': {scheme} cannot run here: {why}")))
            }
            _ => Err(Error::usage(format!(
                "target '{name}': unknown URL scheme '{scheme}:'{}; see `dbsweep targets` for the supported ones",
                crate::base::suggest::did_you_mean(scheme, self.schemes())
            ))),
        }
    }

    /// Builds the adapter for a target URL, once its scheme, options and hosts passed.
    pub fn open(self, name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Arc<dyn Target>> {
        let system = self.check_scheme(name, url)?;
        system.check_options(name, url)?;
        if url.has_several_hosts() && !system.several_hosts {
            let several: Vec<String> = self.0.iter().filter(|s| s.several_hosts).map(|s| format!("{}://", s.schemes[0])).collect();
            return Err(Error::usage(format!(
                "target '{name}': only {} URLs take several contact points (h1:p,h2:p); name one host (a Redis Cluster: its first node and ?cluster=true)",
                several.join(" and ")
            )));
        }
        let open = system.open.expect("check_scheme passes only systems with an adapter");
        open(name, url, ctx)
    }
}

/// Every scheme dbsweep has an adapter for.
pub fn schemes() -> impl Iterator<Item = &'static str> {
    Registry(SYSTEMS).schemes()
}

/// Refuses, when the plan is made (so `--dry-run` too), a scheme dbsweep has no adapter for
/// (see [`Registry::check_scheme`]).
pub fn check_scheme(name: &str, url: &TargetUrl) -> Result<&'static Declaration> {
    Registry(SYSTEMS).check_scheme(name, url)
}

/// Builds the adapter for a target URL.
pub fn open(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Arc<dyn Target>> {
    Registry(SYSTEMS).open(name, url, ctx)
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
