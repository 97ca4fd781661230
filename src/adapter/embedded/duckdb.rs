//! DuckDB adapter: the embedded column store (the MonetDB/HyPer family), linked against
//! the prebuilt libduckdb that `scripts/setup-embedded` installs (see `build.rs`).
//!
//! `duckdb:` uses a throwaway file in the run's scratch directory; `duckdb:/path` the user's
//! file. One `duckdb::Connection` is opened on the file and every client gets its own
//! `try_clone()` of it (`Execution::Blocking`). dbsweep's tables are `dbsweep_<table>`,
//! registered in the marker table `dbsweep_owner`; `prepare` replaces only registered
//! tables and refuses with `NotOwned` when a same-named table is not registered.
//!
//! Tables get a `PRIMARY KEY` and an index on each indexed column; both are ART indexes,
//! which DuckDB uses for point lookups and highly selective filters (otherwise it scans
//! with zone maps). Bulk loads use the Appender inside one transaction; ops use cached
//! prepared statements of the `duckdb` dialect; a batch is one transaction, and so is a
//! read-modify-write.
//! Types: Int `BIGINT`, Float `DOUBLE`, Decimal `DECIMAL(15,2)`, Text `VARCHAR`, Date
//! `DATE` (converted exactly to and from dbsweep's hundredths and days). Must not time
//! anything.

use super::session::{Engine, binding_calls};
use super::target::{DatabaseFile, EmbeddedFile, EmbeddedSql, Requests, in_transaction, load_each_row, sql_target_info};
use super::{Embedded, clip};
use crate::adapter::declaration::{Declaration, Needs, UrlOptions};
use crate::adapter::sql::dialect::Dialect;
use crate::adapter::sql::dialects::{DUCKDB, DUCKDB_IN_LIST_MAX};
use crate::adapter::{EngineMemory, OpenContext, TargetUrl};
use crate::base::durability::Durability;
use crate::base::op::OpError;
use crate::base::table::{ColumnType, Date, Decimal, Row, RowSource, TableDef, Value};
use crate::error::{Error, Result};
use ::duckdb::appender_params_from_iter;
use ::duckdb::types::{ToSqlOutput, ValueRef};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Prepared statements kept per connection (multi-gets add one per batch size).
const STATEMENT_CACHE: usize = 256;

pub const SYSTEM: Declaration = Declaration {
    system: "duckdb",
    url: "duckdb:[PATH]",
    description: "DuckDB, embedded column store (prebuilt libduckdb)",
    needs: Needs::Library,
    schemes: &["duckdb"],
    options: UrlOptions::Only(&[]),
    several_hosts: false,
    capabilities: crate::adapter::sql::CAPABILITIES,
    open: Some(|name, url, ctx| Ok(Arc::new(DuckDb::open(name, url, ctx)?))),
};

pub struct DuckDb {
    /// The admin connection is the one clients are cloned from.
    file: EmbeddedFile<DuckDbEngine>,
}

fn runtime(e: ::duckdb::Error) -> Error {
    Error::runtime(format!("duckdb: {e}"))
}

/// A write that met a concurrent one's ("TransactionContext Error: Conflict on ...") was
/// rolled back whole: `ErrorClass::Conflict`, which the SQL session retries.
fn op_error(e: ::duckdb::Error) -> OpError {
    let message = clip(format!("duckdb: {e}"));
    if message.contains("TransactionContext Error: Conflict") { OpError::conflict(message) } else { OpError::server(message) }
}

