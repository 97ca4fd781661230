//! The engines dbsweep reaches over the PostgreSQL wire protocol (tokio-postgres):
//! PostgreSQL itself (`pg-row`, `pg-hstore`, `pg-jsonb`), HyPer and H2.
//!
//! One session (`session::PgSession`) serves all three; each engine is a small `Flavor`
//! (its dialect, whether parameters are typed, how a batch commits, how query answers
//! travel) and a `Target` of its own for what differs outside a session: the namespace and
//! its ownership marker, DDL, the bulk-load path (`copy_in` where the engine has COPY).
//! Values are encoded by `encode`. Must not time anything.

pub mod encode;
pub mod h2;
pub mod hyper;
mod pgpass;
pub mod postgres;
pub mod session;

use crate::adapter::sql::dialect::{Dialect, SqlTable};
use crate::adapter::sql::dialects::Layout;
use crate::base::op::{ErrorClass, OpError};
use crate::base::table::{RowSource, TableDef};
use crate::error::{Error, Result};
use bytes::Bytes;
use encode::Wire;
use futures_util::SinkExt;
use std::sync::Arc;
use tokio_postgres::Client;

/// The marker of dbsweep's namespace: the schema comment (PostgreSQL, H2), the value in
/// the marker table (HyPer).
pub const MARKER: &str = "dbsweep-owned";

/// How a batch's transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    /// `BEGIN; ...; COMMIT` sent as one pipeline: the engine aborts a transaction at its
    /// first failed statement, so the COMMIT then only rolls back.
    Pipelined,
    /// `BEGIN`, the statements, and `COMMIT` only once every statement succeeded (else
    /// `ROLLBACK`): a failed statement does not abort the transaction (H2), or the engine
    /// is not asked to take the whole pipeline (HyPer).
    WhenAllSucceeded,
}

/// What a PostgreSQL-protocol engine does differently inside a session.
pub struct Flavor {
    pub dialect: &'static dyn Dialect,
    /// How rows are stored, which decides how parameters are encoded.
    pub layout: Layout,
    /// Statements are prepared with their parameter types (hyperd takes a Parse without
    /// types as "no parameters"; H2 cannot infer a type from a cast).
    pub typed_parameters: bool,
    pub commit: Commit,
    /// Analytic queries run over the simple (text) protocol (H2's server has no binary
    /// output for text), each cell parsed into its answer type.
    pub text_answers: bool,
}

/// A one-line description of a driver error (the server's message for SQL errors).
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} {}: {}", db.severity(), db.code().code(), db.message()),
        None => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    }
}

pub fn op_error(e: tokio_postgres::Error) -> OpError {
    let class = if e.as_db_error().is_some() {
        ErrorClass::Server
    } else if e.is_closed() || std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>()) {
        ErrorClass::Connection
    } else {
        ErrorClass::Client
    };
    OpError::new(class, describe(&e))
}

/// `target 'NAME': WHAT: the driver's message`.
pub fn runtime(target: &str, what: &str, e: &tokio_postgres::Error) -> Error {
    Error::runtime(format!("target '{target}': {what}: {}", describe(e)))
}

/// The prepared table named like `def`, from the tables of the last `prepare`.
pub fn prepared_table(target: &str, tables: &Arc<Vec<SqlTable>>, def: &TableDef) -> Result<usize> {
    tables
        .iter()
        .position(|t| t.def.name == def.name)
        .ok_or_else(|| Error::runtime(format!("target '{target}': table {} was not prepared", def.name)))
}

/// `SELECT COUNT(*)` of a table.
pub async fn count_rows(target: &str, client: &Client, table: &SqlTable) -> Result<u64> {
    let row = client.query_one(&table.count(), &[]).await.map_err(|e| runtime(target, "count", &e))?;
    let n: i64 = row.try_get(0).map_err(|e| runtime(target, "count", &e))?;
    Ok(n as u64)
}

/// Bulk-loads rows with text-format COPY (`copy`: the engine's `COPY ... FROM STDIN`),
/// sent in chunks of about 256 KiB; returns the rows stored, which must be all of them.
pub async fn copy_in(target: &str, client: &Client, copy: &str, wire: Wire<'_>, rows: RowSource) -> Result<u64> {
    let sink = client.copy_in::<_, Bytes>(copy).await.map_err(|e| runtime(target, "COPY", &e))?;
    futures_util::pin_mut!(sink);
    let mut chunk = String::with_capacity(300 * 1024);
    let mut sent = 0u64;
    for row in rows {
        wire.copy_row(&row, &mut chunk).map_err(|e| Error::runtime(format!("target '{target}': loading {}: {e}", wire.def.name)))?;
        sent += 1;
        if chunk.len() >= 256 * 1024 {
            let bytes = Bytes::from(std::mem::replace(&mut chunk, String::with_capacity(300 * 1024)));
            sink.send(bytes).await.map_err(|e| runtime(target, "COPY", &e))?;
        }
    }
    if !chunk.is_empty() {
        sink.send(Bytes::from(chunk)).await.map_err(|e| runtime(target, "COPY", &e))?;
    }
    let loaded = sink.finish().await.map_err(|e| runtime(target, "COPY", &e))?;
    if loaded != sent {
        return Err(Error::runtime(format!("target '{target}': COPY stored {loaded} of {sent} rows")));
    }
    Ok(loaded)
}

/// The stored column list of a COPY (`(pk, v)` in the document layouts).
pub fn copy_columns(dialect: &dyn Dialect, table: &SqlTable) -> String {
    dialect.insert_row(table, 1).0.join(", ")
}
