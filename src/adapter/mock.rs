//! Mock: a deterministic in-process reference store (one `BTreeMap` per table).
//!
//! It answers every op exactly, so tests can check the runner, the answers other engines
//! give, and fault handling without any server. It is a reference, never a stand-in for a
//! real server in a comparison. Options: `mock:?latency_us=N` sleeps N µs per request;
//! `mock:?fail_every=N` fails every Nth request with a server error;
//! `mock:?blind_deletes=1` answers every delete with one row whether or not the key existed
//! (as a plain Cassandra `DELETE` does), and `lose_deletes_every=N` (blind too) silently
//! skips every Nth delete, so the runner's read-back must find the key;
//! `mock:?execution=async_threads` has the runner drive each client on a thread of its own
//! (as MariaDB's clients are driven).

use super::declaration::{CapabilitySet, Declaration, Needs, OpSet, UrlOptions};
use super::{Connection, Execution, RowSource, Target, TargetInfo, TargetUrl};
use crate::base::op::{Answer, ErrorClass, Op, OpError, Outcome, RangeAgg};
use crate::base::table::{Row, TableDef, Value};
use crate::error::{Error, Result};
use async_trait::async_trait;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const SYSTEM: Declaration = Declaration {
    system: "mock",
    url: "mock:",
    description: "deterministic in-process reference store (a BTreeMap); answers every op exactly",
    needs: Needs::BuiltIn,
    schemes: &["mock"],
    options: UrlOptions::Only(&["latency_us", "fail_every", "lose_deletes_every", "blind_deletes", "execution"]),
    several_hosts: false,
    capabilities: CapabilitySet { ops: OpSet::NO_SQL, queries: &[], native_batch: true, secondary_indexes: false, statements: None },
    open: Some(|name, url, _| Ok(Arc::new(Mock::new(name, url)?))),
};

type Tables = BTreeMap<String, BTreeMap<i64, Row>>;

pub struct Mock {
    info: TargetInfo,
    shared: Arc<Shared>,
}

struct Shared {
    tables: Mutex<Tables>,
    /// Table names by `TableId`, as given to `prepare`.
    names: Mutex<Vec<String>>,
    latency: Option<Duration>,
    fail_every: Option<u64>,
    requests: AtomicU64,
    /// Deletes reply one row without saying whether the key existed.
    blind_deletes: bool,
    /// Blind deletes: every Nth delete is skipped.
    lose_deletes_every: Option<u64>,
    deletes: AtomicU64,
}

impl Mock {
    pub fn new(name: &str, url: &TargetUrl) -> Result<Self> {
        let number = |key: &str| -> Result<Option<u64>> {
            url.param(key)
                .map(|v| v.parse::<u64>().map_err(|_| Error::usage(format!("target '{name}': {key} must be a whole number, got '{v}'"))))
                .transpose()
        };
        let latency = number("latency_us")?.filter(|us| *us > 0).map(Duration::from_micros);
        let fail_every = number("fail_every")?.filter(|n| *n > 0);
        let lose_deletes_every = number("lose_deletes_every")?.filter(|n| *n > 0);
        let blind_deletes = number("blind_deletes")?.is_some_and(|n| n > 0) || lose_deletes_every.is_some();
        let execution = match url.param("execution").as_deref() {
            None | Some("async") => Execution::Async,
            Some("async_threads") => Execution::AsyncThreads,
            Some(other) => return Err(Error::usage(format!("target '{name}': execution must be async or async_threads, got '{other}'"))),
        };
        let mut settings = BTreeMap::new();
        if let Some(l) = latency {
            settings.insert("latency_us".into(), l.as_micros().to_string());
        }
        if let Some(f) = fail_every {
            settings.insert("fail_every".into(), f.to_string());
        }
        if blind_deletes {
            settings.insert("delete".into(), "blind: one row per delete, verified by reading back".into());
        }
        if let Some(n) = lose_deletes_every {
            settings.insert("lose_deletes_every".into(), n.to_string());
        }
        Ok(Mock {
            info: SYSTEM.target_info(name, url, execution, env!("CARGO_PKG_VERSION"), settings),
            shared: Arc::new(Shared {
                tables: Mutex::new(BTreeMap::new()),
                names: Mutex::new(Vec::new()),
                latency,
                fail_every,
                requests: AtomicU64::new(0),
                blind_deletes,
                lose_deletes_every,
                deletes: AtomicU64::new(0),
            }),
        })
    }
}

#[async_trait]
impl Target for Mock {
    fn info(&self) -> &TargetInfo {
        &self.info
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        let mut stored = self.shared.tables.lock().unwrap();
        stored.clear();
        for t in tables {
            stored.insert(t.name.clone(), BTreeMap::new());
        }
        *self.shared.names.lock().unwrap() = tables.iter().map(|t| t.name.clone()).collect();
        Ok(())
    }

    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64> {
        let mut stored = self.shared.tables.lock().unwrap();
        let target = stored.get_mut(&table.name).ok_or_else(|| Error::runtime(format!("mock: table {} not prepared", table.name)))?;
        let mut n = 0;
        for row in rows {
            let key = row[0].as_int().ok_or_else(|| Error::runtime("mock: key column must be an integer"))?;
            target.insert(key, row);
            n += 1;
        }
        Ok(n)
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        Ok(Box::new(MockConnection { shared: self.shared.clone() }))
    }

