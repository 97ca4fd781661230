//! PostgreSQL (tokio-postgres) in three layouts: `pg-row` (a typed column per attribute),
//! `pg-hstore` and `pg-jsonb` (`(pk, document)` key-value tables), chosen with
//! `?layout=row|hstore|jsonb`.
//!
//! Owns the namespace's schema (`dbsweep`, or `dbsweep_NAME` with `--namespace NAME`): it
//! is created with the comment `dbsweep-owned` and used only when that marker is present;
//! tables are named `<table>`, `<table>_hstore` and `<table>_jsonb` so the three layouts
//! share one server. The run's lease record is the one row of `<schema>.dbsweep_lease`
//! (see `pgwire::lease`). It must not touch any other schema, and never drops a schema or
//! table it did not create. Passwords come from the URL (userinfo or `?password=`),
//! `PGPASSWORD` or `~/.pgpass` and are never shown.

use super::direct::{DirectSession, Login, LoginError};
use super::encode::Wire;
use super::{Commit, Flavor, MARKER, PgServer, PgTarget, PgWire, copy_columns, copy_in, describe, drive, pgpass};
use crate::adapter::declaration::{CapabilitySet, Declaration, Needs, UrlOptions};
use crate::adapter::lease::LeaseStore;
use crate::adapter::sql::connection::SqlConnection;
use crate::adapter::sql::dialect::{Dialect, SqlTable};
use crate::adapter::sql::dialects::{Layout, PG_HSTORE, PG_JSONB, PG_ROW, quote_literal};
use crate::adapter::{Connection, ConnectionRoom, EngineMemory, Execution, OpenContext, TargetInfo, TargetUrl};
use crate::base::durability::{self, Durability};
use crate::base::table::{RowSource, TableDef};
use crate::error::{Error, Result};
use crate::servers::ServerKind;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

/// The three layouts' sessions: PostgreSQL aborts a transaction at its first error, so a
/// batch is one pipeline; parameter types come from the statements' casts.
static FLAVORS: [Flavor; 3] = [
    Flavor {
        dialect: &PG_ROW,
        layout: Layout::Row,
        typed_parameters: false,
        commit: Commit::Pipelined,
        text_answers: false,
        prepare_on_connect: true,
        rows_in_tag: true,
    },
    Flavor {
        dialect: &PG_HSTORE,
        layout: Layout::Hstore,
        typed_parameters: false,
        commit: Commit::Pipelined,
        text_answers: false,
        prepare_on_connect: true,
        rows_in_tag: true,
    },
    Flavor {
        dialect: &PG_JSONB,
        layout: Layout::Jsonb,
        typed_parameters: false,
        commit: Commit::Pipelined,
        text_answers: false,
        prepare_on_connect: true,
        rows_in_tag: true,
    },
];

fn flavor(layout: Layout) -> &'static Flavor {
    &FLAVORS[layout as usize]
}

/// The system name of a layout's target.
pub const ROW_SYSTEM: Declaration = Declaration {
    system: "pg-row",
    url: "postgres://",
    description: "PostgreSQL, a typed column per attribute (?layout=row, the default)",
    needs: Needs::Server(ServerKind::Postgres),
    schemes: &["postgres", "postgresql"],
    options: UrlOptions::Only(&["layout"]),
    several_hosts: false,
    capabilities: crate::adapter::sql::CAPABILITIES,
    open: Some(|name, url, ctx| Ok(Arc::new(PgWire(Postgres::new(name, url, ctx)?)))),
};

/// The key-value layouts run everything the row layout does but a user's script, whose SQL
/// names pgbench's columns (only the row layout has them).
const KEY_VALUE_LAYOUT: CapabilitySet = CapabilitySet {
    ops: crate::adapter::sql::CAPABILITIES.ops.without(crate::base::op::OpKind::Script).without(crate::base::op::OpKind::Custom),
    statements: None,
    ..crate::adapter::sql::CAPABILITIES
};

