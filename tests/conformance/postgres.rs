//! PostgreSQL in its three layouts; all three share one server (and dbsweep's schema).

use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
use std::sync::Arc;

/// The server under test, started by dbsweep's spawn code.
fn server_url() -> String {
    crate::support::url(dbsweep::servers::ServerKind::Postgres)
}

async fn make(layout: &str) -> (Arc<dyn Target>, ()) {
    let url = format!("{}?layout={layout}", server_url());
    let ctx = OpenContext::new(std::env::temp_dir());
    let target = registry::open(&format!("pg-{layout}"), &TargetUrl::parse(&url).unwrap(), &ctx).unwrap();
    (target, ())
}

conformance!(pg_row, make("row"));
conformance!(pg_hstore, make("hstore"));
conformance!(pg_jsonb, make("jsonb"));
lease_conformance!(pg_lease, |ctx: &OpenContext| {
    registry::open("pg", &TargetUrl::parse(&format!("{}?layout=hstore", server_url())).unwrap(), ctx).unwrap()
});

/// Beyond the shared body: every column type round-trips (MAX decodes to the column's
/// type, NULLs survive), and batches of every op kind give the counts a loop would.
/// Also used by the MariaDB module.
pub mod typed {
    use dbsweep::adapter::Target;
    use dbsweep::base::op::{Answer, Op, RangeAgg};
    use dbsweep::base::table::{Column, ColumnType, Date, Decimal, Row, TableDef, Value};
    use std::sync::Arc;

    const ROWS: i64 = 200;
    const QTY: usize = 1;
    const PRICE: usize = 2;
    const DAY: usize = 3;
    const RATIO: usize = 4;
    const NOTE: usize = 5;

    fn def() -> Arc<TableDef> {
        let col = |name: &str, ty| Column { name: name.into(), ty };
        Arc::new(TableDef {
            name: "typed".into(),
            columns: vec![
                col("k", ColumnType::Int),
                col("qty", ColumnType::Int),
                col("price", ColumnType::Decimal),
                col("day", ColumnType::Date),
                col("ratio", ColumnType::Float),
                col("note", ColumnType::Text),
            ],
            indexed: vec![QTY, DAY],
        })
    }

    fn row(k: i64) -> Row {
        vec![
            Value::Int(k),
            Value::Int(k % 20),
            Value::Decimal(Decimal(k * 137 - 5000)),
            Value::Date(Date(8000 + (k % 50) as i32)),
            if k % 17 == 0 { Value::Null } else { Value::Float(k as f64 / 7.0) },
            if k % 13 == 0 { Value::Null } else { Value::Text(format!("n{k:03}\t'\"\\é").into()) },
        ]
    }

    fn max_of(rows: &[Row], filter: impl Fn(&Row) -> bool, column: usize) -> Value {
        let mut best = Value::Null;
        for r in rows.iter().filter(|r| filter(r)) {
            let v = &r[column];
            let greater = match (v, &best) {
                (Value::Null, _) => false,
                (_, Value::Null) => true,
                (Value::Int(a), Value::Int(b)) => a > b,
                (Value::Float(a), Value::Float(b)) => a > b,
                (Value::Decimal(a), Value::Decimal(b)) => a > b,
                (Value::Date(a), Value::Date(b)) => a > b,
                (Value::Text(a), Value::Text(b)) => a > b,
                _ => panic!("mixed types"),
            };
            if greater {
                best = v.clone();
            }
        }
        best
    }

    fn int(v: &Value) -> i64 {
        match v {
            Value::Int(i) => *i,
            Value::Date(d) => d.0 as i64,
            other => panic!("{other:?}"),
        }
    }

