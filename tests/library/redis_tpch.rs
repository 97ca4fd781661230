//! TPC-H on a real Redis through the adapter: all eight tables loaded as hashes (row counts
//! checked), Q1 and Q6 as server-side Lua scripts checked against the exact Rust reference
//! answers, the joins Q3 and Q14 refused as unsupported, and a range COUNT on
//! `lineitem.l_orderkey` checked against a count over the generated rows.
//! Load and query times at SF 0.1 and SF 1 are bench/'s: `SERVER=redis SF=0.1
//! bench/tpch-load` times the load next to `redis-cli --pipe`, and `dbsweep run
//! kv-vs-relational` measures the queries.

use crate::support;
use crate::support::open;
use dbsweep::adapter::{Connection, Target};
use dbsweep::base::op::{Answer, ErrorClass, Op, QueryId, RangeAgg};
use dbsweep::base::table::Value;
use dbsweep::data::{DataSpec, Dataset, tpch_reference};
use dbsweep::servers::ServerKind;

/// Prepares and loads every table of `dataset`, checking each table's row count.
async fn load_all(target: &dyn Target, dataset: &Dataset) {
    target.prepare(&dataset.tables).await.expect("prepare");
    for (t, def) in dataset.tables.iter().enumerate() {
        let loaded = target.load(def, dataset.initial(t)).await.expect("load");
        assert_eq!(loaded, dataset.initial_rows(t), "rows loaded into {}", def.name);
        assert_eq!(target.count_rows(def).await.expect("count_rows"), dataset.initial_rows(t), "count_rows({})", def.name);
    }
}

/// Runs `q` once and checks its answer against the reference at `scale`.
async fn run_query(conn: &mut dyn Connection, q: QueryId, scale: f64) {
    let outcome = conn.execute(&Op::Query(q)).await.unwrap_or_else(|e| panic!("{q:?}: {e:?}"));
    let got = outcome.answer.unwrap_or_else(|| panic!("{q:?} returned no answer"));
    let expected = tpch_reference::answer(q, scale);
    assert!(got.agrees_with(&expected), "{q:?} at SF {scale}\n redis:     {got:?}\n reference: {expected:?}");
    let Answer::Table(rows) = &got else { panic!("{q:?}: not a table: {got:?}") };
    assert_eq!(outcome.rows, rows.len() as u64, "{q:?}: Outcome.rows is the number of result rows");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_runs_tpch_q1_q6_as_lua_scripts_at_sf_001() {
    const SF: f64 = 0.01;
    let server = support::spawn(ServerKind::Redis).await;
    let target = open("redis", &server.url());
    let dataset = Dataset::new(&DataSpec::Tpch { scale: SF }, 7);
    load_all(target.as_ref(), &dataset).await;

    let caps = &target.info().capabilities;
    assert_eq!(caps.queries, vec![QueryId::TpchQ1, QueryId::TpchQ6]);
    assert!(target.info().settings.contains_key("lua-time-limit"), "{:?}", target.info().settings);

    let mut conn = target.connect().await.expect("connect");
    run_query(conn.as_mut(), QueryId::TpchQ1, SF).await;
    run_query(conn.as_mut(), QueryId::TpchQ6, SF).await;
    // Q1 at SF 0.01 has the four (returnflag, linestatus) groups.
    let Some(Answer::Table(groups)) = conn.execute(&Op::Query(QueryId::TpchQ1)).await.unwrap().answer else { panic!() };
    let flags: Vec<(String, String)> = groups
        .iter()
        .map(|r| match (&r[0], &r[1]) {
            (Value::Text(a), Value::Text(b)) => (a.to_string(), b.to_string()),
            other => panic!("{other:?}"),
        })
        .collect();
    let expected_flags = [("A", "F"), ("N", "F"), ("N", "O"), ("R", "F")].map(|(a, b)| (a.to_string(), b.to_string()));
    assert_eq!(flags, expected_flags);

    // Q3 and Q14 are joins: not offered, and refused as unsupported rather than emulated.
    for join in [QueryId::TpchQ3, QueryId::TpchQ14] {
        let err = conn.execute(&Op::Query(join)).await.unwrap_err();
        assert_eq!(err.class, ErrorClass::Unsupported, "{join:?}: {err:?}");
    }

    // Range COUNT over the l_orderkey index against a count over the generated rows.
    let lineitem = dataset.table_id("lineitem").unwrap();
    let orderkey = dataset.tables[lineitem].column_index("l_orderkey").unwrap();
    for (lo, hi) in [(1000, 5000), (1, 1), (7, 7), (59_000, 70_000)] {
        let expected =
            dataset.initial(lineitem).filter(|row| matches!(row[orderkey], Value::Int(k) if (lo..=hi).contains(&k))).count() as i64;
        let outcome =
            conn.execute(&Op::Range { table: lineitem, column: orderkey, lo, hi, agg: RangeAgg::Count }).await.expect("range count");
        assert_eq!(outcome.answer, Some(Answer::Scalar(Value::Int(expected))), "COUNT l_orderkey in [{lo}, {hi}]");
    }

    target.cleanup().await.expect("cleanup");
    server.stop().await.expect("stop redis");
}