/// The same adapter in its hstore layout, one more line of `dbsweep targets` (opened by
/// `postgres://` with `?layout=hstore`).
pub const HSTORE_SYSTEM: Declaration = Declaration {
    system: "pg-hstore",
    url: "postgres://?layout=hstore",
    description: "PostgreSQL, key-value table (pk, hstore) with expression indexes",
    schemes: &[],
    capabilities: KEY_VALUE_LAYOUT,
    ..ROW_SYSTEM
};

/// The same adapter in its jsonb layout, one more line of `dbsweep targets` (opened by
/// `postgres://` with `?layout=jsonb`).
pub const JSONB_SYSTEM: Declaration = Declaration {
    system: "pg-jsonb",
    url: "postgres://?layout=jsonb",
    description: "PostgreSQL, key-value table (pk, jsonb) with expression indexes",
    schemes: &[],
    capabilities: KEY_VALUE_LAYOUT,
    ..ROW_SYSTEM
};

/// The system each layout is listed as.
fn declaration(layout: Layout) -> &'static Declaration {
    match layout {
        Layout::Row => &ROW_SYSTEM,
        Layout::Hstore => &HSTORE_SYSTEM,
        Layout::Jsonb => &JSONB_SYSTEM,
    }
}

/// How long a login may take to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Key of the advisory lock that serializes dbsweep's DDL on one database, so targets of
/// different layouts can prepare and clean up concurrently.
pub(super) const DDL_LOCK: i64 = 0x0064_6273_7765_6570;

pub struct Postgres {
    /// Description, flavor and prepared tables.
    pg: PgTarget,
    layout: Layout,
    /// Connection parameters, password included (never printed).
    config: tokio_postgres::Config,
    /// `host:port`, for messages.
    endpoint: String,
    user: String,
    pub(super) database: String,
    /// Schema that holds the hstore extension (hstore layout only), set by `prepare`.
    hstore_schema: Mutex<Option<String>>,
    /// The measured clients' login (`direct`), password included (never printed).
    login: Arc<Login>,
}

