//! One client's connection: each op in its own read or write transaction, a batch in one
//! write transaction. Must not touch tables that are not dbsweep's.

use super::encoding::{compare, decode_row, encode_row, index_key, key_of};
use super::{Index, IndexTable, Layout, Primary, op_error};
use crate::adapter::Connection;
use crate::adapter::sql::connection::writes;
use crate::base::op::{Answer, Op, OpError, Outcome, RangeAgg};
use crate::base::table::{Row, Value};
use crate::error::Result;
use ::redb::{Database, ReadTransaction, ReadableDatabase, ReadableTable, WriteTransaction};
use async_trait::async_trait;
use std::cmp::Ordering;
use std::hint::black_box;
use std::sync::Arc;

/// A table and its indexes opened in one write transaction.
pub(super) struct Writer<'t> {
    pub(super) layout: &'t Layout,
    pub(super) primary: ::redb::Table<'t, i64, &'static [u8]>,
    pub(super) indexes: Vec<(usize, IndexTable<'t>)>,
}

impl<'t> Writer<'t> {
    pub(super) fn open(txn: &'t WriteTransaction, layout: &'t Layout) -> Result<Self, OpError> {
        let primary = txn.open_table(Primary::new(&layout.primary)).map_err(op_error)?;
        let indexes = layout
            .indexes
            .iter()
            .map(|(c, name)| Ok((*c, txn.open_table(Index::new(name)).map_err(op_error)?)))
            .collect::<Result<_, OpError>>()?;
        Ok(Writer { layout, primary, indexes })
    }

    pub(super) fn insert(&mut self, row: &Row, buf: &mut Vec<u8>) -> Result<u64, OpError> {
        let key = key_of(row)?;
        if row.len() != self.layout.def.columns.len() {
            return Err(OpError::client(format!(
                "redb: row has {} values, table {} has {} columns",
                row.len(),
                self.layout.def.name,
                self.layout.def.columns.len()
            )));
        }
        encode_row(row, buf);
        if self.primary.insert(key, buf.as_slice()).map_err(op_error)?.is_some() {
            return Err(OpError::server(format!("redb: duplicate key {key} in {}", self.layout.def.name)));
        }
        for (c, index) in &mut self.indexes {
            if let Some(v) = index_key(&row[*c]) {
                index.insert((v, key), ()).map_err(op_error)?;
            }
        }
        Ok(1)
    }

    pub(super) fn delete(&mut self, key: i64) -> Result<u64, OpError> {
        let Some(old) = self.primary.remove(key).map_err(op_error)? else {
            return Ok(0);
        };
        let old = decode_row(old.value())?;
        for (c, index) in &mut self.indexes {
            if let Some(v) = old.get(*c).and_then(index_key) {
                index.remove((v, key)).map_err(op_error)?;
            }
        }
        Ok(1)
    }

    /// Reads the row, sets one column, writes it back and moves its index entry.
    pub(super) fn update(&mut self, key: i64, column: usize, value: &Value, buf: &mut Vec<u8>) -> Result<u64, OpError> {
        let mut row = match self.primary.get(key).map_err(op_error)? {
            Some(bytes) => decode_row(bytes.value())?,
            None => return Ok(0),
        };
        let cell = row.get_mut(column).ok_or_else(|| OpError::client("redb: no such column"))?;
        let old = std::mem::replace(cell, value.clone());
        if let Some((_, index)) = self.indexes.iter_mut().find(|(c, _)| *c == column) {
            if let Some(v) = index_key(&old) {
                index.remove((v, key)).map_err(op_error)?;
            }
            if let Some(v) = index_key(value) {
                index.insert((v, key), ()).map_err(op_error)?;
            }
        }
        encode_row(&row, buf);
        self.primary.insert(key, buf.as_slice()).map_err(op_error)?;
        Ok(1)
    }
}

pub(super) struct RedbConnection {
    pub(super) db: Arc<Database>,
    /// Layouts by `TableId`.
    pub(super) tables: Vec<Layout>,
    /// Reused encoding buffer.
    pub(super) buf: Vec<u8>,
    /// How each write transaction commits (`Immediate` unless `--durability none`).
    pub(super) commit_durability: ::redb::Durability,
}

impl RedbConnection {
    pub(super) fn layout(&self, op: &Op) -> Result<&Layout, OpError> {
        let id = op.table().ok_or_else(|| OpError::unsupported(op.kind(), "redb"))?;
        self.tables.get(id).ok_or_else(|| OpError::client(format!("redb: no table #{id} (prepare first)")))
    }

