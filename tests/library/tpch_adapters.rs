//! TPC-H through the SQL adapters: every table loads by the adapter's bulk path with the
//! right row count (keys from 0 for region and nation, Decimal, Date and Text columns),
//! primary-key gets find the generated keys, and Q1, Q3, Q6 and Q14 give TPC-H's answers as
//! computed exactly by `tpch_reference`, with the result types `answer_columns` names.
//!
//! PostgreSQL (three layouts on one server) and MariaDB run on throwaway servers started
//! by `servers::spawn`; SQLite and DuckDB use throwaway files, MonetDB a throwaway database directory. Bulk-load
//! times are bench/'s (`bench/tpch-load`, next to `psql \copy` and `LOAD DATA`).

use crate::support;
use crate::support::open_in;
use dbsweep::adapter::Target;
use dbsweep::base::op::{Answer, Op, QueryId};
use dbsweep::base::table::{ColumnType, Value};
use dbsweep::data::tpch::{LINEITEM, ORDERS, REGION, TABLE_NAMES};
use dbsweep::data::tpch_queries;
use dbsweep::data::tpch_reference;
use dbsweep::data::{DataSpec, Dataset};
use dbsweep::servers::ServerKind;
use std::sync::{Arc, OnceLock};

const SF: f64 = 0.01;
const SEED: u64 = 11;
const QUERIES: [QueryId; 4] = [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14];

/// The exact reference answers at `SF`, computed once per test binary.
fn reference(query: QueryId) -> &'static Answer {
    static ANSWERS: OnceLock<Vec<Answer>> = OnceLock::new();
    let all = ANSWERS.get_or_init(|| QUERIES.iter().map(|q| tpch_reference::answer(*q, SF)).collect());
    &all[QUERIES.iter().position(|q| *q == query).unwrap()]
}

fn type_of(v: &Value) -> Option<ColumnType> {
    match v {
        Value::Null => None,
        Value::Int(_) => Some(ColumnType::Int),
        Value::Float(_) => Some(ColumnType::Float),
        Value::Decimal(_) => Some(ColumnType::Decimal),
        Value::Text(_) => Some(ColumnType::Text),
        Value::Date(_) => Some(ColumnType::Date),
    }
}

/// Loads all eight tables and checks counts, gets and the four queries; cleans up.
async fn check_tpch(target: Arc<dyn Target>) {
    let system = target.info().system.clone();
    let dataset = Dataset::new(&DataSpec::Tpch { scale: SF }, SEED);
    assert_eq!(dataset.tables.len(), TABLE_NAMES.len());
    target.prepare(&dataset.tables).await.unwrap_or_else(|e| panic!("{system}: prepare: {e}"));
    for (id, table) in dataset.tables.iter().enumerate() {
        let loaded = target.load(table, dataset.initial(id)).await.unwrap_or_else(|e| panic!("{system}: load {}: {e}", table.name));
        let expected = dataset.initial_rows(id);
        assert_eq!(loaded, expected, "{system}: load reports the rows of {}", table.name);
        assert_eq!(target.count_rows(table).await.unwrap(), expected, "{system}: rows stored in {}", table.name);
    }

    let mut conn = target.connect().await.unwrap_or_else(|e| panic!("{system}: connect: {e}"));
    // Primary-key gets of generated keys (region's first key is 0); a missing key finds nothing.
    for table in [REGION, ORDERS, LINEITEM] {
        let n = dataset.initial_rows(table);
        for index in [0, 1, n / 2, n - 1] {
            let key = dataset.key_at(table, index);
            let found = conn.execute(&Op::Get { table, key }).await.unwrap().rows;
            assert_eq!(found, 1, "{system}: get of {} key {key} (row #{index})", TABLE_NAMES[table]);
        }
        assert_eq!(conn.execute(&Op::Get { table, key: -1 }).await.unwrap().rows, 0, "{system}: get of a missing key");
    }
    assert_eq!(dataset.key_at(REGION, 0), 0, "region keys start at 0");

    let caps = &target.info().capabilities;
    assert!(caps.supports_kind(dbsweep::base::op::OpKind::Query), "{system} declares queries");
    for query in QUERIES {
        assert!(caps.queries.contains(&query), "{system} declares {query:?}");
        let outcome = conn.execute(&Op::Query(query)).await.unwrap_or_else(|e| panic!("{system}: {query:?}: {e}"));
        let answer = outcome.answer.unwrap_or_else(|| panic!("{system}: {query:?} gave no answer"));
        let expected = reference(query);
        let Answer::Table(rows) = &answer else { panic!("{system}: {query:?} answered {answer:?}") };
        assert!(!rows.is_empty(), "{system}: {query:?} returned no rows");
        assert_eq!(outcome.rows, rows.len() as u64, "{system}: {query:?} counts its rows");
        let types = tpch_queries::answer_columns(query);
        for row in rows {
            let got: Vec<Option<ColumnType>> = row.iter().map(type_of).collect();
            let want: Vec<Option<ColumnType>> = types.iter().map(|t| Some(*t)).collect();
            assert_eq!(got, want, "{system}: {query:?} result types of {row:?}");
        }
        assert!(
            answer.agrees_with(expected),
            "{system}: {query:?} disagrees with the reference\n  got:      {answer:?}\n  expected: {expected:?}"
        );
    }
    // A batch of queries runs them all.
    let batch: Vec<Op> = QUERIES.iter().map(|q| Op::Query(*q)).collect();
    let expected_rows: u64 = QUERIES.iter().map(|q| if let Answer::Table(r) = reference(*q) { r.len() as u64 } else { 0 }).sum();
    assert_eq!(conn.execute_batch(&batch).await.unwrap().rows, expected_rows, "{system}: batch of queries");
    drop(conn);
    target.cleanup().await.unwrap_or_else(|e| panic!("{system}: cleanup: {e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_layouts_load_and_answer_tpch() {
    let server = support::spawn(ServerKind::Postgres).await;
    let dir = tempfile::tempdir().unwrap();
    for layout in ["row", "hstore", "jsonb"] {
        let target = open_in(&format!("pg-{layout}"), &format!("{}?layout={layout}", server.url()), dir.path());
        check_tpch(target).await;
    }
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_loads_and_answers_tpch() {
    let server = support::spawn(ServerKind::Mariadb).await;
    let dir = tempfile::tempdir().unwrap();
    check_tpch(open_in("mariadb", &server.url(), dir.path())).await;
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_loads_and_answers_tpch() {
    let dir = tempfile::tempdir().unwrap();
    check_tpch(open_in("sqlite", "sqlite:", dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duckdb_loads_and_answers_tpch() {
    let dir = tempfile::tempdir().unwrap();
    check_tpch(open_in("duckdb", "duckdb:", dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monetdb_loads_and_answers_tpch() {
    let dir = tempfile::tempdir().unwrap();
    check_tpch(open_in("monetdb", "monetdb:", dir.path())).await;
}