impl Postgres {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let layout_text = url.param("layout").unwrap_or_else(|| "row".into());
        let layout = Layout::parse(&layout_text).ok_or_else(|| {
            Error::usage(format!("target '{name}': unknown layout '{layout_text}'; use ?layout=row, ?layout=hstore or ?layout=jsonb"))
        })?;
        let host = url.host().unwrap_or("127.0.0.1").to_string();
        let port = url.port().unwrap_or(5432);
        let user = url.username().or_else(|| std::env::var("PGUSER").ok()).unwrap_or_else(|| "postgres".into());
        let database = url.database().unwrap_or_else(|| user.clone());
        let password = url.password_or_env("PGPASSWORD").or_else(|| pgpass::lookup(&host, port, &database, &user));
        let mut config = tokio_postgres::Config::new();
        config.host(&host).port(port).user(&user).dbname(&database).application_name("dbsweep").connect_timeout(CONNECT_TIMEOUT);
        if let Some(p) = &password {
            config.password(p);
        }
        let login = Arc::new(Login {
            host: host.clone(),
            port,
            user: user.clone(),
            database: database.clone(),
            password,
            connect_timeout: CONNECT_TIMEOUT,
            request_timeout: ctx.request_timeout,
        });
        let mut settings = BTreeMap::new();
        settings.insert("layout".to_string(), layout.name().to_string());
        settings.insert("request.insert".to_string(), "INSERT INTO <table> VALUES ($1, …), prepared".to_string());
        settings.insert("request.insert_batch".to_string(), "one INSERT … SELECT FROM UNNEST(one array per column), prepared".to_string());
        settings.insert("request.multi_get".to_string(), "one SELECT * … WHERE <key> = ANY($1::int8[]), prepared".to_string());
        Ok(Postgres {
            pg: PgTarget::new(
                declaration(layout).target_info(
                    name,
                    url,
                    // Measured (bench/README.md, 2026-11-25): a client and its connection
                    // task on a runtime of their own thread cost less CPU per request than
                    // tasks of the shared runtime woken across its threads.
                    Execution::AsyncThreads,
                    "unknown (not connected yet)",
                    settings,
                ),
                flavor(layout),
                ctx.namespace.name(),
            ),
            layout,
            config,
            endpoint: format!("{host}:{port}"),
            user,
            database,
            hstore_schema: Mutex::new(None),
            login,
        })
    }

    /// Opens one session and spawns its connection driver. Failures are `Unreachable`
    /// with the fix in the message.
    pub(super) async fn open_client(&self) -> Result<Client> {
        let (client, connection) = self.config.connect(NoTls).await.map_err(|e| self.connect_error(&e))?;
        drive(connection);
        self.pg.describe_once(|| self.describe(&client)).await?;
        Ok(client)
    }

    /// What a failed connect means, with the fix: a refused login or an unreachable server
    /// is the user's to fix (`Unreachable`, exit 2); a server out of connection slots or
    /// not accepting connections yet is a run failure (exit 1).
    fn connect_error(&self, e: &tokio_postgres::Error) -> Error {
        let refused = e.as_db_error().map(|db| (db.code().code(), db.message()));
        let password_missing = e.to_string().contains("password") || describe(e).contains("password missing");
        self.login_failure(refused, password_missing, &describe(e))
    }

    /// `connect_error` for a measured client's login (`direct`).
    fn login_error(&self, e: &LoginError) -> Error {
        match e {
            LoginError::Refused { code, message } => self.login_failure(Some((code, message)), false, ""),
            LoginError::PasswordMissing => self.login_failure(None, true, ""),
            LoginError::Unreachable(why) => self.login_failure(None, false, why),
            LoginError::Prepare(e) => Error::runtime(format!("target '{}': preparing statements: {e}", self.pg.name())),
        }
    }

    /// What a failed login means: refused by the server with this SQLSTATE and message,
    /// wanting a password it was not given, or else failed for `why`.
    fn login_failure(&self, refused: Option<(&str, &str)>, password_missing: bool, why: &str) -> Error {
        let name = self.pg.name();
        let detail = match refused {
            Some((code, message)) if code == SqlState::TOO_MANY_CONNECTIONS.code() => {
                return Error::runtime(format!(
                    "target '{name}': PostgreSQL at {} has too many clients ({message}); use fewer --clients, or raise max_connections (or the role's CONNECTION LIMIT) on the server",
                    self.endpoint,
                ));
            }
            Some((code, message)) if code == SqlState::CANNOT_CONNECT_NOW.code() => {
                return Error::runtime(format!(
                    "target '{name}': PostgreSQL at {} does not accept connections now ({message}: it is starting up, shutting down or in recovery mode); wait until it is up, then run again",
                    self.endpoint,
                ));
            }
            Some((code, message)) if code.starts_with("28") => format!(
                "PostgreSQL at {} refused login for user '{}' ({message}); put the password in the URL, PGPASSWORD or ~/.pgpass",
                self.endpoint, self.user,
            ),
            Some((_, message)) => format!("PostgreSQL at {} refused the connection: {message}; fix the URL", self.endpoint),
            None if password_missing => format!(
                "PostgreSQL at {} wants a password for user '{}'; put it in the URL, PGPASSWORD or ~/.pgpass",
                self.endpoint, self.user
            ),
            None => format!(
                "cannot connect to PostgreSQL at {} ({why}); start the server, fix host/port in the URL, or use --spawn postgres",
                self.endpoint,
            ),
        };
        Error::unreachable(name, detail)
    }

    /// Asks the server for its version and the settings that change results.
    async fn describe(&self, client: &Client) -> Result<TargetInfo> {
        let mut info = self.pg.initial().clone();
        let show = |name: &'static str| async move {
            let row = client.query_one(&format!("SHOW {name}"), &[]).await.map_err(|e| self.pg.runtime("SHOW", &e))?;
            row.try_get::<_, String>(0).map_err(|e| self.pg.runtime("SHOW", &e))
        };
        info.version = show("server_version").await?;
        for (key, setting) in [
            ("fsync", "fsync"),
            ("synchronous_commit", "synchronous_commit"),
            ("shared_buffers", "shared_buffers"),
            ("isolation", "default_transaction_isolation"),
        ] {
            info.settings.insert(key.into(), show(setting).await?);
        }
        let durability = durability_of(&info.settings["fsync"], &info.settings["synchronous_commit"]);
        info.settings.insert(durability::SETTING.into(), durability);
        Ok(info)
    }

    /// Takes the DDL lock and checks the schema marker inside an open transaction.
    /// Returns whether the schema exists (and is owned); `NotOwned` if it is someone else's.
    pub(super) async fn lock_and_check(&self, client: &Client) -> Result<bool> {
        client.query_one("SELECT pg_advisory_xact_lock($1)", &[&DDL_LOCK]).await.map_err(|e| self.pg.runtime("lock", &e))?;
        self.check_schema(client).await
    }

    /// Whether the schema exists (and is owned); `NotOwned` if it is someone else's.
    pub(super) async fn check_schema(&self, client: &Client) -> Result<bool> {
        let rows = client
            .query("SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1", &[&self.pg.schema()])
            .await
            .map_err(|e| self.pg.runtime("checking schema", &e))?;
        match rows.first() {
            None => Ok(false),
            Some(row) => match row.try_get::<_, Option<String>>(0).map_err(|e| self.pg.runtime("checking schema", &e))? {
                Some(comment) if comment == MARKER => Ok(true),
                _ => Err(Error::not_owned(
                    self.pg.name(),
                    format!(
                        "schema {} on {} exists but was not created by dbsweep (its comment is not '{MARKER}'); \
                         drop or rename it, or point the target at another database",
                        self.pg.schema(),
                        self.endpoint
                    ),
                )),
            },
        }
    }

    /// Creates the schema with its marker (inside the caller's transaction).
    pub(super) async fn create_schema(&self, client: &Client) -> Result<()> {
        let schema = self.dialect().quote(self.pg.schema());
        for sql in [format!("CREATE SCHEMA {schema}"), format!("COMMENT ON SCHEMA {schema} IS {}", quote_literal(MARKER))] {
            client.batch_execute(&sql).await.map_err(|e| self.pg.runtime(&sql, &e))?;
        }
        Ok(())
    }

    async fn prepare_in_tx(&self, client: &Client, defs: &[Arc<TableDef>]) -> Result<(Vec<SqlTable>, Option<String>)> {
        let run = |sql: String| async move { client.batch_execute(&sql).await.map_err(|e| self.pg.runtime(&sql, &e)) };
        if !self.lock_and_check(client).await? {
            self.create_schema(client).await?;
        }
        let schema = self.pg.schema();
        let mut hstore_schema = None;
        if self.layout == Layout::Hstore {
            let query = "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'hstore'";
            let rows = client.query(query, &[]).await.map_err(|e| self.pg.runtime("checking hstore", &e))?;
            hstore_schema = Some(match rows.first() {
                Some(row) => row.try_get::<_, String>(0).map_err(|e| self.pg.runtime("checking hstore", &e))?,
                None => {
                    // Installed into dbsweep's own schema so cleanup can remove it again.
                    run(format!("CREATE EXTENSION hstore WITH SCHEMA {}", self.dialect().quote(schema))).await.map_err(|e| {
                        Error::Missing(format!(
                            "{e}; the hstore extension is needed for ?layout=hstore: install postgresql-contrib, \
                             or have a superuser run CREATE EXTENSION hstore"
                        ))
                    })?;
                    schema.to_string()
                }
            });
            let extension = self.dialect().quote(hstore_schema.as_deref().unwrap_or(schema));
            run(format!("SET LOCAL search_path TO {}, {extension}", self.dialect().quote(schema))).await?;
        }
        Ok((self.pg.create_tables(client, defs).await?, hstore_schema))
    }

    /// Drops the schema (and an hstore extension dbsweep installed into it) when no
    /// relation is left in it; other layouts' targets or a lease record may still use it.
    /// Runs inside the caller's transaction, under the DDL lock.
    pub(super) async fn drop_schema_if_empty(&self, client: &Client) -> Result<()> {
        let schema = self.pg.schema();
        let run = |sql: &'static str| async move { client.batch_execute(sql).await.map_err(|e| self.pg.runtime(sql, &e)) };
        let left: i64 = client
            .query_one("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1", &[&schema])
            .await
            .and_then(|r| r.try_get(0))
            .map_err(|e| self.pg.runtime("cleanup", &e))?;
        if left > 0 {
            return Ok(());
        }
        run("SAVEPOINT drop_schema").await?;
        let ext_here = client
            .query("SELECT 1 FROM pg_extension WHERE extname = 'hstore' AND extnamespace = $1::text::regnamespace", &[&schema])
            .await
            .map(|rows| !rows.is_empty());
        let dropped = match ext_here {
            Ok(true) => client.batch_execute("DROP EXTENSION hstore").await,
            Ok(false) => Ok(()),
            Err(e) => Err(e),
        };
        let dropped = match dropped {
            Ok(()) => client.batch_execute(&format!("DROP SCHEMA {}", self.dialect().quote(schema))).await,
            Err(e) => Err(e),
        };
        if let Err(e) = dropped {
            // Something else now depends on the schema: keep it.
            tracing::info!("keeping schema {schema}: {}", describe(&e));
            run("ROLLBACK TO SAVEPOINT drop_schema").await?;
        }
        Ok(())
    }

    fn dialect(&self) -> &'static dyn Dialect {
        self.layout.dialect()
    }

    /// The `SET search_path` a session of the hstore layout needs (the extension's schema
    /// next to dbsweep's), once `prepare` found it.
    fn search_path(&self) -> Option<String> {
        let extension = self.hstore_schema.lock().unwrap().clone()?;
        Some(format!("SET search_path TO {}, {}", self.dialect().quote(self.pg.schema()), self.dialect().quote(&extension)))
    }

    pub(super) fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

