//! HyPer (Tableau's Hyper, `hyperd`) over its PostgreSQL wire protocol (tokio-postgres):
//! `hyper://tableau_internal_user@127.0.0.1:PORT/ABSOLUTE/PATH/db.hyper`.
//!
//! Owns one database file: the URL's path (without a path: `dbsweep-<target>.hyper` in
//! the run's scratch directory, which hyperd must be able to reach, i.e. a local server).
//! `prepare` creates the file with `CREATE DATABASE` and marks it with the table
//! `dbsweep.dbsweep_owner` (one row, `dbsweep-owned`); an existing file without that marker
//! is refused with `NotOwned`. Tables live in the file's `dbsweep` schema, one typed column
//! per attribute, and `cleanup` drops them and then the database file itself (it is
//! dbsweep's by its marker). A user's file on a local hyperd (loopback host, its directory
//! on this machine) is leased to one run at a time like an embedded engine's file (a
//! `lease::FileLease` on `<file>.dbsweep-lock`, taken when the target opens): a second run
//! on it is refused. A remote server's files cannot be locked from here. Must not touch
//! any other database file.
//!
//! HyPer has no indexes: `PRIMARY KEY` and `CREATE INDEX` are refused, so every op is a
//! scan (declared: `secondary_indexes: false`, setting `indexes`). Key uniqueness is
//! still honoured: an insert is `INSERT ... SELECT ... WHERE NOT EXISTS (same key)`, a
//! duplicate inserts nothing and is reported as an error (a batch with a duplicate is
//! rolled back), as a primary key would. That check sees only committed rows: two
//! concurrent transactions inserting the same key both succeed (measured; hyperd accepts
//! `ISOLATION LEVEL SERIALIZABLE` but still lets both commit), so uniqueness holds only
//! when clients insert disjoint keys, as dbsweep's workloads do. Bulk load is `COPY ... WITH (FORMAT text)`
//! (hyperd needs the explicit format; its binary COPY is disabled). Statement texts are
//! the `hyper` dialect (PostgreSQL's SQL without keys, indexes or a `LIMIT` parameter);
//! the session and the value encoding are the PostgreSQL adapter's (row layout).
//!
//! hyperd's PostgreSQL dialect, as found: one statement per query string; a Parse
//! without parameter types means "no parameters" (so every statement is prepared with
//! its types); `LIMIT` takes no parameter (one scan statement per scan length); no
//! `PRIMARY KEY`/indexes. The URL's defaults are port 7483 (hyperd's) and the user
//! `tableau_internal_user`. Must not time anything.

use super::encode::Wire;
use super::{Commit, Flavor, MARKER, PgServer, PgTarget, copy_columns, copy_in, describe, drive};
use crate::adapter::declaration::{CapabilitySet, Declaration, Needs, UrlOptions};
use crate::adapter::lease::FileLease;
use crate::adapter::sql::dialect::Dialect;
use crate::adapter::sql::dialects::{HYPER, Layout, SCHEMA, quote_literal};
use crate::adapter::{Execution, OpenContext, TargetInfo, TargetUrl};
use crate::base::table::{RowSource, TableDef};
use crate::error::{Error, Result};
use crate::servers::ServerKind;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::{Client, NoTls};

/// HyPer's session: every statement prepared with its parameter types, a batch sent after
/// its `BEGIN` and committed once every statement succeeded.
static FLAVOR: Flavor = Flavor {
    dialect: &HYPER,
    layout: Layout::Row,
    typed_parameters: true,
    commit: Commit::WhenAllSucceeded,
    text_answers: false,
    prepare_on_connect: false,
    rows_in_tag: false,
};

/// The user hyperd's `--init-user` creates; the default when the URL names none.
pub const DEFAULT_USER: &str = "tableau_internal_user";
/// The marker table, inside the database file.
const OWNER_TABLE: &str = "dbsweep.dbsweep_owner";

pub const SYSTEM: Declaration = Declaration {
    system: "hyper",
    url: "hyper://",
    description: "HyPer (Tableau Hyper's hyperd), PostgreSQL wire protocol; no indexes (every op scans)",
    needs: Needs::Server(ServerKind::Hyper),
    schemes: &["hyper"],
    options: UrlOptions::Only(&[]),
    several_hosts: false,
    capabilities: CapabilitySet { secondary_indexes: false, ..crate::adapter::sql::CAPABILITIES },
    open: Some(|name, url, ctx| Ok(Arc::new(super::PgWire(Hyper::new(name, url, ctx)?)))),
};

