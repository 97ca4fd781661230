//! FerretDB 1.24 (the MongoDB wire protocol on SQLite) as a throwaway server:
//!
//! `ferretdb --handler=sqlite --sqlite-url=file:DIR/data/ --state-dir=DIR
//! --listen-addr=127.0.0.1:PORT --debug-addr=- --telemetry=disable --log-level=warn`
//!
//! with the data directory as working directory: one SQLite file per database under
//! `DIR/data`, no debug HTTP listener, no telemetry, and FerretDB's default SQLite settings
//! (recorded in the settings). On this backend a lookup by `_id` scans the collection
//! (`LOOKUP_BY_ID`, also recorded): FerretDB's index expression and its query's differ. It is FerretDB, never called MongoDB: the `mongodb`
//! adapter reports it as `ferretdb` from its `buildInfo`.
//!
//! Finding it: `$DBSWEEP_FERRETDB` (the program's path) if set, else
//! `${DBSWEEP_NATIVE_DIR:-~/.cache/dbsweep/native}/ferretdb/bin/ferretdb`, where
//! `scripts/setup-servers` builds it with Go, else PATH.
//!
//! Readiness: `serverStatus` over the MongoDB protocol must name our child's pid (so a
//! foreign server that took the port is never mistaken for ours); `buildInfo` gives the
//! version. Must not send anything that changes data.

use super::ledisdb::{missing_go_program, native_dir, program_from_env};
use super::process::program_version;
use super::{Context, Installed, Ready, System};
use crate::error::{Error, Result};
use mongodb::bson::doc;
use mongodb::options::{ClientOptions, ServerAddress};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// FerretDB's part of the spawn machinery (SQLite backend).
pub(super) struct FerretDb;

/// What a lookup by key costs on this backend, read from FerretDB 1.24's source and
/// `EXPLAIN QUERY PLAN` (`SCAN` at 1,000 and 10,000 documents).
const LOOKUP_BY_ID: &str = "a scan of the collection: FerretDB 1.24's SQLite backend indexes _id as _ferretdb_sjson->\"_id\" \
     but finds, updates and deletes by _id with _ferretdb_sjson->'$._id', an expression SQLite cannot match to that index, \
     so a lookup's time grows with the collection (MongoDB's _id index does not)";

/// How long one readiness probe waits for the server to answer.
const PROBE_WAIT: Duration = Duration::from_secs(2);

#[async_trait::async_trait]
impl System for FerretDb {
    fn name(&self) -> &'static str {
        "ferretdb"
    }
    fn package(&self) -> &'static str {
        "ferretdb"
    }
    fn programs(&self) -> &'static [&'static str] {
        &["ferretdb"]
    }
    fn search_dirs(&self) -> Vec<PathBuf> {
        native_dir("ferretdb/bin").into_iter().collect()
    }
    fn programs_from_env(&self) -> Option<Result<Vec<PathBuf>>> {
        program_from_env("DBSWEEP_FERRETDB")
    }
    fn missing(&self, program: &str) -> Error {
        missing_go_program(program, "ferretdb/bin", "DBSWEEP_FERRETDB")
    }
    /// `ferretdb --version`'s `version: v1.24.0`, as `buildInfo` says once it runs.
    async fn installed(&self, programs: Vec<PathBuf>) -> Result<Installed> {
        let version = program_version(&programs[0], &["--version"], |text| {
            text.lines().find_map(|line| line.strip_prefix("version: ")).map(|v| v.trim().trim_start_matches('v').to_string())
        })
        .await?;
        Ok(Installed { version, files: programs })
    }
    async fn init(&self, ctx: Context) -> Result<Context> {
        let data = ctx.dir.join("data");
        std::fs::create_dir_all(&data).map_err(|e| Error::runtime(format!("ferretdb: cannot create {}: {e}", data.display())))?;
        Ok(ctx)
    }
    fn command(&self, ctx: &Context, port: u16) -> Command {
        let mut command = Command::new(ctx.program(0));
        command
            .arg("--handler=sqlite")
            .arg(format!("--sqlite-url=file:{}/", ctx.dir.join("data").display()))
            .arg(format!("--state-dir={}", ctx.dir.display()))
            .arg(format!("--listen-addr=127.0.0.1:{port}"))
            .args(["--debug-addr=-", "--telemetry=disable", "--log-level=warn"]);
        command
    }
    async fn probe(&self, _ctx: &Context, port: u16, pid: u32) -> io::Result<Ready> {
        let (version, mut settings) = probe(port, pid).await?;
        settings.insert("backend".into(), "sqlite (one SQLite file per database; FerretDB's default SQLite settings)".into());
        settings.insert("lookup_by_id".into(), LOOKUP_BY_ID.into());
        Ok(Ready { version, settings })
    }
    fn url(&self, port: u16, _data_dir: &Path) -> String {
        format!("mongodb://127.0.0.1:{port}/")
    }
}

/// Checks that the FerretDB on `port` is our child `pid`; returns its version and what it
/// says about itself.
async fn probe(port: u16, pid: u32) -> io::Result<(String, BTreeMap<String, String>)> {
    let options = ClientOptions::builder()
        .hosts(vec![ServerAddress::Tcp { host: "127.0.0.1".into(), port: Some(port) }])
        .direct_connection(true)
        .server_selection_timeout(PROBE_WAIT)
        .connect_timeout(PROBE_WAIT)
        .app_name("dbsweep-spawn".to_string())
        .build();
    let client = mongodb::Client::with_options(options).map_err(|e| io::Error::other(e.to_string()))?;
    let admin = client.database("admin");
    let status = admin.run_command(doc! {"serverStatus": 1}).await.map_err(|e| io::Error::other(e.to_string()))?;
    let served_by = status.get("pid").and_then(|p| p.as_i64().or_else(|| p.as_i32().map(i64::from)));
    if served_by != Some(i64::from(pid)) {
        return Err(io::Error::other(format!("port {port} is served by another process (pid {served_by:?})")));
    }
    let build = admin.run_command(doc! {"buildInfo": 1}).await.map_err(|e| io::Error::other(e.to_string()))?;
    let version = build.get_str("ferretdbVersion").unwrap_or("unknown").trim_start_matches('v').to_string();
    let mut settings = BTreeMap::new();
    if let Ok(mongo) = build.get_str("version") {
        settings.insert("mongodb_compatibility".into(), mongo.to_string());
    }
    client.shutdown().await;
    Ok((version, settings))
}