#[async_trait]
impl PgServer for Postgres {
    fn pg(&self) -> &PgTarget {
        &self.pg
    }

    /// A measured client's session on a socket of its own (`direct`), with the search
    /// path the layout needs.
    async fn connect(&self) -> Result<Box<dyn Connection>> {
        if !self.pg.is_described() {
            self.open_client().await?;
        }
        let tables = self.pg.tables();
        let session = DirectSession::open(self.login.clone(), self.search_path(), self.pg.flavor, tables.clone())
            .map_err(|e| self.login_error(&e))?;
        Ok(Box::new(SqlConnection::new(self.dialect(), tables, session)))
    }

    /// A session with the search path the layout needs.
    async fn session(&self) -> Result<Client> {
        let client = self.open_client().await?;
        if let Some(sql) = self.search_path() {
            client.batch_execute(&sql).await.map_err(|e| self.pg.runtime("setting search_path", &e))?;
        }
        Ok(client)
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        let client = self.open_client().await?;
        client.batch_execute("BEGIN").await.map_err(|e| self.pg.runtime("BEGIN", &e))?;
        match self.prepare_in_tx(&client, tables).await {
            Ok((tables, hstore_schema)) => {
                client.batch_execute("COMMIT").await.map_err(|e| self.pg.runtime("COMMIT", &e))?;
                *self.hstore_schema.lock().unwrap() = hstore_schema;
                self.pg.set_tables(tables);
                Ok(())
            }
            Err(e) => {
                let _ = client.batch_execute("ROLLBACK").await;
                Err(e)
            }
        }
    }

