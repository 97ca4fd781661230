//! The binding against the real library: results read back as MonetDB computed them,
//! parameters of every type, appends, conflicts, the one-database rule, threads.

use super::*;
use crate::adapter::embedded::monetdb::values::{AppendColumn, AppendDate, Cell, Param};
use crate::base::table::Date;

fn memory() -> Connection {
    Connection::open(Location::Memory, Options::default()).unwrap()
}

/// The tests' usual start: the library to this test alone (`exclusive`), an in-memory
/// database, and the test's first table created by `ddl`.
fn memory_with(ddl: &str) -> (std::sync::MutexGuard<'static, ()>, Connection) {
    let serial = exclusive();
    let mut conn = memory();
    conn.execute(ddl).unwrap();
    (serial, conn)
}

/// `memory_with(ddl)` and a second client of the same database, for the conflict tests.
fn two_clients_with(ddl: &str) -> (std::sync::MutexGuard<'static, ()>, Connection, Connection) {
    let (serial, a) = memory_with(ddl);
    let b = a.database().connect().unwrap();
    (serial, a, b)
}

/// The single value of a one-row, one-column result.
fn scalar(conn: &mut Connection, sql: &str) -> Cell<'static> {
    let rows = conn.query(sql).unwrap();
    assert_eq!((rows.len(), rows.width()), (1, 1), "{sql}");
    let cell = rows.column(0).unwrap().get(0).unwrap();
    // Owned copies of the borrowed kinds, so the result can be freed.
    match cell {
        Cell::Text(s) => Cell::Text(Box::leak(s.to_string().into_boxed_str())),
        Cell::Null => Cell::Null,
        Cell::Int { value, scale } => Cell::Int { value, scale },
        Cell::Double(v) => Cell::Double(v),
        Cell::Date(d) => Cell::Date(d),
    }
}

fn int(value: i128) -> Cell<'static> {
    Cell::Int { value, scale: 0 }
}

#[test]
fn appended_rows_are_what_monetdb_aggregates() {
    // MonetDBe 11.41 appends only to tables without key constraints: the key comes after.
    let (_serial, mut conn) = memory_with("CREATE TABLE t (k BIGINT NOT NULL, price DECIMAL(15,2), x DOUBLE, name VARCHAR(20), d DATE)");
    let n = 1000i64;
    let names: Vec<Option<CString>> = (0..n).map(|k| (k != 7).then(|| CString::new(format!("n{k}")).unwrap())).collect();
    let days: Vec<AppendDate> =
        (0..n).map(|k| if k == 8 { AppendDate::NULL } else { AppendDate::new(Date(8035 + k as i32)).unwrap() }).collect();
    let columns = [
        AppendColumn::Int64((0..n).collect()),
        AppendColumn::Int64((0..n).map(|k| if k == 9 { i64::MIN } else { k * 101 }).collect()),
        AppendColumn::Double((0..n).map(|k| k as f64 / 4.0).collect()),
        AppendColumn::Text(names),
        AppendColumn::Date(days),
    ];
    conn.append("sys", "t", &columns).unwrap();
    conn.execute("ALTER TABLE t ADD CONSTRAINT t_pk PRIMARY KEY (k)").unwrap();
    assert_eq!(conn.execute("INSERT INTO t (k) VALUES (5)").err().and_then(|e| e.sqlstate().map(str::to_owned)).as_deref(), Some("40002"));
    assert_eq!(scalar(&mut conn, "SELECT COUNT(*) FROM t"), int(1000));
    assert_eq!(scalar(&mut conn, "SELECT COUNT(*) FROM t WHERE k BETWEEN 100 AND 199"), int(100));
    // 999 * 1.01, read as hundredths with MonetDB's scale.
    assert_eq!(scalar(&mut conn, "SELECT MAX(price) FROM t"), Cell::Int { value: 100_899, scale: 2 });
    assert_eq!(scalar(&mut conn, "SELECT SUM(x) FROM t WHERE k < 4"), Cell::Double(1.5));
    assert_eq!(scalar(&mut conn, "SELECT name FROM t WHERE k = 42"), Cell::Text("n42"));
    assert_eq!(scalar(&mut conn, "SELECT CAST(d AS VARCHAR(10)) FROM t WHERE k = 0"), Cell::Text("1992-01-01"));
    assert_eq!(scalar(&mut conn, "SELECT MAX(d) FROM t"), Cell::Date(Date(8035 + 999)));
    // The nils went in as SQL NULLs and come back as `Null`.
    assert_eq!(scalar(&mut conn, "SELECT COUNT(*) FROM t WHERE name IS NULL OR d IS NULL OR price IS NULL"), int(3));
    for (column, key) in [("name", 7), ("d", 8), ("price", 9)] {
        assert_eq!(scalar(&mut conn, &format!("SELECT {column} FROM t WHERE k = {key}")), Cell::Null, "{column}");
    }
    // Whole rows: every column of the result, every row.
    let rows = conn.query("SELECT k, price, x, name, d FROM t WHERE k BETWEEN 10 AND 12 ORDER BY k").unwrap();
    assert_eq!((rows.len(), rows.width()), (3, 5));
    let row: Vec<Cell> = (0..5).map(|c| rows.column(c).unwrap().get(2).unwrap()).collect();
    assert_eq!(row, [int(12), Cell::Int { value: 1212, scale: 2 }, Cell::Double(3.0), Cell::Text("n12"), Cell::Date(Date(8047))]);
    assert!(rows.column(0).unwrap().get(3).is_none() && rows.column(5).is_err());
}

