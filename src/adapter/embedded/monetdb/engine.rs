//! MonetDB's `Engine`: the embedded SQL session's blocking calls on one MonetDBe
//! connection, dbsweep's values bound as parameters and MonetDB's cells decoded into them.
//! A concurrency conflict is `ErrorClass::Conflict`, which the SQL session retries. Must not
//! time anything.

use super::connection::{Connection, MonetError};
use super::values::{Cell, Param};
use crate::adapter::embedded::clip;
use crate::adapter::embedded::session::Engine;
use crate::base::op::OpError;
use crate::base::table::{ColumnType, Decimal, Row, Value};

/// MonetDB's error as an op's: a concurrency conflict (the transaction was rolled back)
/// is `Conflict`, which the SQL session retries.
fn op_error(e: MonetError) -> OpError {
    let message = clip(format!("monetdb: {e}"));
    if e.is_conflict() { OpError::conflict(message) } else { OpError::server(message) }
}

/// MonetDB's calls on one MonetDBe connection.
pub struct MonetDbEngine {
    pub(super) conn: Connection,
}

impl MonetDbEngine {
    pub(super) fn new(conn: Connection) -> Self {
        MonetDbEngine { conn }
    }
}

impl Engine for MonetDbEngine {
    fn query(&mut self, sql: &str, params: &[Value], types: &[ColumnType], row: &mut dyn FnMut(Row)) -> Result<u64, OpError> {
        let params: Vec<Param<'_>> = params.iter().map(param).collect();
        let rows = self.conn.prepared(sql, &params).map_err(op_error)?;
        let columns = (0..types.len()).map(|c| rows.column(c).map_err(op_error)).collect::<Result<Vec<_>, _>>()?;
        for r in 0..rows.len() {
            let values = (columns.iter().zip(types))
                .map(|(column, ty)| decode(column.get(r).ok_or_else(|| OpError::client("monetdb: a cell of an unreadable type"))?, *ty))
                .collect::<Result<Row, _>>()?;
            row(values);
        }
        Ok(rows.len() as u64)
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, OpError> {
        let params: Vec<Param<'_>> = params.iter().map(param).collect();
        Ok(self.conn.prepared(sql, &params).map_err(op_error)?.affected().max(0) as u64)
    }

    fn batch(&mut self, sql: &str) -> Result<(), OpError> {
        self.conn.execute(sql).map(drop).map_err(op_error)
    }

    /// MonetDB's transactions are optimistic (conflicts fail at commit), so reads and
    /// writes begin the same way.
    fn begin(&self, _writes: bool) -> &'static str {
        "START TRANSACTION"
    }

    fn table_exists(&mut self, name: &str) -> Result<bool, OpError> {
        let query = "SELECT t.name FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id WHERE s.name = 'sys' AND t.name = ?";
        Ok(self.query(query, &[Value::Text(name.into())], &[], &mut drop)? > 0)
    }
}

/// A dbsweep value as a parameter (a decimal as its hundredths: the dialect types every
/// decimal parameter `DECIMAL(15,2)`).
fn param(value: &Value) -> Param<'_> {
    match value {
        Value::Null => Param::Null,
        Value::Int(v) => Param::Int(*v),
        Value::Float(v) => Param::Double(*v),
        Value::Decimal(d) => Param::Int(d.0),
        Value::Text(s) => Param::Text(s),
        Value::Date(d) => Param::Date(*d),
    }
}

/// A MonetDB cell as dbsweep's value of the column's type (decimals rescaled exactly to
/// hundredths).
fn decode(cell: Cell<'_>, ty: ColumnType) -> Result<Value, OpError> {
    let out_of_range = || OpError::client(format!("monetdb: {cell:?} does not fit a {ty:?} value"));
    Ok(match (cell, ty) {
        (Cell::Null, _) => Value::Null,
        (Cell::Int { value, scale: 0 }, ColumnType::Int) => Value::Int(i64::try_from(value).map_err(|_| out_of_range())?),
        (Cell::Int { value, scale }, ColumnType::Decimal) => {
            let hundredths = if scale >= 2 { value / 10i128.pow(scale - 2) } else { value * 10i128.pow(2 - scale) };
            Value::Decimal(Decimal(i64::try_from(hundredths).map_err(|_| out_of_range())?))
        }
        (Cell::Int { value, scale }, ColumnType::Float) => Value::Float(value as f64 / 10f64.powi(scale as i32)),
        (Cell::Double(v), ColumnType::Float) => Value::Float(v),
        (Cell::Text(s), ColumnType::Text) => Value::Text(s.into()),
        (Cell::Date(d), ColumnType::Date) => Value::Date(d),
        (cell, ty) => return Err(OpError::client(format!("monetdb: a {ty:?} column returned {cell:?}"))),
    })
}