    /// Runs write ops in one write transaction, committed once.
    pub(super) fn write(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let mut txn = self.db.begin_write().map_err(op_error)?;
        if matches!(self.commit_durability, ::redb::Durability::None) {
            txn.set_durability(self.commit_durability).map_err(op_error)?;
        }
        let mut rows = 0;
        {
            // Ops of a batch usually share a table: keep it open across them.
            let mut open: Option<(usize, Writer<'_>)> = None;
            for op in ops {
                let id = op.table().ok_or_else(|| OpError::unsupported(op.kind(), "redb"))?;
                if open.as_ref().is_none_or(|(open_id, _)| *open_id != id) {
                    // Close the previous table first: redb allows one open handle per table.
                    drop(open.take());
                    let layout = self.tables.get(id).ok_or_else(|| OpError::client(format!("redb: no table #{id} (prepare first)")))?;
                    open = Some((id, Writer::open(&txn, layout)?));
                }
                let writer = &mut open.as_mut().expect("opened above").1;
                rows += match op {
                    Op::Insert { row, .. } => writer.insert(row, &mut self.buf)?,
                    Op::Delete { key, .. } => writer.delete(*key)?,
                    Op::Update { key, column, value, .. } | Op::ReadModifyWrite { key, column, value, .. } => {
                        writer.update(*key, *column, value, &mut self.buf)?
                    }
                    other => return Err(OpError::unsupported(other.kind(), "redb write")),
                };
            }
        }
        // An error above drops `txn`, which aborts it.
        txn.commit().map_err(op_error)?;
        Ok(Outcome::rows(rows))
    }

    pub(super) fn read(&self, txn: &ReadTransaction, op: &Op) -> Result<Outcome, OpError> {
        if let Op::Echo = op {
            return Ok(Outcome::rows(0));
        }
        let layout = self.layout(op)?;
        let primary = txn.open_table(Primary::new(&layout.primary)).map_err(op_error)?;
        let get = |key: i64| -> Result<Option<Row>, OpError> {
            primary.get(key).map_err(op_error)?.map(|bytes| decode_row(bytes.value())).transpose()
        };
        Ok(match op {
            Op::Get { key, .. } => Outcome::rows(u64::from(black_box(get(*key)?).is_some())),
            Op::MultiGet { keys, .. } => {
                let mut n = 0;
                for key in keys {
                    n += u64::from(black_box(get(*key)?).is_some());
                }
                Outcome::rows(n)
            }
            Op::FetchAll { .. } => {
                let mut n = 0;
                for entry in primary.range::<i64>(..).map_err(op_error)? {
                    black_box(decode_row(entry.map_err(op_error)?.1.value())?);
                    n += 1;
                }
                Outcome::rows(n)
            }
            Op::Scan { start, count, .. } => {
                let mut n = 0;
                for entry in primary.range(*start..).map_err(op_error)?.take(*count) {
                    black_box(decode_row(entry.map_err(op_error)?.1.value())?);
                    n += 1;
                }
                Outcome::rows(n)
            }
            Op::Range { column, lo, hi, agg, .. } => {
                let mut matching = Vec::new();
                if lo <= hi {
                    match layout.index_of(*column) {
                        Some(index) => {
                            let index = txn.open_table(Index::new(index)).map_err(op_error)?;
                            for entry in index.range((*lo, i64::MIN)..=(*hi, i64::MAX)).map_err(op_error)? {
                                matching.push(entry.map_err(op_error)?.0.value().1);
                            }
                        }
                        // No index on this column: a full scan, as an SQL engine would do.
                        None => {
                            for entry in primary.range::<i64>(..).map_err(op_error)? {
                                let (key, bytes) = entry.map_err(op_error)?;
                                let row = decode_row(bytes.value())?;
                                if row.get(*column).and_then(index_key).is_some_and(|v| (*lo..=*hi).contains(&v)) {
                                    matching.push(key.value());
                                }
                            }
                        }
                    }
                }
                match agg {
                    RangeAgg::Count => Outcome::answer(1, Answer::Scalar(Value::Int(matching.len() as i64))),
                    RangeAgg::Rows => {
                        let mut n = 0;
                        for key in matching {
                            n += u64::from(black_box(get(key)?).is_some());
                        }
                        Outcome::rows(n)
                    }
                    RangeAgg::Max { column: of } => {
                        let mut max = Value::Null;
                        for key in matching {
                            if let Some(mut row) = get(key)? {
                                let v = std::mem::replace(
                                    row.get_mut(*of).ok_or_else(|| OpError::client("redb: no such column"))?,
                                    Value::Null,
                                );
                                if !matches!(v, Value::Null) && (matches!(max, Value::Null) || compare(&v, &max) == Ordering::Greater) {
                                    max = v;
                                }
                            }
                        }
                        Outcome::answer(1, Answer::Scalar(max))
                    }
                }
            }
            other => return Err(OpError::unsupported(other.kind(), "redb read")),
        })
    }
}

#[async_trait]
impl Connection for RedbConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        self.execute_batch(std::slice::from_ref(op)).await
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let Some(first) = ops.first() else {
            return Ok(Outcome::rows(0));
        };
        if writes(first.kind()) {
            return self.write(ops);
        }
        let txn = self.db.begin_read().map_err(op_error)?;
        if let [op] = ops {
            return self.read(&txn, op);
        }
        let mut rows = 0;
        for op in ops {
            rows += self.read(&txn, op)?.rows;
        }
        Ok(Outcome::rows(rows))
    }
}