#[test]
fn parameters_are_bound_in_the_declared_types() {
    let (_serial, mut conn) =
        memory_with("CREATE TABLE p (k BIGINT PRIMARY KEY, small INT, price DECIMAL(15,2), x DOUBLE, name VARCHAR(20), d DATE)");
    let insert = "INSERT INTO p VALUES (?, ?, ?, ?, ?, ?)";
    let row = [Param::Int(1), Param::Int(-5), Param::Int(1234), Param::Double(0.5), Param::Text("é one"), Param::Date(Date(10_591))];
    assert_eq!(conn.prepared(insert, &row).unwrap().affected(), 1);
    let nulls = [Param::Int(2), Param::Null, Param::Null, Param::Null, Param::Null, Param::Null];
    assert_eq!(conn.prepared(insert, &nulls).unwrap().affected(), 1);
    // The cached statement runs again with new values.
    assert_eq!(
        conn.prepared(insert, &[Param::Int(3), Param::Int(7), Param::Int(-1), Param::Int(2), Param::Text(""), Param::Date(Date(0))])
            .unwrap()
            .affected(),
        1
    );
    assert_eq!(conn.statements.len(), 1);
    // A schema change frees MonetDB's plans: the statement is prepared again, not run freed.
    conn.execute("START TRANSACTION").unwrap();
    conn.execute("CREATE TABLE other (k INT)").unwrap();
    conn.execute("DROP TABLE other").unwrap();
    conn.execute("COMMIT").unwrap();
    assert!(conn.statements.is_empty());
    assert_eq!(
        conn.prepared(insert, &[Param::Int(4), Param::Int(0), Param::Int(0), Param::Double(0.0), Param::Text("x"), Param::Date(Date(1))])
            .unwrap()
            .affected(),
        1
    );
    conn.execute("DELETE FROM p WHERE k = 4").unwrap();
    assert_eq!(
        scalar(&mut conn, "SELECT CAST(price AS VARCHAR(20)) || ' ' || CAST(d AS VARCHAR(10)) || ' ' || name FROM p WHERE k = 1"),
        Cell::Text("12.34 1998-12-31 é one")
    );
    assert_eq!(
        scalar(&mut conn, "SELECT COUNT(*) FROM p WHERE small IS NULL AND price IS NULL AND x IS NULL AND name IS NULL AND d IS NULL"),
        int(1)
    );
    assert_eq!(scalar(&mut conn, "SELECT CAST(d AS VARCHAR(10)) FROM p WHERE k = 3"), Cell::Text("1970-01-01"));
    {
        let rows =
            conn.prepared("SELECT name FROM p WHERE price BETWEEN ? AND ? ORDER BY k", &[Param::Int(-100), Param::Int(2000)]).unwrap();
        let names = rows.column(0).unwrap();
        assert_eq!((0..rows.len()).map(|r| names.get(r).unwrap()).collect::<Vec<_>>(), [Cell::Text("é one"), Cell::Text("")]);
    }
    {
        let rows = conn.prepared("SELECT k FROM p WHERE d >= ?", &[Param::Date(Date(10_000))]).unwrap();
        assert_eq!(rows.column(0).unwrap().get(0), Some(int(1)));
    }
    // A value that does not fit the declared INT is refused before MonetDB sees it.
    let err = conn.prepared("SELECT k FROM p WHERE small = ?", &[Param::Int(1 << 40)]).err().unwrap();
    assert!(err.message.contains("does not fit"), "{err}");
    let err = conn.prepared("SELECT k FROM p WHERE k = ?", &[]).err().unwrap();
    assert!(err.message.contains("takes 1 parameters"), "{err}");
}