    pub async fn check(target: Arc<dyn Target>) {
        let table = def();
        target.prepare(std::slice::from_ref(&table)).await.expect("prepare");
        assert_eq!(target.load(&table, Box::new((0..ROWS).map(row))).await.unwrap(), ROWS as u64);
        let mut rows: Vec<Row> = (0..ROWS).map(row).collect();
        let mut conn = target.connect().await.expect("connect");
        let scalar = |o: dbsweep::base::op::Outcome| match o.answer {
            Some(Answer::Scalar(v)) => v,
            other => panic!("{other:?}"),
        };

        // MAX decodes to the column's type; ranges over a Date column use days.
        for (column, lo, hi) in [(QTY, 3, 5), (DAY, 8010, 8014), (DAY, 7000, 7001)] {
            let within = |r: &Row| (lo..=hi).contains(&int(&r[column]));
            for of in [QTY, PRICE, DAY, RATIO, NOTE] {
                let op = Op::Range { table: 0, column, lo, hi, agg: RangeAgg::Max { column: of } };
                let got = scalar(conn.execute(&op).await.unwrap());
                assert_eq!(got, max_of(&rows, within, of), "max of column {of} over column {column} in {lo}..={hi}");
            }
            let count = Op::Range { table: 0, column, lo, hi, agg: RangeAgg::Count };
            let expected = rows.iter().filter(|r| within(r)).count() as i64;
            assert_eq!(scalar(conn.execute(&count).await.unwrap()), Value::Int(expected));
            let rows_op = Op::Range { table: 0, column, lo, hi, agg: RangeAgg::Rows };
            assert_eq!(conn.execute(&rows_op).await.unwrap().rows, expected as u64);
        }

        // Inserts with NULLs, one and many.
        let mut extra = row(ROWS);
        extra[RATIO] = Value::Null;
        extra[NOTE] = Value::Null;
        assert_eq!(conn.execute(&Op::Insert { table: 0, row: extra.clone() }).await.unwrap().rows, 1);
        rows.push(extra);
        let batch: Vec<Row> = (ROWS + 1..ROWS + 6).map(row).collect();
        let ops: Vec<Op> = batch.iter().map(|r| Op::Insert { table: 0, row: r.clone() }).collect();
        assert_eq!(conn.execute_batch(&ops).await.unwrap().rows, 5);
        rows.extend(batch);
        assert_eq!(target.count_rows(&table).await.unwrap(), rows.len() as u64);

        // Batched updates of every type (one key missing), then read back through MAX.
        let updates = [
            (7, PRICE, Value::Decimal(Decimal(9_999_999))),
            (8, DAY, Value::Date(Date(9000))),
            (9, RATIO, Value::Float(1e6 + 0.125)),
            (10, NOTE, Value::Text("zzz".into())),
            (ROWS * 10, PRICE, Value::Decimal(Decimal(1))),
        ];
        let ops: Vec<Op> = updates.iter().map(|(k, c, v)| Op::Update { table: 0, key: *k, column: *c, value: v.clone().into() }).collect();
        assert_eq!(conn.execute_batch(&ops).await.unwrap().rows, 4, "batch update counts rows found");
        for (k, c, v) in &updates[..4] {
            rows[*k as usize][*c] = v.clone();
        }
        let everything = |_: &Row| true;
        for of in [PRICE, DAY, RATIO, NOTE] {
            let op = Op::Range { table: 0, column: QTY, lo: 0, hi: 19, agg: RangeAgg::Max { column: of } };
            assert_eq!(scalar(conn.execute(&op).await.unwrap()), max_of(&rows, everything, of), "after update, column {of}");
        }
        // Setting a value to NULL.
        let op = Op::Update { table: 0, key: 9, column: RATIO, value: Value::Null.into() };
        assert_eq!(conn.execute(&op).await.unwrap().rows, 1);
        rows[9][RATIO] = Value::Null;
        let op = Op::Range { table: 0, column: QTY, lo: 0, hi: 19, agg: RangeAgg::Max { column: RATIO } };
        assert_eq!(scalar(conn.execute(&op).await.unwrap()), max_of(&rows, everything, RATIO));

        // Batches of the other kinds.
        let rmw: Vec<Op> = [1, 2, 3, ROWS * 10]
            .iter()
            .map(|k| Op::ReadModifyWrite { table: 0, key: *k, column: QTY, value: Value::Int(19).into() })
            .collect();
        assert_eq!(conn.execute_batch(&rmw).await.unwrap().rows, 3, "batch read-modify-write");
        let scans = vec![Op::Scan { table: 0, start: 0, count: 4 }, Op::Scan { table: 0, start: ROWS + 3, count: 10 }];
        assert_eq!(conn.execute_batch(&scans).await.unwrap().rows, 4 + 3, "batch scan");
        let counts: Vec<Op> = (0..3).map(|i| Op::Range { table: 0, column: QTY, lo: i, hi: i, agg: RangeAgg::Count }).collect();
        assert_eq!(conn.execute_batch(&counts).await.unwrap().rows, 3, "batch of counts: one row each");
        let ranges: Vec<Op> = (0..3).map(|i| Op::Range { table: 0, column: QTY, lo: i, hi: i, agg: RangeAgg::Rows }).collect();
        // Keys 1..=3 now have qty 19.
        let qty_now = |r: &Row| if (1..=3).contains(&int(&r[0])) { 19 } else { int(&r[QTY]) };
        let expected = rows.iter().filter(|r| (0..=2).contains(&qty_now(r))).count() as u64;
        assert_eq!(conn.execute_batch(&ranges).await.unwrap().rows, expected, "batch range rows");
        let echoes = vec![Op::Echo; 3];
        conn.execute_batch(&echoes).await.expect("batch echo");
        let gets: Vec<Op> = vec![Op::MultiGet { table: 0, keys: vec![1, 2] }, Op::MultiGet { table: 0, keys: vec![3, ROWS * 10] }];
        assert_eq!(conn.execute_batch(&gets).await.unwrap().rows, 3, "batch multi-get");

        // A failing statement fails the whole batch and stores nothing.
        let dup = vec![Op::Insert { table: 0, row: row(ROWS + 50) }, Op::Insert { table: 0, row: row(5) }];
        assert!(conn.execute_batch(&dup).await.is_err(), "duplicate key in a batch insert");
        assert_eq!(target.count_rows(&table).await.unwrap(), rows.len() as u64, "a failed batch insert stored rows");
        drop(conn);
        target.cleanup().await.expect("cleanup");
    }
}

async fn typed_for(layout: &str) {
    let (target, _guard) = make(layout).await;
    typed::check(target).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_row_types_and_batches() {
    typed_for("row").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_hstore_types_and_batches() {
    typed_for("hstore").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_jsonb_types_and_batches() {
    typed_for("jsonb").await;
}