pub struct Hyper {
    /// Description, flavor and prepared tables.
    pg: PgTarget,
    /// The database file (absolute, as hyperd sees it).
    path: String,
    /// Login without a database (for CREATE/DROP DATABASE).
    admin: tokio_postgres::Config,
    /// Login into the database file.
    config: tokio_postgres::Config,
    endpoint: String,
    /// Whether hyperd runs on this machine (its files are this machine's files).
    local_server: bool,
    /// The lease on a user's file on a local server, held while the target lives.
    _lease: Option<FileLease>,
}

/// Whether hyperd at `host` sees this machine's files.
fn is_local(host: &str) -> bool {
    matches!(host, "127.0.0.1" | "localhost" | "::1" | "[::1]")
}

impl Hyper {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let host = url.host().unwrap_or("127.0.0.1").to_string();
        let port = url.port().unwrap_or(7483);
        let user = url.username().filter(|u| !u.is_empty()).unwrap_or_else(|| DEFAULT_USER.into());
        let user_file = url.file_path().filter(|p| p.as_os_str() != "/");
        let lease = match &user_file {
            Some(file) if is_local(&host) && file.parent().is_some_and(|dir| dir.is_dir()) => {
                Some(FileLease::acquire(name, file, &ctx.holder)?)
            }
            _ => None,
        };
        let path: PathBuf = match user_file {
            Some(p) => p,
            None => std::path::absolute(ctx.scratch_dir.join(format!("dbsweep-{name}.hyper")))
                .map_err(|e| Error::usage(format!("target '{name}': bad scratch directory: {e}")))?,
        };
        let path = path.to_str().ok_or_else(|| Error::usage(format!("target '{name}': the database path is not UTF-8")))?.to_string();
        if path.contains('"') {
            return Err(Error::usage(format!("target '{name}': the database path must not contain '\"'")));
        }
        let mut admin = tokio_postgres::Config::new();
        admin.host(&host).port(port).user(&user).application_name("dbsweep").connect_timeout(Duration::from_secs(5));
        if let Some(p) = url.password() {
            admin.password(p);
        }
        let mut config = admin.clone();
        config.dbname(&path);
        let mut settings = BTreeMap::new();
        settings.insert("database_file".into(), path.clone());
        if let Some(note) = lease.as_ref().and_then(|l| l.took_over.clone()) {
            settings.insert("lease".into(), note);
        }
        settings.insert("indexes".into(), "none (HyPer has none)".into());
        settings.insert(
            "key_uniqueness".into(),
            "INSERT ... WHERE NOT EXISTS (a scan per insert; no PRIMARY KEY in HyPer; not atomic across concurrent inserts of one key)"
                .into(),
        );
        settings.insert("load".into(), "COPY FROM STDIN WITH (FORMAT text)".into());
        settings.insert("request.insert".into(), "INSERT … SELECT $1, … WHERE NOT EXISTS (the key), prepared".into());
        settings.insert("request.insert_batch".into(), "one INSERT … SELECT FROM UNNEST(one array per column), prepared".into());
        settings.insert("request.multi_get".into(), "one SELECT … WHERE <key> = ANY($1::int8[]), prepared".into());
        Ok(Hyper {
            pg: PgTarget::new(SYSTEM.target_info(name, url, Execution::Async, "unknown (not connected yet)", settings), &FLAVOR, SCHEMA),
            path,
            admin,
            config,
            endpoint: format!("{host}:{port}"),
            local_server: is_local(&host),
            _lease: lease,
        })
    }

    async fn login(&self, config: &tokio_postgres::Config) -> std::result::Result<Client, tokio_postgres::Error> {
        let (client, connection) = config.connect(NoTls).await?;
        drive(connection);
        Ok(client)
    }

    fn unreachable(&self, e: &tokio_postgres::Error) -> Error {
        Error::unreachable(
            self.pg.name(),
            format!(
                "cannot log in to HyPer at {} ({}); start hyperd, fix host/port/user in the URL, or use --spawn hyper",
                self.endpoint,
                describe(e)
            ),
        )
    }

    /// A session without a database.
    async fn admin_session(&self) -> Result<Client> {
        let client = self.login(&self.admin).await.map_err(|e| self.unreachable(&e))?;
        self.pg.describe_once(|| self.describe(&client)).await?;
        Ok(client)
    }

    /// The server's version.
    async fn describe(&self, client: &Client) -> Result<TargetInfo> {
        let version: String = client
            .query_one("SELECT version()", &[])
            .await
            .and_then(|r| r.try_get(0))
            .map_err(|e| self.pg.runtime("SELECT version()", &e))?;
        let mut info = self.pg.initial().clone();
        info.version = version.split("hyper version ").nth(1).map_or(version.clone(), |v| format!("hyper {v}"));
        Ok(info)
    }

    /// Whether the open database file carries dbsweep's marker.
    async fn owned(&self, client: &Client) -> Result<bool> {
        match client.query(&format!("SELECT marker FROM {OWNER_TABLE}"), &[]).await {
            Ok(rows) => Ok(rows.iter().any(|r| r.try_get::<_, String>(0).is_ok_and(|m| m == MARKER))),
            Err(e) if e.as_db_error().is_some_and(|db| db.code().code() == "42P01" || db.code().code() == "3F000") => Ok(false),
            Err(e) => Err(self.pg.runtime("checking the dbsweep_owner marker", &e)),
        }
    }

    fn not_owned(&self) -> Error {
        Error::not_owned(
            self.pg.name(),
            format!(
                "the HyPer database file {} exists but was not created by dbsweep (no {OWNER_TABLE} marker); \
                 remove it or point the URL at another path",
                self.path
            ),
        )
    }

    /// A session on the database file, or `None` when hyperd says the file does not exist
    /// (nothing of dbsweep's to clean). Any other refusal (e.g. the file still attached
    /// elsewhere while a loaded server catches up) is retried for 10 s, then reported.
    async fn session_for_cleanup(&self) -> Result<Option<Client>> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match self.login(&self.config).await {
                Ok(client) => return Ok(Some(client)),
                Err(e) => match e.as_db_error() {
                    Some(db) if db.message().contains("does not exist") => return Ok(None),
                    Some(_) if tokio::time::Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
                    Some(_) => {
                        return Err(Error::runtime(format!(
                            "target '{}': cannot open {} to clean it up ({}); remove the file once no run uses it",
                            self.pg.name(),
                            self.path,
                            describe(&e)
                        )));
                    }
                    None => return Err(self.unreachable(&e)),
                },
            }
        }
    }

    /// hyperd may unlink a dropped database file a moment after `DROP DATABASE` returns
    /// (seen once on a loaded machine): on a local server, waits up to 10 s for the file
    /// to go, so that cleanup returns with nothing of dbsweep's left.
    async fn await_file_removal(&self) {
        if !self.local_server {
            return;
        }
        let file = std::path::Path::new(&self.path);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while file.exists() {
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!("hyperd dropped the database {} but its file is still there after 10 s", self.path);
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Creates the database file with its marker, or checks the marker of an existing one.
    async fn ensure_database(&self) -> Result<Client> {
        if !self.pg.is_described() {
            drop(self.admin_session().await?);
        }
        // An existing file (hyperd refuses CREATE DATABASE of a file in use, so look first).
        if let Ok(client) = self.login(&self.config).await {
            return if self.owned(&client).await? { Ok(client) } else { Err(self.not_owned()) };
        }
        let admin = self.admin_session().await?;
        let created = match admin.batch_execute(&format!("CREATE DATABASE {}", HYPER.quote(&self.path))).await {
            Ok(()) => true,
            // Created by someone else in the meantime: its marker decides.
            Err(e) if e.as_db_error().is_some_and(|db| db.code().code() == "42P04" || db.code().code() == "55006") => false,
            Err(e) => return Err(self.pg.runtime(&format!("CREATE DATABASE {}", self.path), &e)),
        };
        drop(admin);
        let client = self.session().await?;
        if !created {
            return if self.owned(&client).await? { Ok(client) } else { Err(self.not_owned()) };
        }
        for sql in [
            format!("CREATE SCHEMA {SCHEMA}"),
            format!("CREATE TABLE {OWNER_TABLE} (marker TEXT NOT NULL)"),
            format!("INSERT INTO {OWNER_TABLE} VALUES ({})", quote_literal(MARKER)),
        ] {
            client.batch_execute(&sql).await.map_err(|e| self.pg.runtime(&sql, &e))?;
        }
        Ok(client)
    }
}

#[async_trait]
impl PgServer for Hyper {
    fn pg(&self) -> &PgTarget {
        &self.pg
    }

    /// A session on the database file (which must exist).
    async fn session(&self) -> Result<Client> {
        match self.login(&self.config).await {
            Ok(client) => Ok(client),
            Err(e) if e.as_db_error().is_some() => Err(Error::runtime(format!(
                "target '{}': cannot open the database file {} ({}); run prepare first",
                self.pg.name(),
                self.path,
                describe(&e)
            ))),
            Err(e) => Err(self.unreachable(&e)),
        }
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        let client = self.ensure_database().await?;
        self.pg.create_and_keep_tables(&client, tables).await
    }

    async fn load(&self, def: &TableDef, rows: RowSource) -> Result<u64> {
        let (tables, index) = self.pg.table(def)?;
        let table = &tables[index];
        let client = self.session().await?;
        let copy = format!("COPY {} ({}) FROM STDIN WITH (FORMAT text)", table.name, copy_columns(&HYPER, table));
        copy_in(&self.pg, &client, &copy, Wire { def: &table.def, layout: Layout::Row }, rows).await
    }

    async fn cleanup(&self) -> Result<()> {
        let Some(client) = self.session_for_cleanup().await? else {
            return Ok(());
        };
        if !self.owned(&client).await? {
            return Ok(());
        }
        let tables = self.pg.tables();
        for t in tables.iter() {
            let sql = t.drop();
            client.batch_execute(&sql).await.map_err(|e| self.pg.runtime(&sql, &e))?;
        }
        drop(client);
        self.pg.set_tables(Vec::new());
        // The file is dbsweep's (marked): remove it. Sessions that just closed may still
        // hold it for a while (seconds on a loaded machine); if it stays busy for 10 s the
        // (now table-less) file is kept.
        let admin = self.admin_session().await?;
        let drop_sql = format!("DROP DATABASE IF EXISTS {}", HYPER.quote(&self.path));
        let mut last = None;
        for _ in 0..100 {
            match admin.batch_execute(&drop_sql).await {
                Ok(()) => {
                    self.await_file_removal().await;
                    return Ok(());
                }
                Err(e) => last = Some(describe(&e)),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tracing::warn!("keeping the HyPer file {} (it stayed in use for 10 s): {}", self.path, last.unwrap_or_default());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_the_database_file() {
        let ctx = OpenContext::new(PathBuf::from("/scratch"));
        let url = TargetUrl::parse("hyper://tableau_internal_user@127.0.0.1:7000/tmp/x/db.hyper").unwrap();
        let h = Hyper::new("h", &url, &ctx).unwrap();
        assert_eq!(h.path, "/tmp/x/db.hyper");
        assert_eq!(h.endpoint, "127.0.0.1:7000");
        assert!(!h.pg().info().capabilities.secondary_indexes);
        assert_eq!(h.pg().info().settings["indexes"], "none (HyPer has none)");
        let bare = Hyper::new("h2", &TargetUrl::parse("hyper://127.0.0.1:7000").unwrap(), &ctx).unwrap();
        assert_eq!(bare.path, "/scratch/dbsweep-h2.hyper");
    }

    #[test]
    fn a_users_file_on_a_local_server_is_leased_to_one_run() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("db.hyper");
        let url = TargetUrl::parse(&format!("hyper://127.0.0.1:7000{}", file.display())).unwrap();
        let first = Hyper::new("a", &url, &OpenContext::new(dir.path())).unwrap();
        let lock = dir.path().join("db.hyper.dbsweep-lock");
        assert!(lock.exists());
        let second = OpenContext::new(dir.path());
        let err = Hyper::new("b", &url, &second).err().expect("a second run on the file is refused");
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains(&first_run(&lock)), "{err}");
        drop(first);
        assert!(!lock.exists(), "the lease ends with the target");
        Hyper::new("b", &url, &second).expect("free again");
        // A remote server's path is not this machine's: nothing to lock here.
        let remote = TargetUrl::parse(&format!("hyper://10.0.0.9:7000{}", file.display())).unwrap();
        let _r1 = Hyper::new("r1", &remote, &OpenContext::new(dir.path())).unwrap();
        Hyper::new("r2", &remote, &OpenContext::new(dir.path())).unwrap();
    }

    /// The run id in a lock file's record.
    fn first_run(lock: &std::path::Path) -> String {
        let record = std::fs::read_to_string(lock).unwrap();
        crate::adapter::lease::Holder::decode(record.trim()).unwrap().run
    }
}