    async fn load(&self, def: &TableDef, rows: RowSource) -> Result<u64> {
        let (tables, index) = self.pg.table(def)?;
        let table = &tables[index];
        let client = self.session().await?;
        let copy = format!("COPY {} ({}) FROM STDIN", table.name, copy_columns(self.dialect(), table));
        let loaded = copy_in(&self.pg, &client, &copy, Wire { def: &table.def, layout: self.layout }, rows).await?;
        // Fresh statistics (also for the expression indexes), so the first measured run
        // gets the same plans as later ones.
        client.batch_execute(&format!("ANALYZE {}", table.name)).await.map_err(|e| self.pg.runtime("ANALYZE", &e))?;
        Ok(loaded)
    }

    /// The on-disk size of dbsweep's tables with their indexes and TOAST
    /// (`pg_total_relation_size`); PostgreSQL keeps no per-table figure for memory.
    async fn engine_memory(&self) -> Result<Option<EngineMemory>> {
        let tables = self.pg.tables();
        if tables.is_empty() {
            return Ok(None);
        }
        let names: Vec<String> = tables.iter().map(|t| t.name.clone()).collect();
        let client = self.session().await?;
        let row = client
            .query_one("SELECT COALESCE(SUM(pg_total_relation_size(t::regclass)), 0)::int8 FROM unnest($1::text[]) AS t", &[&names])
            .await
            .map_err(|e| self.pg.runtime("pg_total_relation_size", &e))?;
        let bytes: i64 = row.try_get(0).map_err(|e| self.pg.runtime("pg_total_relation_size", &e))?;
        Ok(Some(EngineMemory { bytes: bytes as u64, source: "pg_total_relation_size of dbsweep's tables".into() }))
    }