#[test]
fn errors_carry_monetdbs_message_and_sqlstate() {
    let _serial = exclusive();
    let mut conn = memory();
    let err = conn.query("SELECT * FROM no_such_table").err().unwrap();
    assert_eq!(err.sqlstate(), Some("42S02"), "{err}");
    assert!(err.message.contains("no_such_table") && !err.is_conflict(), "{err}");
    conn.execute("CREATE TABLE u (k BIGINT PRIMARY KEY)").unwrap();
    conn.execute("INSERT INTO u VALUES (1)").unwrap();
    let err = conn.execute("INSERT INTO u VALUES (1)").err().unwrap();
    assert_eq!(err.sqlstate(), Some("40002"), "{err}");
    // The connection is usable after an error.
    assert_eq!(scalar(&mut conn, "SELECT COUNT(*) FROM u"), int(1));
    let err = conn.append("sys", "u", &[AppendColumn::Int64(vec![2])]).err().unwrap();
    assert!(err.message.contains("key constraints"), "{err}");
    conn.execute("CREATE TABLE w (k BIGINT)").unwrap();
    let err = conn.append("sys", "w", &[AppendColumn::Double(vec![1.0])]).err().unwrap();
    assert!(err.message.contains("append"), "{err}");
}

#[test]
fn concurrent_inserts_conflict_and_the_loser_is_told() {
    let (_serial, mut a, mut b) = two_clients_with("CREATE TABLE c (k BIGINT PRIMARY KEY, v BIGINT)");
    a.execute("START TRANSACTION").unwrap();
    b.execute("START TRANSACTION").unwrap();
    let insert = "INSERT INTO c VALUES (?, ?)";
    a.prepared(insert, &[Param::Int(1), Param::Int(1)]).unwrap();
    b.prepared(insert, &[Param::Int(2), Param::Int(2)]).unwrap();
    a.execute("COMMIT").unwrap();
    let err = b.execute("COMMIT").err().unwrap();
    assert!(err.is_conflict() && err.sqlstate() == Some("40000"), "{err}");
    // The loser's row is gone; retried with the same statement text (prepared again: the
    // failed commit freed the plan, and running the old one crashed), it goes in.
    assert_eq!(scalar(&mut b, "SELECT COUNT(*) FROM c"), int(1));
    b.execute("START TRANSACTION").unwrap();
    assert_eq!(b.prepared(insert, &[Param::Int(2), Param::Int(2)]).unwrap().affected(), 1);
    b.execute("COMMIT").unwrap();
    assert_eq!(scalar(&mut a, "SELECT SUM(v) FROM c"), int(3));
}

#[test]
fn one_database_per_process_shared_by_its_connections() {
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let location = Location::Directory(dir.path().join("db"));
    let mut first = Connection::open(location.clone(), Options { threads: 2, memory_limit_mib: 0 }).unwrap();
    first.execute("CREATE TABLE s (k BIGINT)").unwrap();
    first.execute("INSERT INTO s VALUES (5)").unwrap();
    let err = Connection::open(Location::Memory, Options::default()).err().unwrap();
    assert!(err.message.contains("one database per process") && err.message.contains("db"), "{err}");
    let mut second = first.database().connect().unwrap();
    assert_eq!(second.location(), &location);
    drop(first);
    // The second connection keeps the database open.
    assert_eq!(scalar(&mut second, "SELECT SUM(k) FROM s"), int(5));
    drop(second);
    // Closed: the slot is free and the directory kept the committed data.
    let mut again = Connection::open(location, Options::default()).unwrap();
    assert_eq!(scalar(&mut again, "SELECT SUM(k) FROM s"), int(5));
    drop(again);
    let mut memory = memory();
    assert!(memory.query("SELECT * FROM s").is_err(), "a new in-memory database starts empty");
}

