//! One client's connection: each op as memcached commands on its own socket (CAS loops for
//! updates), replies counted into an outcome. Must not touch keys outside the prefix.

use super::CAS_RETRIES;
use super::rows::{encode_row, replace_field};
use super::wire::{StoreReply, Wire, io_error, push_store};
use crate::adapter::Connection;
use crate::base::op::{ErrorClass, Op, OpError, Outcome};
use crate::base::table::{TableId, Value};
use crate::error::Result;
use async_trait::async_trait;
use std::sync::Arc;

pub struct MemcachedConnection {
    pub(super) address: String,
    pub(super) wire: Option<Wire>,
    /// Key prefix per `TableId`: `dbsweep:<table>`.
    pub(super) prefixes: Arc<Vec<String>>,
    pub(super) columns: Arc<Vec<usize>>,
    /// The namespace's key prefix (`dbsweep:`) and the tables' names in `TableId` order,
    /// for a custom command's `${prefix}` and `${row:TABLE}`.
    pub(super) key_prefix: String,
    pub(super) table_names: Arc<Vec<String>>,
}

impl MemcachedConnection {
    pub(super) fn key(&self, table: TableId, pk: i64) -> Result<String, OpError> {
        let prefix =
            self.prefixes.get(table).ok_or_else(|| OpError::client(format!("memcached: no table #{table} (was prepare called?)")))?;
        Ok(format!("{prefix}{pk}"))
    }

    pub(super) fn check_column(&self, table: TableId, column: usize) -> Result<(), OpError> {
        let n = self.columns.get(table).copied().unwrap_or(0);
        if column == 0 || column >= n {
            return Err(OpError::client(format!("memcached: cannot update column {column}")));
        }
        Ok(())
    }

    /// The socket, reconnecting when a cancelled op may have left a reply unread.
    pub(super) async fn wire(&mut self) -> Result<&mut Wire, OpError> {
        if self.wire.is_none() {
            self.wire = Some(Wire::connect(&self.address).await.map_err(io_error)?);
        }
        Ok(self.wire.as_mut().expect("just set"))
    }

    /// Runs a request on the socket; the socket is dropped unless the request finished
    /// cleanly, so a cancelled or failed request never desynchronises the next one.
    pub(super) async fn run(&mut self, op: &Op) -> Result<Outcome, OpError> {
        let mut wire = match self.wire.take() {
            Some(w) => w,
            None => {
                self.wire().await?;
                self.wire.take().expect("connected")
            }
        };
        let result = self.apply(&mut wire, op).await;
        if !matches!(&result, Err(e) if e.class == ErrorClass::Connection) {
            self.wire = Some(wire);
        }
        result
    }

    pub(super) async fn apply(&self, wire: &mut Wire, op: &Op) -> Result<Outcome, OpError> {
        match op {
            Op::Echo => {
                wire.version().await?;
                Ok(Outcome::rows(0))
            }
            Op::Insert { table, row } => {
                let pk = row.first().and_then(Value::as_int).ok_or_else(|| OpError::client("memcached: key must be an integer"))?;
                let key = self.key(*table, pk)?;
                let mut req = Vec::new();
                push_store(&mut req, "add", &key, &encode_row(row), None);
                wire.send(&req).await?;
                match wire.stored().await? {
                    StoreReply::Stored => Ok(Outcome::rows(1)),
                    _ => Err(OpError::server(format!("memcached: duplicate key {pk} (add refused)"))),
                }
            }
            Op::Get { table, key } => Ok(Outcome::rows(wire.get_multi(&[self.key(*table, *key)?]).await?.len() as u64)),
            Op::MultiGet { table, keys } => {
                let keys = keys.iter().map(|k| self.key(*table, *k)).collect::<Result<Vec<_>, _>>()?;
                Ok(Outcome::rows(wire.get_multi(&keys).await?.len() as u64))
            }
            Op::Delete { table, key } => {
                wire.send(format!("delete {}\r\n", self.key(*table, *key)?).as_bytes()).await?;
                deleted(wire).await.map(Outcome::rows)
            }
            Op::Update { table, key, column, value } => {
                self.check_column(*table, *column)?;
                let key = self.key(*table, *key)?;
                for _ in 0..CAS_RETRIES {
                    wire.send(format!("gets {key}\r\n").as_bytes()).await?;
                    let Some((_, data, Some(cas))) = wire.values().await?.into_iter().next() else {
                        return Ok(Outcome::rows(0));
                    };
                    let mut req = Vec::new();
                    push_store(&mut req, "cas", &key, &replace_field(&data, *column, value)?, Some(cas));
                    wire.send(&req).await?;
                    match wire.stored().await? {
                        StoreReply::Stored => return Ok(Outcome::rows(1)),
                        StoreReply::NotFound => return Ok(Outcome::rows(0)),
                        StoreReply::Exists | StoreReply::NotStored => continue,
                    }
                }
                Err(OpError::server(format!("memcached: cas on {key} lost {CAS_RETRIES} races in a row")))
            }
            Op::ReadModifyWrite { table, key, column, value } => {
                self.check_column(*table, *column)?;
                let key = self.key(*table, *key)?;
                let Some((_, data, _)) = wire.get_multi(std::slice::from_ref(&key)).await?.into_iter().next() else {
                    return Ok(Outcome::rows(0));
                };
                let mut req = Vec::new();
                push_store(&mut req, "set", &key, &replace_field(&data, *column, value)?, None);
                wire.send(&req).await?;
                match wire.stored().await? {
                    StoreReply::Stored => Ok(Outcome::rows(1)),
                    other => Err(OpError::server(format!("memcached: set answered {other:?}"))),
                }
            }
            Op::Custom { op, values } => self.custom(wire, op, values).await,
            other => Err(OpError::unsupported(other.kind(), "memcached")),
        }
    }