    async fn count_rows(&self, table: &TableDef) -> Result<u64> {
        Ok(self.shared.tables.lock().unwrap().get(&table.name).map_or(0, |t| t.len() as u64))
    }

    async fn cleanup(&self) -> Result<()> {
        self.shared.tables.lock().unwrap().clear();
        Ok(())
    }

    fn blind_deletes(&self) -> bool {
        self.shared.blind_deletes
    }
}

struct MockConnection {
    shared: Arc<Shared>,
}

impl MockConnection {
    async fn before_request(&self) -> Result<(), OpError> {
        let n = self.shared.requests.fetch_add(1, AtomicOrdering::Relaxed) + 1;
        if let Some(latency) = self.shared.latency {
            tokio::time::sleep(latency).await;
        }
        match self.shared.fail_every {
            Some(every) if n.is_multiple_of(every) => {
                Err(OpError::new(ErrorClass::Server, format!("mock: injected failure on request {n}")))
            }
            _ => Ok(()),
        }
    }

    fn apply(&self, op: &Op) -> Result<Outcome, OpError> {
        let names = self.shared.names.lock().unwrap();
        let mut tables = self.shared.tables.lock().unwrap();
        let table_id = op.table();
        let mut rows_of = None;
        if let Some(id) = table_id {
            let name = names.get(id).ok_or_else(|| OpError::client(format!("mock: no table #{id}")))?;
            rows_of = Some(tables.get_mut(name).ok_or_else(|| OpError::client(format!("mock: table {name} not prepared")))?);
        }
        let mut table = |_: usize| -> Result<&mut BTreeMap<i64, Row>, OpError> { Ok(rows_of.take().expect("one table per op")) };
        Ok(match op {
            Op::Echo => Outcome::rows(0),
            Op::Insert { table: t, row } => {
                let key = row[0].as_int().ok_or_else(|| OpError::client("key must be an integer"))?;
                let rows = table(*t)?;
                if rows.contains_key(&key) {
                    return Err(OpError::server(format!("duplicate key {key}")));
                }
                rows.insert(key, row.clone());
                Outcome::rows(1)
            }
            Op::Get { table: t, key } => Outcome::rows(u64::from(table(*t)?.contains_key(key))),
            Op::MultiGet { table: t, keys } => {
                let rows = table(*t)?;
                Outcome::rows(keys.iter().filter(|k| rows.contains_key(k)).count() as u64)
            }
            Op::Delete { table: t, key } if self.shared.blind_deletes => {
                let n = self.shared.deletes.fetch_add(1, AtomicOrdering::Relaxed) + 1;
                if !self.shared.lose_deletes_every.is_some_and(|every| n.is_multiple_of(every)) {
                    table(*t)?.remove(key);
                }
                Outcome::rows(1)
            }
            Op::Delete { table: t, key } => Outcome::rows(u64::from(table(*t)?.remove(key).is_some())),
            Op::Update { table: t, key, column, value } | Op::ReadModifyWrite { table: t, key, column, value } => {
                match table(*t)?.get_mut(key) {
                    Some(row) => {
                        row[*column] = value.get().clone();
                        Outcome::rows(1)
                    }
                    None => Outcome::rows(0),
                }
            }
            Op::Scan { table: t, start, count } => Outcome::rows(table(*t)?.range(*start..).take(*count).count() as u64),
            Op::FetchAll { table: t } => Outcome::rows(table(*t)?.len() as u64),
            Op::Range { table: t, column, lo, hi, agg } => {
                let matching = table(*t)?.values().filter(|row| row[*column].as_int().is_some_and(|v| (*lo..=*hi).contains(&v)));
                match agg {
                    RangeAgg::Rows => Outcome::rows(matching.count() as u64),
                    RangeAgg::Count => {
                        let n = matching.count() as u64;
                        Outcome::answer(1, Answer::Scalar(Value::Int(n as i64)))
                    }
                    RangeAgg::Max { column: of } => {
                        let max = matching.map(|row| &row[*of]).max_by(|a, b| compare(a, b)).cloned().unwrap_or(Value::Null);
                        Outcome::answer(1, Answer::Scalar(max))
                    }
                }
            }
            Op::Query(q) => return Err(OpError::new(ErrorClass::Unsupported, format!("mock does not run {q:?}"))),
            Op::Script { .. } | Op::Custom { .. } => return Err(OpError::unsupported(op.kind(), "mock")),
        })
    }
}

/// Orders values of the same type; `Null` sorts first.
fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => x.total_cmp(y),
        (Value::Decimal(x), Value::Decimal(y)) => x.cmp(y),
        (Value::Date(x), Value::Date(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) => x.cmp(y),
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        _ => Ordering::Equal,
    }
}

#[async_trait]
impl Connection for MockConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        self.before_request().await?;
        self.apply(op)
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        self.before_request().await?;
        let mut rows = 0;
        for op in ops {
            rows += self.apply(op)?.rows;
        }
        Ok(Outcome::rows(rows))
    }
}