    fn lease_store(&self) -> Option<&dyn LeaseStore> {
        Some(self)
    }

    /// `max_connections`, less the slots kept for superusers (and, on 16+, for
    /// `pg_use_reserved_connections`) unless this user is a superuser, less the other
    /// client sessions; for other users also the role's and the database's `CONNECTION
    /// LIMIT`, less their other sessions. A server that will not tell (an error) is not
    /// checked.
    async fn connection_room(&self) -> Result<Option<ConnectionRoom>> {
        const LIMITS: &str = "SELECT current_setting('max_connections')::int8, \
             current_setting('superuser_reserved_connections')::int8 \
                 + COALESCE(current_setting('reserved_connections', true), '0')::int8, \
             (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'), \
             (SELECT rolconnlimit::int8 FROM pg_roles WHERE rolname = current_user), \
             (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND usename = current_user), \
             (SELECT datconnlimit::int8 FROM pg_database WHERE datname = current_database()), \
             (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = current_database()), \
             (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)";
        let client = self.open_client().await?;
        let row = match client.query_one(LIMITS, &[]).await {
            Ok(row) => row,
            Err(e) => {
                tracing::debug!("target '{}': cannot read the connection limit: {}", self.pg.name(), super::describe(&e));
                return Ok(None);
            }
        };
        let figure = |i: usize| row.try_get::<_, Option<i64>>(i).ok().flatten();
        // This session is closed before the run connects: it is not one of the others.
        let others = |i: usize| figure(i).map(|n| n.max(1) as u64 - 1);
        let (Some(max), Some(reserved), Some(sessions)) = (figure(0), figure(1), others(2)) else { return Ok(None) };
        let superuser = row.try_get::<_, Option<bool>>(7).ok().flatten().unwrap_or(false);
        let server = postgres_room(max.max(0) as u64, if superuser { 0 } else { reserved.max(0) as u64 }, sessions);
        if superuser {
            return Ok(Some(server));
        }
        // A CONNECTION LIMIT of -1 is none; superusers are exempt from both.
        let limit = |limit: usize, sessions: usize| figure(limit).filter(|l| *l >= 0).map(|l| l as u64).zip(others(sessions));
        let role =
            limit(3, 4).map(|(limit, others)| object_room(&format!("role {}", self.user), "the role's CONNECTION LIMIT", limit, others));
        let database = limit(5, 6)
            .map(|(limit, others)| object_room(&format!("database {}", self.database), "the database's CONNECTION LIMIT", limit, others));
        Ok([role, database].into_iter().flatten().chain([server]).min_by_key(|room| room.free))
    }