impl DuckDb {
    pub fn open(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Embedded<Self>> {
        let file = DatabaseFile::of(name, url, ctx, "duckdb", "dbsweep.duckdb")?;
        let base = ::duckdb::Connection::open(&file.path).map_err(|e| {
            Error::usage(format!("target '{name}': cannot open DuckDB file {}: {e}; check the path in the URL", file.path.display()))
        })?;
        let version = base.version().map_err(runtime)?;
        let setting = |name: &str| -> Result<String> {
            base.query_row(&format!("SELECT current_setting('{name}')::VARCHAR"), [], |r| r.get(0)).map_err(runtime)
        };
        let settings = BTreeMap::from([
            ("threads".to_string(), setting("threads")?),
            ("memory_limit".to_string(), setting("memory_limit")?),
            ("checkpoint_threshold".to_string(), setting("checkpoint_threshold")?),
            (
                "durability".to_string(),
                Durability::Commit.describe("WAL written and synced at each commit (DuckDB's fixed behaviour, no other level)"),
            ),
            (
                "indexes".to_string(),
                "ART on the primary key and each indexed column (used for point lookups and highly selective filters)".to_string(),
            ),
            ("library".to_string(), concat!(env!("DBSWEEP_DUCKDB_LIB_DIR"), "/libduckdb.so").to_string()),
        ]);
        let requests = Requests {
            bulk_load: "Appender in one transaction",
            echo: "SELECT 1 through a cached prepared statement",
            insert: "INSERT INTO <table> VALUES (?, …), a cached prepared statement",
            insert_batch: "one transaction of single-row prepared INSERTs",
            multi_get: format!(
                "SELECT … WHERE <key> IN (?, …) of bound keys up to {DUCKDB_IN_LIST_MAX}, else IN (SELECT unnest(one BIGINT[] parameter))"
            ),
        };
        let info = sql_target_info(name, url, &DUCKDB, version, &file, requests, settings);
        Ok(Embedded(DuckDb { file: EmbeddedFile::new(info, &DUCKDB, file, DuckDbEngine(base)) }))
    }
}

impl EmbeddedSql for DuckDb {
    type Engine = DuckDbEngine;

    fn file(&self) -> &EmbeddedFile<DuckDbEngine> {
        &self.file
    }

    /// Every client gets its own `try_clone()` of the admin connection.
    fn client(&self, admin: &mut DuckDbEngine) -> Result<DuckDbEngine> {
        let conn = admin.0.try_clone().map_err(runtime)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        Ok(DuckDbEngine(conn))
    }

    /// The Appender, in one transaction.
    fn load(&self, admin: &mut DuckDbEngine, table: &TableDef, rows: RowSource) -> Result<u64> {
        let name = DUCKDB.bare_name(&table.name);
        in_transaction(admin, &DUCKDB, |engine| {
            let mut appender = engine.0.appender(&name).map_err(runtime)?;
            let n = load_each_row(rows, |row| appender.append_row(appender_params_from_iter(row.iter().map(Bind))).map_err(runtime))?;
            appender.flush().map_err(runtime)?;
            Ok(n)
        })
    }

    /// The buffer manager's memory (`duckdb_memory()`, summed over its tags): what DuckDB
    /// holds in memory for the database, its indexes and its work areas.
    fn engine_memory(&self, admin: &mut DuckDbEngine) -> Result<EngineMemory> {
        let sql = "SELECT COALESCE(SUM(memory_usage_bytes), 0)::BIGINT FROM duckdb_memory()";
        let bytes = admin.0.query_row(sql, [], |r| r.get::<_, i64>(0)).map_err(runtime)?;
        Ok(EngineMemory { bytes: bytes as u64, source: "duckdb_memory() memory_usage_bytes".into() })
    }
}

/// DuckDB's calls on one `duckdb::Connection`.
pub struct DuckDbEngine(::duckdb::Connection);

impl Engine for DuckDbEngine {
    binding_calls!(duckdb);

    /// DuckDB transactions are optimistic (conflicts fail at write time), so reads and
    /// writes begin the same way.
    fn begin(&self, _writes: bool) -> &'static str {
        "BEGIN TRANSACTION"
    }

    fn table_exists(&mut self, name: &str) -> Result<bool, OpError> {
        let query =
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1";
        Ok(self.query(query, &[Value::Text(name.into())], &[], &mut drop)? > 0)
    }
}

/// Binds a dbsweep value as a DuckDB value of the matching column type.
struct Bind<'a>(&'a Value);

