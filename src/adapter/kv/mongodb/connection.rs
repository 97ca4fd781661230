//! One client's connection: each op as one driver call (`find`, `insert_many`,
//! `delete_many`, ...) on the namespace's collections, replies counted into an outcome.
//! Must not touch any other database.

use super::documents::{bound, from_bson, ids, key_id, row_document, to_bson};
use super::op_error;
use crate::adapter::Connection;
use crate::base::op::{Answer, ErrorClass, Op, OpError, OpKind, Outcome, RangeAgg};
use crate::base::table::{TableDef, TableId, Value};
use crate::error::Result;
use async_trait::async_trait;
use futures_util::TryStreamExt;
use mongodb::bson::{Document, doc};
use mongodb::{Collection, Database};
use std::sync::Arc;

pub struct MongoConnection {
    pub(super) db: Database,
    pub(super) tables: Arc<Vec<Arc<TableDef>>>,
    /// One per table, in `TableId` order.
    pub(super) collections: Vec<Collection<Document>>,
}

impl MongoConnection {
    pub(super) fn table(&self, id: TableId) -> Result<(&TableDef, &Collection<Document>), OpError> {
        match (self.tables.get(id), self.collections.get(id)) {
            (Some(t), Some(c)) => Ok((t, c)),
            _ => Err(OpError::client(format!("mongodb: no table #{id} (was prepare called?)"))),
        }
    }

    /// The filter `lo <= column <= hi` on an indexed column.
    pub(super) fn range_filter(t: &TableDef, column: usize, lo: i64, hi: i64) -> Result<Document, OpError> {
        let col = t
            .columns
            .get(column)
            .filter(|_| t.indexed.contains(&column))
            .ok_or_else(|| OpError::new(ErrorClass::Unsupported, format!("mongodb: column {column} of {} has no index", t.name)))?;
        let unsupported = || OpError::new(ErrorClass::Unsupported, format!("mongodb: ranges over text column {}", col.name));
        Ok(
            doc! {col.name.as_str(): {"$gte": bound(col.ty, lo).ok_or_else(unsupported)?, "$lte": bound(col.ty, hi).ok_or_else(unsupported)?}},
        )
    }

    /// `$set` of one column, or `$unset` for NULL.
    pub(super) fn update_document(t: &TableDef, column: usize, value: &Value) -> Result<Document, OpError> {
        if column == 0 || column >= t.columns.len() {
            return Err(OpError::client(format!("mongodb: cannot update column {column} of {}", t.name)));
        }
        let name = t.columns[column].name.as_str();
        Ok(match to_bson(value) {
            Some(b) => doc! {"$set": {name: b}},
            None => doc! {"$unset": {name: ""}},
        })
    }

    pub(super) async fn count_found(collection: &Collection<Document>, filter: Document) -> Result<u64, OpError> {
        let mut cursor = collection.find(filter).await.map_err(op_error)?;
        let mut rows = 0;
        while cursor.try_next().await.map_err(op_error)?.is_some() {
            rows += 1;
        }
        Ok(rows)
    }

    pub(super) async fn range_max(
        t: &TableDef,
        collection: &Collection<Document>,
        filter: Document,
        of: usize,
    ) -> Result<Outcome, OpError> {
        let of_col = t.columns.get(of).ok_or_else(|| OpError::client(format!("mongodb: no column {of} in {}", t.name)))?;
        let field = of_col.name.as_str();
        let top = collection.find_one(filter).sort(doc! {field: -1}).projection(doc! {field: 1}).await.map_err(op_error)?;
        let value = match top {
            None => Value::Null,
            // A missing field sorts below every value: the top row lacks it only when all do.
            Some(document) => match document.get(field) {
                None => Value::Null,
                Some(b) => from_bson(of_col.ty, b).ok_or_else(|| OpError::server(format!("mongodb: max {b} is not a {:?}", of_col.ty)))?,
            },
        };
        Ok(Outcome::answer(1, Answer::Scalar(value)))
    }
}

