//! A custom operation's CQL statements (a study's `cql = "..."`): each prepared once per
//! connection in dbsweep's keyspace (the session's keyspace is set to it on first use, so
//! unqualified table names are dbsweep's), its bind markers given the pass's values as the
//! types the server asks for, and the last one's rows turned into the answer compared with
//! the other systems'.
//!
//! Owns how a result reads as rows: every row of every page; a column of one of dbsweep's
//! tables read as that column's type (a decimal's stored hundredths read as the decimal, a
//! date as the date), other numbers as numbers, text as text. Must not check statements
//! (`plan::custom` refuses other keyspaces before anything runs).

use super::connection::CassandraConnection;
use super::table::from_cql;
use crate::base::custom::{CqlStatement, CustomOp};
use crate::base::digest::reads_digest;
use crate::base::op::{Answer, OpError, OpKind, Outcome};
use crate::base::script::ScriptValue;
use crate::base::table::{ColumnType, Value};
use futures_util::TryStreamExt;
use scylla::frame::response::result::{ColumnType as CqlType, NativeType};
use scylla::value::{CqlValue, Row};

impl CassandraConnection {
    /// Runs one op of `op` with `values` (by slot).
    pub(super) async fn custom(&mut self, op: &CustomOp, values: &[ScriptValue]) -> Result<Outcome, OpError> {
        if op.cql.is_empty() {
            return Err(OpError::unsupported(OpKind::Custom, "cassandra (no cql statement for this experiment)"));
        }
        if !self.in_keyspace {
            self.session.use_keyspace(self.keyspace.as_str(), true).await.map_err(|e| OpError::server(format!("cassandra: USE: {e}")))?;
            self.in_keyspace = true;
        }
        let mut rows = Vec::new();
        for statement in &op.cql {
            rows = self.custom_statement(statement, values).await?;
        }
        Ok(match op.reads {
            true => Outcome::answer(rows.len() as u64, Answer::Scalar(Value::Int(reads_digest([rows.as_slice()]) as i64))),
            false => Outcome::rows(rows.len() as u64),
        })
    }

    async fn custom_statement(&mut self, statement: &CqlStatement, values: &[ScriptValue]) -> Result<Vec<Vec<Value>>, OpError> {
        let prepared = self.stmt(&statement.text).await?;
        let specs = prepared.get_variable_col_specs();
        let bound = statement
            .markers
            .iter()
            .zip(specs.iter())
            .map(|(slot, spec)| bind(spec.typ(), &values[*slot]))
            .collect::<Result<Vec<CqlValue>, _>>()?;
        let pager = self.session.execute_iter(prepared.clone(), bound).await.map_err(|e| OpError::server(format!("cassandra: {e}")))?;
        let types: Vec<Option<ColumnType>> = pager
            .column_specs()
            .iter()
            .map(|spec| {
                let table = self.tables.iter().find(|t| t.def.name == spec.table_spec().table_name())?;
                table.def.columns.iter().find(|c| c.name == spec.name()).map(|c| c.ty)
            })
            .collect();
        let rows: Vec<Row> = pager
            .rows_stream::<Row>()
            .map_err(|e| OpError::server(format!("cassandra: {e}")))?
            .try_collect()
            .await
            .map_err(|e| OpError::server(format!("cassandra: {e}")))?;
        rows.into_iter().map(|row| row.columns.into_iter().zip(&types).map(|(v, ty)| cell(*ty, v)).collect()).collect()
    }
}

/// A value for a bind marker of type `ty`.
fn bind(ty: &CqlType, value: &ScriptValue) -> Result<CqlValue, OpError> {
    let bad = || OpError::client(format!("cassandra: '{}' does not fit a {ty:?} marker", value.raw()));
    Ok(match (ty, value) {
        (CqlType::Native(NativeType::BigInt | NativeType::Counter), ScriptValue::Int(i)) => CqlValue::BigInt(*i),
        (CqlType::Native(NativeType::Int), ScriptValue::Int(i)) => CqlValue::Int(i32::try_from(*i).map_err(|_| bad())?),
        (CqlType::Native(NativeType::SmallInt), ScriptValue::Int(i)) => CqlValue::SmallInt(i16::try_from(*i).map_err(|_| bad())?),
        (CqlType::Native(NativeType::Double), ScriptValue::Int(i)) => CqlValue::Double(*i as f64),
        (CqlType::Native(NativeType::Double), ScriptValue::Float(x)) => CqlValue::Double(*x),
        (CqlType::Native(NativeType::Float), ScriptValue::Float(x)) => CqlValue::Float(*x as f32),
        (CqlType::Native(NativeType::Text | NativeType::Ascii), v) => CqlValue::Text(v.raw()),
        _ => return Err(bad()),
    })
}

/// A result cell: as its table column's type when it is one of dbsweep's columns.
fn cell(ty: Option<ColumnType>, value: Option<CqlValue>) -> Result<Value, OpError> {
    if let Some(ty) = ty {
        return from_cql(ty, value);
    }
    Ok(match value {
        None => Value::Null,
        Some(CqlValue::BigInt(i) | CqlValue::Counter(scylla::value::Counter(i))) => Value::Int(i),
        Some(CqlValue::Int(i)) => Value::Int(i64::from(i)),
        Some(CqlValue::SmallInt(i)) => Value::Int(i64::from(i)),
        Some(CqlValue::TinyInt(i)) => Value::Int(i64::from(i)),
        Some(CqlValue::Double(x)) => Value::Float(x),
        Some(CqlValue::Float(x)) => Value::Float(f64::from(x)),
        Some(CqlValue::Boolean(b)) => Value::Int(i64::from(b)),
        Some(CqlValue::Text(s) | CqlValue::Ascii(s)) => Value::Text(s.into()),
        Some(other) => Value::Text(format!("{other:?}").into()),
    })
}