impl ::duckdb::ToSql for Bind<'_> {
    fn to_sql(&self) -> ::duckdb::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self.0 {
            Value::Null => ValueRef::Null,
            Value::Int(v) => ValueRef::BigInt(*v),
            Value::Float(v) => ValueRef::Double(*v),
            Value::Decimal(d) => ValueRef::Decimal(decimal(*d)?),
            Value::Date(d) => ValueRef::Date32(d.0),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

/// Hundredths as a DuckDB decimal with scale 2.
fn decimal(d: Decimal) -> ::duckdb::Result<::duckdb::types::Decimal> {
    let width = if d.0.unsigned_abs() < 10u64.pow(18) { 18 } else { 38 };
    ::duckdb::types::Decimal::new(width, 2, i128::from(d.0)).map_err(|e| ::duckdb::Error::ToSqlConversionFailure(Box::new(e)))
}

/// Reads a DuckDB value back as dbsweep's value of the column's type.
fn decode(value: ValueRef<'_>, ty: ColumnType) -> Result<Value, OpError> {
    Ok(match (value, ty) {
        (ValueRef::Null, _) => Value::Null,
        (ValueRef::BigInt(v), ColumnType::Int) => Value::Int(v),
        (ValueRef::Int(v), ColumnType::Int) => Value::Int(v.into()),
        (ValueRef::Double(v), ColumnType::Float) => Value::Float(v),
        (ValueRef::BigInt(v), ColumnType::Float) => Value::Float(v as f64),
        (ValueRef::Decimal(d), ColumnType::Decimal) => {
            let scale = u32::from(d.scale());
            let hundredths = if scale >= 2 { d.value() / 10i128.pow(scale - 2) } else { d.value() * 10i128.pow(2 - scale) };
            Value::Decimal(Decimal(i64::try_from(hundredths).map_err(|_| OpError::client("duckdb: decimal out of range"))?))
        }
        (ValueRef::Date32(d), ColumnType::Date) => Value::Date(Date(d)),
        (ValueRef::Text(s), ColumnType::Text) => Value::Text(String::from_utf8_lossy(s).into()),
        (other, ty) => return Err(OpError::client(format!("duckdb: a {ty:?} column returned {:?}", other.data_type()))),
    })
}

/// A cell of a user's script's result as its own type reads: integers, floating point
/// (decimals too), text and dates as dbsweep's values; any other type as its debug text.
fn natural(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Boolean(b) => Value::Int(i64::from(b)),
        ValueRef::TinyInt(v) => Value::Int(v.into()),
        ValueRef::SmallInt(v) => Value::Int(v.into()),
        ValueRef::Int(v) => Value::Int(v.into()),
        ValueRef::BigInt(v) => Value::Int(v),
        ValueRef::HugeInt(v) => i64::try_from(v).map_or(Value::Float(v as f64), Value::Int),
        ValueRef::UTinyInt(v) => Value::Int(v.into()),
        ValueRef::USmallInt(v) => Value::Int(v.into()),
        ValueRef::UInt(v) => Value::Int(v.into()),
        ValueRef::UBigInt(v) => i64::try_from(v).map_or(Value::Float(v as f64), Value::Int),
        ValueRef::Float(v) => Value::Float(v.into()),
        ValueRef::Double(v) => Value::Float(v),
        ValueRef::Decimal(d) => Value::Float(d.value() as f64 / 10f64.powi(i32::from(d.scale()))),
        ValueRef::Text(s) => Value::Text(String::from_utf8_lossy(s).into()),
        ValueRef::Date32(d) => Value::Date(Date(d)),
        other => Value::Text(format!("{other:?}").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::Target;
    use crate::adapter::embedded::{decimals_and_dates_round_trip, open_at};

    #[tokio::test]
    async fn reports_the_library_version() {
        let dir = tempfile::tempdir().unwrap();
        let target = open_at(DuckDb::open, "duckdb", &dir.path().join("v.duckdb"));
        assert_eq!(target.info().version, "v1.5.6");
        assert!(target.info().settings["threads"].parse::<u32>().unwrap() >= 1);
    }

    #[tokio::test]
    async fn decimals_and_dates_round_trip_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let target = open_at(DuckDb::open, "duckdb", &dir.path().join("types.duckdb"));
        decimals_and_dates_round_trip(&target).await;
        // DuckDB itself sees the right values, not just a round trip of dbsweep's numbers.
        let text: String = target
            .0
            .file
            .with_admin(|c| {
                c.0.query_row("SELECT string_agg(price::VARCHAR || ' ' || day::VARCHAR, ',' ORDER BY k) FROM dbsweep_typed", [], |r| {
                    r.get(0)
                })
                .map_err(runtime)
            })
            .unwrap();
        assert_eq!(text, "12.34 1992-01-01,-0.05 1998-12-31,999999.99 1994-08-23");
    }
}