    pub(super) async fn apply_batch(&self, wire: &mut Wire, ops: &[Op]) -> Result<Outcome, OpError> {
        let mut req = Vec::new();
        match ops.first() {
            Some(Op::Insert { .. }) => {
                for op in ops {
                    let Op::Insert { table, row } = op else { return Err(OpError::client("memcached: mixed batch")) };
                    let pk = row.first().and_then(Value::as_int).ok_or_else(|| OpError::client("memcached: key must be an integer"))?;
                    push_store(&mut req, "add", &self.key(*table, pk)?, &encode_row(row), None);
                }
                wire.send(&req).await?;
                // Read every reply before failing, so the socket stays in step.
                let mut stored = 0;
                let mut first_error = None;
                for _ in ops {
                    match wire.stored().await {
                        Ok(StoreReply::Stored) => stored += 1,
                        Ok(_) => {}
                        Err(e) if e.class == ErrorClass::Connection => return Err(e),
                        Err(e) => first_error = first_error.or(Some(e)),
                    }
                }
                if let Some(e) = first_error {
                    return Err(e);
                }
                if stored < ops.len() as u64 {
                    return Err(OpError::server(format!(
                        "memcached: {} of {} adds refused (duplicate keys)",
                        ops.len() as u64 - stored,
                        ops.len()
                    )));
                }
                Ok(Outcome::rows(stored))
            }
            Some(Op::Delete { .. }) => {
                for op in ops {
                    let Op::Delete { table, key } = op else { return Err(OpError::client("memcached: mixed batch")) };
                    req.extend_from_slice(format!("delete {}\r\n", self.key(*table, *key)?).as_bytes());
                }
                wire.send(&req).await?;
                let mut rows = 0;
                let mut first_error = None;
                for _ in ops {
                    match deleted(wire).await {
                        Ok(n) => rows += n,
                        Err(e) if e.class == ErrorClass::Connection => return Err(e),
                        Err(e) => first_error = first_error.or(Some(e)),
                    }
                }
                match first_error {
                    Some(e) => Err(e),
                    None => Ok(Outcome::rows(rows)),
                }
            }
            Some(Op::Get { .. }) => {
                let keys = ops
                    .iter()
                    .map(|op| match op {
                        Op::Get { table, key } => self.key(*table, *key),
                        _ => Err(OpError::client("memcached: mixed batch")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Outcome::rows(wire.get_multi(&keys).await?.len() as u64))
            }
            _ => {
                let mut rows = 0;
                for op in ops {
                    rows += self.apply(wire, op).await?.rows;
                }
                Ok(Outcome::rows(rows))
            }
        }
    }
}

pub(super) async fn deleted(wire: &mut Wire) -> Result<u64, OpError> {
    match wire.line().await?.as_str() {
        "DELETED" => Ok(1),
        "NOT_FOUND" => Ok(0),
        other => Err(OpError::server(format!("memcached: unexpected reply '{other}'"))),
    }
}

#[async_trait]
impl Connection for MemcachedConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        self.run(op).await
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        if ops.first().is_some_and(|op| op.kind() == crate::base::op::OpKind::Custom) {
            return crate::adapter::one_by_one(self, ops).await;
        }
        let mut wire = match self.wire.take() {
            Some(w) => w,
            None => {
                self.wire().await?;
                self.wire.take().expect("connected")
            }
        };
        let result = self.apply_batch(&mut wire, ops).await;
        if !matches!(&result, Err(e) if e.class == ErrorClass::Connection) {
            self.wire = Some(wire);
        }
        result
    }
}
