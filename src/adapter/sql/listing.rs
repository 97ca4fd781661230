//! Every statement of every dialect, as text: what `tests/golden/statements.txt` locks, so
//! that any change to generated SQL is a reviewed diff.
//!
//! Lists, per dialect, each statement the adapters prepare for the kv table and the eight
//! TPC-H tables (key lists and multi-row inserts at two entries, and in the array form
//! where the dialect has one), then the TPC-H queries. Must not list anything an adapter
//! does not send.

use super::dialect::{Dialect, KeyList, RowBatch, SqlTable};
use super::dialects;
use super::statement::Statement;
use crate::base::op::{QueryId, RangeAgg};
use crate::data::{kv, tpch};
use std::fmt::Write as _;
use std::sync::Arc;

/// The listing of every dialect.
pub fn all_statements() -> String {
    let defs: Vec<_> = std::iter::once(kv::table_def()).chain(tpch::table_defs()).map(Arc::new).collect();
    let mut out = String::new();
    for dialect in dialects::all() {
        let tables: Vec<SqlTable> = defs.iter().map(|def| SqlTable::new(dialect, def.clone())).collect();
        let _ = writeln!(out, "# {}", dialect.name());
        for (id, table) in tables.iter().enumerate() {
            let _ = writeln!(out, "\n## {}", table.def.name);
            for (label, text) in table_statements(dialect, table, id) {
                let _ = writeln!(out, "{label}: {text}");
            }
        }
        let _ = writeln!(out, "\n## queries");
        for query in [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14] {
            let text = Statement::Query(query).text(dialect, &tables).expect("every TPC-H table is listed");
            let _ = writeln!(out, "{query:?}: {text}");
        }
        out.push('\n');
    }
    out
}

/// (label, text) of each statement on one table.
fn table_statements(d: &dyn Dialect, t: &SqlTable, table: usize) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = t.create(d).into_iter().map(|text| ("create".to_string(), text)).collect();
    let mut add = |label: String, statement: Statement| out.push((label, t.text(d, statement)));
    add("insert".into(), Statement::Insert { table, rows: 1 });
    match d.row_batch() {
        RowBatch::Arrays => add("insert rows".into(), Statement::Insert { table, rows: 0 }),
        RowBatch::Values { .. } => add("insert 2 rows".into(), Statement::Insert { table, rows: 2 }),
        RowBatch::Each => {}
    }
    add("get".into(), Statement::Get { table });
    add("delete".into(), Statement::Delete { table });
    // Short lists, and long ones where they travel differently (0 = one array).
    let lists: &[usize] = match (d.key_list(2), d.key_list(1000)) {
        (KeyList::Array, _) => &[0],
        (KeyList::Params, KeyList::Array) => &[2, 0],
        (KeyList::Params, KeyList::Params) => &[2],
    };
    for &keys in lists {
        let label = if keys == 0 { "keys".to_string() } else { format!("{keys} keys") };
        add(format!("get {label}"), Statement::GetMany { table, keys });
        add(format!("delete {label}"), Statement::DeleteMany { table, keys });
    }
    let columns = &t.def.columns;
    for (c, column) in columns.iter().enumerate().skip(1) {
        add(format!("update {}", column.name), Statement::Update { table, column: c });
    }
    let limit = (!d.limit_parameter()).then_some(10);
    add(if limit.is_some() { "scan 10".into() } else { "scan".into() }, Statement::Scan { table, limit });
    for &c in t.def.indexed.iter().filter(|&&c| c != 0) {
        let name = &columns[c].name;
        add(format!("range {name} rows"), Statement::Range { table, column: c, agg: RangeAgg::Rows });
        add(format!("range {name} count"), Statement::Range { table, column: c, agg: RangeAgg::Count });
        for (of, of_column) in columns.iter().enumerate().skip(1) {
            add(format!("range {name} max {}", of_column.name), Statement::Range { table, column: c, agg: RangeAgg::Max { column: of } });
        }
    }
    add("fetch all".into(), Statement::FetchAll { table });
    out.push(("count".into(), t.count()));
    out.push(("drop".into(), t.drop()));
    out
}