#[async_trait]
impl Connection for MongoConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        match op {
            Op::Echo => {
                self.db.run_command(doc! {"ping": 1}).await.map_err(op_error)?;
                Ok(Outcome::rows(0))
            }
            Op::Insert { table, row } => {
                let (t, collection) = self.table(*table)?;
                collection.insert_one(row_document(t, row)?).await.map_err(op_error)?;
                Ok(Outcome::rows(1))
            }
            Op::Get { table, key } => {
                let (_, collection) = self.table(*table)?;
                Ok(Outcome::rows(u64::from(collection.find_one(doc! {"_id": key_id(*key)}).await.map_err(op_error)?.is_some())))
            }
            Op::MultiGet { table, keys } => {
                let (_, collection) = self.table(*table)?;
                Ok(Outcome::rows(Self::count_found(collection, doc! {"_id": {"$in": ids(keys)}}).await?))
            }
            Op::Delete { table, key } => {
                let (_, collection) = self.table(*table)?;
                Ok(Outcome::rows(collection.delete_one(doc! {"_id": key_id(*key)}).await.map_err(op_error)?.deleted_count))
            }
            Op::Update { table, key, column, value } => {
                let (t, collection) = self.table(*table)?;
                let update = Self::update_document(t, *column, value)?;
                Ok(Outcome::rows(collection.update_one(doc! {"_id": key_id(*key)}, update).await.map_err(op_error)?.matched_count))
            }
            Op::ReadModifyWrite { table, key, column, value } => {
                let (t, collection) = self.table(*table)?;
                let update = Self::update_document(t, *column, value)?;
                if collection.find_one(doc! {"_id": key_id(*key)}).await.map_err(op_error)?.is_none() {
                    return Ok(Outcome::rows(0));
                }
                Ok(Outcome::rows(collection.update_one(doc! {"_id": key_id(*key)}, update).await.map_err(op_error)?.matched_count))
            }
            Op::Scan { table, start, count } => {
                let (_, collection) = self.table(*table)?;
                let limit = i64::try_from(*count).map_err(|_| OpError::client("mongodb: scan count too large"))?;
                let mut cursor =
                    collection.find(doc! {"_id": {"$gte": key_id(*start)}}).sort(doc! {"_id": 1}).limit(limit).await.map_err(op_error)?;
                let mut rows = 0;
                while cursor.try_next().await.map_err(op_error)?.is_some() {
                    rows += 1;
                }
                Ok(Outcome::rows(rows))
            }
            Op::Range { table, column, lo, hi, agg } => {
                let (t, collection) = self.table(*table)?;
                let filter = Self::range_filter(t, *column, *lo, *hi)?;
                match agg {
                    RangeAgg::Rows => Ok(Outcome::rows(Self::count_found(collection, filter).await?)),
                    RangeAgg::Count => {
                        let n = collection.count_documents(filter).await.map_err(op_error)?;
                        let n = i64::try_from(n).map_err(|_| OpError::server("mongodb: count out of range"))?;
                        Ok(Outcome::answer(1, Answer::Scalar(Value::Int(n))))
                    }
                    RangeAgg::Max { column: of } => Self::range_max(t, collection, filter, *of).await,
                }
            }
            Op::FetchAll { table } => {
                let (_, collection) = self.table(*table)?;
                Ok(Outcome::rows(Self::count_found(collection, doc! {}).await?))
            }
            Op::Query(q) => Err(OpError::new(ErrorClass::Unsupported, format!("mongodb does not run {q:?}"))),
            Op::Custom { op, values } => self.custom(op, values).await,
            Op::Script { .. } => Err(OpError::unsupported(op.kind(), "mongodb")),
        }
    }

    /// Inserts, Gets and Deletes of one table go in one request; other batches loop.
    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        if ops.first().is_some_and(|op| op.kind() == OpKind::Custom) {
            return crate::adapter::one_by_one(self, ops).await;
        }
        let same_table = |id: &TableId| ops.iter().all(|op| op_table(op) == Some(*id));
        match ops.first() {
            Some(Op::Insert { table, .. }) if same_table(table) => {
                let (t, collection) = self.table(*table)?;
                let documents = ops
                    .iter()
                    .map(|op| match op {
                        Op::Insert { row, .. } => row_document(t, row),
                        other => Err(OpError::client(format!("mongodb: {} in an insert batch", other.kind()))),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Outcome::rows(collection.insert_many(documents).await.map_err(op_error)?.inserted_ids.len() as u64))
            }
            Some(Op::Get { table, .. }) if same_table(table) => {
                let (_, collection) = self.table(*table)?;
                let keys = batch_keys(ops, OpKind::Get)?;
                Ok(Outcome::rows(Self::count_found(collection, doc! {"_id": {"$in": ids(&keys)}}).await?))
            }
            Some(Op::Delete { table, .. }) if same_table(table) => {
                let (_, collection) = self.table(*table)?;
                let keys = batch_keys(ops, OpKind::Delete)?;
                Ok(Outcome::rows(collection.delete_many(doc! {"_id": {"$in": ids(&keys)}}).await.map_err(op_error)?.deleted_count))
            }
            _ => {
                let mut rows = 0;
                for op in ops {
                    rows += self.execute(op).await?.rows;
                }
                Ok(Outcome::rows(rows))
            }
        }
    }
}

fn op_table(op: &Op) -> Option<TableId> {
    match op {
        Op::Insert { table, .. } | Op::Get { table, .. } | Op::Delete { table, .. } => Some(*table),
        _ => None,
    }
}

/// The keys of a batch of Gets or Deletes (the runner never repeats a key in one batch).
fn batch_keys(ops: &[Op], kind: OpKind) -> Result<Vec<i64>, OpError> {
    ops.iter()
        .map(|op| match op {
            Op::Get { key, .. } | Op::Delete { key, .. } if op.kind() == kind => Ok(*key),
            other => Err(OpError::client(format!("mongodb: {} in a {kind} batch", other.kind()))),
        })
        .collect()
}