    async fn cleanup(&self) -> Result<()> {
        let client = self.open_client().await?;
        let tables = self.pg.tables();
        let run = |sql: String| {
            let client = &client;
            async move { client.batch_execute(&sql).await.map_err(|e| self.pg.runtime(&sql, &e)) }
        };
        run("BEGIN".into()).await?;
        let owned = match self.lock_and_check(&client).await {
            Ok(owned) => owned,
            // Someone else's schema: nothing of ours can be in it.
            Err(Error::NotOwned { .. }) => false,
            Err(e) => {
                let _ = run("ROLLBACK".into()).await;
                return Err(e);
            }
        };
        if owned {
            for table in tables.iter() {
                run(table.drop()).await?;
            }
            if let Err(e) = self.drop_schema_if_empty(&client).await {
                let _ = run("ROLLBACK".into()).await;
                return Err(e);
            }
        }
        run("COMMIT".into()).await?;
        self.pg.set_tables(Vec::new());
        Ok(())
    }
}

/// The room of a PostgreSQL server: `max_connections` less the slots this user cannot take
/// (`reserved`) and the client sessions others hold (`others`).
fn postgres_room(max_connections: u64, reserved: u64, others: u64) -> ConnectionRoom {
    let reserved_text = if reserved > 0 { format!(", {reserved} reserved for other roles") } else { String::new() };
    ConnectionRoom {
        free: max_connections.saturating_sub(reserved).saturating_sub(others),
        limit: format!("max_connections={max_connections}{reserved_text}, {others} in use"),
        setting: "max_connections",
    }
}

/// The room a role's or a database's `CONNECTION LIMIT` leaves (`what`: `role NAME` or
/// `database NAME`; `others`: its sessions).
fn object_room(what: &str, setting: &'static str, limit: u64, others: u64) -> ConnectionRoom {
    ConnectionRoom { free: limit.saturating_sub(others), limit: format!("{what}: CONNECTION LIMIT {limit}, {others} in use"), setting }
}

/// The `durability` setting of a PostgreSQL server from its `fsync` and
/// `synchronous_commit` (its sessions' default; dbsweep does not change them).
fn durability_of(fsync: &str, synchronous_commit: &str) -> String {
    match (fsync, synchronous_commit) {
        ("off", _) => Durability::None.describe("nothing forced to disk (fsync=off)"),
        (_, "off") => {
            Durability::Periodic.describe("asynchronous commit: the WAL writer flushes every wal_writer_delay (synchronous_commit=off)")
        }
        (_, level) => Durability::Commit.describe(&format!("WAL fsynced at every commit (fsync=on, synchronous_commit={level})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_the_limit_less_the_reserved_slots_and_the_other_sessions() {
        let superuser = postgres_room(100, 0, 2);
        assert_eq!((superuser.free, superuser.limit.as_str()), (98, "max_connections=100, 2 in use"));
        let plain = postgres_room(100, 3 + 2, 2);
        assert_eq!((plain.free, plain.limit.as_str()), (93, "max_connections=100, 5 reserved for other roles, 2 in use"));
        assert_eq!(postgres_room(10, 3, 9).free, 0, "a full server has no room, never less");
        let role = object_room("role bench", "the role's CONNECTION LIMIT", 3, 1);
        assert_eq!((role.free, role.limit.as_str()), (2, "role bench: CONNECTION LIMIT 3, 1 in use"));
    }

    #[test]
    fn durability_follows_fsync_and_synchronous_commit() {
        assert_eq!(durability_of("off", "on"), "none: nothing forced to disk (fsync=off)");
        assert!(durability_of("on", "off").starts_with("periodic: asynchronous commit"));
        assert_eq!(durability_of("on", "local"), "commit: WAL fsynced at every commit (fsync=on, synchronous_commit=local)");
    }
}