#[test]
fn connections_on_many_threads_run_at_once() {
    let (_serial, mut base) = memory_with("CREATE TABLE m (k BIGINT NOT NULL, v BIGINT)");
    base.append("sys", "m", &[AppendColumn::Int64((0..10_000).collect()), AppendColumn::Int64((0..10_000).map(|k| k % 7).collect())])
        .unwrap();
    base.execute("ALTER TABLE m ADD CONSTRAINT m_pk PRIMARY KEY (k)").unwrap();
    // A connection that moved to another thread is opened again there; one that moved
    // inside a transaction says so once.
    let mut moved = base.database().connect().unwrap();
    moved.prepared("SELECT v FROM m WHERE k = ?", &[Param::Int(1)]).unwrap();
    let mut moved = std::thread::spawn(move || {
        assert_eq!(scalar(&mut moved, "SELECT COUNT(*) FROM m WHERE v = 0"), int(1429));
        moved.execute("START TRANSACTION").unwrap();
        moved
    })
    .join()
    .unwrap();
    let err = moved.query("SELECT 1").err().unwrap();
    assert!(err.message.contains("inside a transaction"), "{err}");
    assert_eq!(scalar(&mut moved, "SELECT COUNT(*) FROM m WHERE v = 0"), int(1429));
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let database = base.database();
            std::thread::spawn(move || {
                let mut conn = database.connect().unwrap();
                let mut sum = 0i128;
                for i in 0..200i64 {
                    let key = (t * 1000 + i * 3) % 10_000;
                    let rows = conn.prepared("SELECT v FROM m WHERE k = ?", &[Param::Int(key)]).unwrap();
                    let Some(Cell::Int { value, .. }) = rows.column(0).unwrap().get(0) else { panic!("no row for {key}") };
                    assert_eq!(value, i128::from(key % 7));
                    sum += value;
                }
                sum
            })
        })
        .collect();
    let total: i128 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let expected: i128 = (0..8i64).flat_map(|t| (0..200i64).map(move |i| i128::from((t * 1000 + i * 3) % 10_000 % 7))).sum();
    assert_eq!(total, expected);
    assert!(library_version().starts_with("2."), "{}", library_version());
}

#[test]
fn a_lone_connection_that_moves_keeps_its_in_memory_database() {
    let (_serial, mut conn) = memory_with("CREATE TABLE lone (k BIGINT)");
    conn.execute("INSERT INTO lone VALUES (3)").unwrap();
    // Reopened on each thread, never closed down to zero clients in between.
    let mut conn = std::thread::spawn(move || {
        assert_eq!(scalar(&mut conn, "SELECT SUM(k) FROM lone"), int(3));
        conn
    })
    .join()
    .unwrap();
    assert_eq!(scalar(&mut conn, "SELECT SUM(k) FROM lone"), int(3));
}

#[test]
fn a_statement_that_failed_runs_again() {
    let (_serial, mut conn) = memory_with("CREATE TABLE f (k BIGINT PRIMARY KEY)");
    let insert = "INSERT INTO f VALUES (?)";
    conn.prepared(insert, &[Param::Int(1)]).unwrap();
    // MonetDB frees the plan of a failed execution: the statement is prepared again.
    let err = conn.prepared(insert, &[Param::Int(1)]).err().unwrap();
    assert_eq!(err.sqlstate(), Some("40002"), "{err}");
    assert_eq!(conn.prepared(insert, &[Param::Int(2)]).unwrap().affected(), 1);
    conn.execute("START TRANSACTION").unwrap();
    assert!(conn.prepared(insert, &[Param::Int(1)]).is_err());
    conn.execute("ROLLBACK").unwrap();
    assert_eq!(conn.prepared(insert, &[Param::Int(3)]).unwrap().affected(), 1);
    assert_eq!(scalar(&mut conn, "SELECT COUNT(*) FROM f"), int(3));
}

/// A commit that lost a conflict rolls back and frees the plans of the connection's
/// prepared statements: running a cached one again crashed (SIGSEGV in round two).
#[test]
fn statements_run_again_after_a_commit_lost_a_conflict() {
    let (_serial, mut a, mut b) = two_clients_with("CREATE TABLE p (k BIGINT PRIMARY KEY, v BIGINT)");
    let (two, one) = ("INSERT INTO p VALUES (?, ?), (?, ?)", "INSERT INTO p VALUES (?, ?)");
    for round in 0..3i64 {
        let k = round * 10;
        a.execute("START TRANSACTION").unwrap();
        b.execute("START TRANSACTION").unwrap();
        a.prepared(two, &[Param::Int(k + 1), Param::Int(1), Param::Int(k + 2), Param::Int(1)]).unwrap();
        b.prepared(two, &[Param::Int(k + 3), Param::Int(1), Param::Int(k + 4), Param::Int(1)]).unwrap();
        b.prepared(one, &[Param::Int(k + 5), Param::Int(1)]).unwrap();
        a.execute("COMMIT").unwrap();
        let err = b.execute("COMMIT").err().unwrap();
        assert!(err.is_conflict(), "round {round}: {err}");
    }
    assert_eq!(scalar(&mut a, "SELECT COUNT(*) FROM p"), int(6), "the winners' rows only");
}
