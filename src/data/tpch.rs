//! TPC-H data for dbsweep: the eight tables, their rows streamed from the `tpchgen` crate.
//!
//! Owns the table definitions (standard TPC-H column names, mapped to [`ColumnType`]), the
//! study's change (`partsupp` and `lineitem` get an artificial single-column key `ps_pk` /
//! `l_pk` = 1-based position in generation order), exact row counts, the key of the i-th
//! row without generating rows, rows for keys outside the loaded set, and the exact value
//! domain of the indexed columns. Everything expensive is computed lazily and cached, so
//! building a [`TpchGen`] is free. Must not materialize a whole table, and must not know
//! about backends.
//!
//! Note: the first generated row of any table with text comments makes `tpchgen` build its
//! 300 MB text pool (about a second, once per process).

use crate::base::table::{Column, ColumnType, Date, Decimal, Row, TableDef, Value};
use std::fmt;
use std::ops::RangeInclusive;
use std::sync::{Arc, OnceLock};
use tpchgen::generators::{
    Customer, CustomerGenerator, LineItem, LineItemGenerator, Nation, NationGenerator, Order, OrderGenerator, Part, PartGenerator,
    PartSupp, PartSuppGenerator, Region, RegionGenerator, Supplier, SupplierGenerator,
};
use tpchgen::random::RandomBoundedLong;

/// Table positions in [`table_defs`] (and so in a TPC-H dataset's `tables`).
pub const REGION: usize = 0;
pub const NATION: usize = 1;
pub const SUPPLIER: usize = 2;
pub const CUSTOMER: usize = 3;
pub const PART: usize = 4;
pub const PARTSUPP: usize = 5;
pub const ORDERS: usize = 6;
pub const LINEITEM: usize = 7;

/// Table names in dataset order.
pub const TABLE_NAMES: [&str; 8] = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"];

/// Rows per table kept in memory for [`TpchGen::new_row`].
pub const SAMPLE_ROWS: u64 = 4096;

/// Orders per entry of the lineitem position index.
const LINE_BLOCK: u64 = 1024;

/// Suppliers per part in `partsupp` (TPC-H constant).
const SUPPLIERS_PER_PART: u64 = 4;

fn columns(spec: &[(&str, ColumnType)]) -> Vec<Column> {
    spec.iter().map(|(n, ty)| Column { name: (*n).into(), ty: *ty }).collect()
}

/// The eight TPC-H tables with the study's artificial keys, in dataset order.
pub fn table_defs() -> Vec<TableDef> {
    use ColumnType::{Date as D, Decimal as M, Int as I, Text as T};
    let def =
        |name: &str, cols: &[(&str, ColumnType)], indexed: Vec<usize>| TableDef { name: name.into(), columns: columns(cols), indexed };
    vec![
        def("region", &[("r_regionkey", I), ("r_name", T), ("r_comment", T)], vec![]),
        def("nation", &[("n_nationkey", I), ("n_name", T), ("n_regionkey", I), ("n_comment", T)], vec![]),
        def(
            "supplier",
            &[("s_suppkey", I), ("s_name", T), ("s_address", T), ("s_nationkey", I), ("s_phone", T), ("s_acctbal", M), ("s_comment", T)],
            vec![],
        ),
        def(
            "customer",
            &[
                ("c_custkey", I),
                ("c_name", T),
                ("c_address", T),
                ("c_nationkey", I),
                ("c_phone", T),
                ("c_acctbal", M),
                ("c_mktsegment", T),
                ("c_comment", T),
            ],
            vec![],
        ),
        def(
            "part",
            &[
                ("p_partkey", I),
                ("p_name", T),
                ("p_mfgr", T),
                ("p_brand", T),
                ("p_type", T),
                ("p_size", I),
                ("p_container", T),
                ("p_retailprice", M),
                ("p_comment", T),
            ],
            vec![],
        ),
        def(
            "partsupp",
            &[("ps_pk", I), ("ps_partkey", I), ("ps_suppkey", I), ("ps_availqty", I), ("ps_supplycost", M), ("ps_comment", T)],
            vec![1],
        ),
        def(
            "orders",
            &[
                ("o_orderkey", I),
                ("o_custkey", I),
                ("o_orderstatus", T),
                ("o_totalprice", M),
                ("o_orderdate", D),
                ("o_orderpriority", T),
                ("o_clerk", T),
                ("o_shippriority", I),
                ("o_comment", T),
            ],
            vec![1],
        ),
        def(
            "lineitem",
            &[
                ("l_pk", I),
                ("l_orderkey", I),
                ("l_partkey", I),
                ("l_suppkey", I),
                ("l_linenumber", I),
                ("l_quantity", M),
                ("l_extendedprice", M),
                ("l_discount", M),
                ("l_tax", M),
                ("l_returnflag", T),
                ("l_linestatus", T),
                ("l_shipdate", D),
                ("l_commitdate", D),
                ("l_receiptdate", D),
                ("l_shipinstruct", T),
                ("l_shipmode", T),
                ("l_comment", T),
            ],
            vec![1],
        ),
    ]
}

/// Checks a scale factor: positive, finite, and large enough for one supplier.
pub fn check_scale(scale: f64) -> Result<(), String> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(format!("data.scale must be a positive number, not {scale}"));
    }
    if SupplierGenerator::calculate_row_count(scale, 1, 1) < 1 {
        return Err(format!("data.scale {scale} is too small: TPC-H needs at least one supplier (scale >= 0.0001)"));
    }
    if OrderGenerator::calculate_row_count(scale, 1, 1) > i32::MAX as i64 {
        return Err(format!("data.scale {scale} is too large (at most about 1400)"));
    }
    Ok(())
}

fn text(s: impl fmt::Display) -> Value {
    Value::Text(s.to_string().into())
}

fn str_value(s: &str) -> Value {
    Value::Text(s.into())
}

fn money(d: tpchgen::decimal::TPCHDecimal) -> Value {
    Value::Decimal(Decimal(d.0))
}

fn date(d: tpchgen::dates::TPCHDate) -> Value {
    Value::Date(Date(d.to_unix_epoch()))
}

pub fn region_row(r: &Region<'_>) -> Row {
    vec![Value::Int(r.r_regionkey), str_value(r.r_name), str_value(r.r_comment)]
}

pub fn nation_row(n: &Nation<'_>) -> Row {
    vec![Value::Int(n.n_nationkey), str_value(n.n_name), Value::Int(n.n_regionkey), str_value(n.n_comment)]
}

pub fn supplier_row(s: &Supplier) -> Row {
    vec![
        Value::Int(s.s_suppkey),
        text(s.s_name),
        text(&s.s_address),
        Value::Int(s.s_nationkey),
        text(&s.s_phone),
        money(s.s_acctbal),
        str_value(&s.s_comment),
    ]
}

pub fn customer_row(c: &Customer<'_>) -> Row {
    vec![
        Value::Int(c.c_custkey),
        text(c.c_name),
        text(&c.c_address),
        Value::Int(c.c_nationkey),
        text(&c.c_phone),
        money(c.c_acctbal),
        str_value(c.c_mktsegment),
        str_value(c.c_comment),
    ]
}

pub fn part_row(p: &Part<'_>) -> Row {
    vec![
        Value::Int(p.p_partkey),
        text(&p.p_name),
        text(p.p_mfgr),
        text(p.p_brand),
        str_value(p.p_type),
        Value::Int(p.p_size.into()),
        str_value(p.p_container),
        money(p.p_retailprice),
        str_value(p.p_comment),
    ]
}

/// A `partsupp` row; `pk` is its 1-based position in generation order.
pub fn partsupp_row(pk: i64, ps: &PartSupp<'_>) -> Row {
    vec![
        Value::Int(pk),
        Value::Int(ps.ps_partkey),
        Value::Int(ps.ps_suppkey),
        Value::Int(ps.ps_availqty.into()),
        money(ps.ps_supplycost),
        str_value(ps.ps_comment),
    ]
}

pub fn orders_row(o: &Order<'_>) -> Row {
    vec![
        Value::Int(o.o_orderkey),
        Value::Int(o.o_custkey),
        str_value(o.o_orderstatus.as_str()),
        money(o.o_totalprice),
        date(o.o_orderdate),
        str_value(o.o_orderpriority),
        text(o.o_clerk),
        Value::Int(o.o_shippriority.into()),
        str_value(o.o_comment),
    ]
}

/// A `lineitem` row; `pk` is its 1-based position in generation order.
pub fn lineitem_row(pk: i64, l: &LineItem<'_>) -> Row {
    vec![
        Value::Int(pk),
        Value::Int(l.l_orderkey),
        Value::Int(l.l_partkey),
        Value::Int(l.l_suppkey),
        Value::Int(l.l_linenumber.into()),
        Value::Decimal(Decimal(l.l_quantity * 100)),
        money(l.l_extendedprice),
        money(l.l_discount),
        money(l.l_tax),
        str_value(l.l_returnflag),
        str_value(l.l_linestatus),
        date(l.l_shipdate),
        date(l.l_commitdate),
        date(l.l_receiptdate),
        str_value(l.l_shipinstruct),
        str_value(l.l_shipmode),
        str_value(l.l_comment),
    ]
}

/// Streams all rows of one table (`table` < 8), in generation order.
pub fn stream(scale: f64, table: usize) -> Box<dyn Iterator<Item = Row> + Send> {
    match table {
        REGION => Box::new(RegionGenerator::new(scale, 1, 1).iter().map(|r| region_row(&r))),
        NATION => Box::new(NationGenerator::new(scale, 1, 1).iter().map(|n| nation_row(&n))),
        SUPPLIER => Box::new(SupplierGenerator::new(scale, 1, 1).iter().map(|s| supplier_row(&s))),
        CUSTOMER => Box::new(CustomerGenerator::new(scale, 1, 1).iter().map(|c| customer_row(&c))),
        PART => Box::new(PartGenerator::new(scale, 1, 1).iter().map(|p| part_row(&p))),
        PARTSUPP => Box::new(PartSuppGenerator::new(scale, 1, 1).iter().zip(1..).map(|(ps, pk)| partsupp_row(pk, &ps))),
        ORDERS => Box::new(OrderGenerator::new(scale, 1, 1).iter().map(|o| orders_row(&o))),
        LINEITEM => Box::new(LineItemGenerator::new(scale, 1, 1).iter().zip(1..).map(|(l, pk)| lineitem_row(pk, &l))),
        _ => panic!("TPC-H has 8 tables, not table #{table}"),
    }
}

/// Where the lineitems of each block of [`LINE_BLOCK`] orders start.
#[derive(Debug)]
struct LineIndex {
    /// `starts[b]` = number of lineitems generated before order index `b * LINE_BLOCK`.
    starts: Vec<u64>,
    total: u64,
}

/// TPC-H rows of one scale factor; cheap to build and to clone (state is shared, lazy).
#[derive(Clone)]
pub struct TpchGen {
    inner: Arc<Inner>,
}

struct Inner {
    scale: f64,
    lines: OnceLock<LineIndex>,
    samples: [OnceLock<Vec<Row>>; 8],
    custkeys: OnceLock<(i64, i64)>,
}

impl fmt::Debug for TpchGen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TpchGen").field("scale", &self.inner.scale).finish()
    }
}

impl TpchGen {
    pub fn new(scale: f64) -> Self {
        TpchGen { inner: Arc::new(Inner { scale, lines: OnceLock::new(), samples: Default::default(), custkeys: OnceLock::new() }) }
    }

    pub fn scale(&self) -> f64 {
        self.inner.scale
    }

    fn orders(&self) -> u64 {
        OrderGenerator::calculate_row_count(self.inner.scale, 1, 1) as u64
    }

    fn parts(&self) -> u64 {
        PartGenerator::calculate_row_count(self.inner.scale, 1, 1) as u64
    }

    /// Exact number of rows of `table` at this scale factor.
    pub fn rows(&self, table: usize) -> u64 {
        let sf = self.inner.scale;
        match table {
            REGION => 5,
            NATION => 25,
            SUPPLIER => SupplierGenerator::calculate_row_count(sf, 1, 1) as u64,
            CUSTOMER => CustomerGenerator::calculate_row_count(sf, 1, 1) as u64,
            PART => self.parts(),
            PARTSUPP => SUPPLIERS_PER_PART * self.parts(),
            ORDERS => self.orders(),
            LINEITEM => self.line_index().total,
            _ => panic!("TPC-H has 8 tables, not table #{table}"),
        }
    }

    /// The primary key of the row at 0-based position `index` in generation order:
    /// `index` for region and nation, `index + 1` for the others except orders.
    pub fn key_at(&self, table: usize, index: u64) -> i64 {
        match table {
            // Orders keys are sparse: tpchgen keeps 8 of every 32 keys.
            ORDERS => OrderGenerator::make_order_key(index as i64 + 1),
            // TPC-H numbers regions and nations from 0.
            REGION | NATION => index as i64,
            _ => index as i64 + 1,
        }
    }

    /// Line counts of all orders, replayed from tpchgen's line-count random stream (one
    /// value per order, the stream `LineItemGenerator` and `OrderGenerator` both use).
    fn line_index(&self) -> &LineIndex {
        self.inner.lines.get_or_init(|| {
            let orders = self.orders();
            let mut counts = OrderGenerator::create_line_count_random();
            let mut starts = Vec::with_capacity((orders / LINE_BLOCK + 1) as usize);
            let mut total = 0u64;
            for o in 0..orders {
                if o % LINE_BLOCK == 0 {
                    starts.push(total);
                }
                total += counts.next_value() as u64;
                counts.row_finished();
            }
            LineIndex { starts, total }
        })
    }

    /// The (order index, line number - 1) of the lineitem at 0-based `position`.
    fn line_of(&self, position: u64) -> (u64, u64) {
        let index = self.line_index();
        let block = index.starts.partition_point(|&s| s <= position) - 1;
        let mut order = block as u64 * LINE_BLOCK;
        let mut before = index.starts[block];
        let mut counts = OrderGenerator::create_line_count_random();
        counts.advance_rows(order as i64);
        loop {
            let n = counts.next_value() as u64;
            counts.row_finished();
            if position < before + n {
                return (order, position - before);
            }
            before += n;
            order += 1;
        }
    }

    /// The generated row at 0-based `position` of `table`, computed by seeking tpchgen's
    /// generators (no rows before it are generated).
    pub fn row_at(&self, table: usize, position: u64) -> Row {
        let sf = self.inner.scale;
        let n = self.rows(table);
        assert!(position < n, "{} has {n} rows, no row at position {position}", TABLE_NAMES[table]);
        // tpchgen splits a table into `parts` equal parts; with one row per part, part p+1
        // is exactly row p.
        let one = |count: u64, p: u64| ((p + 1) as i32, count as i32);
        match table {
            REGION | NATION => stream(sf, table).nth(position as usize).expect("row exists"),
            SUPPLIER => {
                let (p, c) = one(n, position);
                supplier_row(&SupplierGenerator::new(sf, p, c).iter().next().expect("row exists"))
            }
            CUSTOMER => {
                let (p, c) = one(n, position);
                customer_row(&CustomerGenerator::new(sf, p, c).iter().next().expect("row exists"))
            }
            PART => {
                let (p, c) = one(n, position);
                part_row(&PartGenerator::new(sf, p, c).iter().next().expect("row exists"))
            }
            PARTSUPP => {
                let (p, c) = one(self.parts(), position / SUPPLIERS_PER_PART);
                let ps = PartSuppGenerator::new(sf, p, c).iter().nth((position % SUPPLIERS_PER_PART) as usize).expect("row exists");
                partsupp_row(position as i64 + 1, &ps)
            }
            ORDERS => {
                let (p, c) = one(n, position);
                orders_row(&OrderGenerator::new(sf, p, c).iter().next().expect("row exists"))
            }
            LINEITEM => {
                let (order, line) = self.line_of(position);
                let (p, c) = one(self.orders(), order);
                let l = LineItemGenerator::new(sf, p, c).iter().nth(line as usize).expect("row exists");
                lineitem_row(position as i64 + 1, &l)
            }
            _ => panic!("TPC-H has 8 tables, not table #{table}"),
        }
    }

    /// The first [`SAMPLE_ROWS`] rows of `table`, generated on first use.
    fn sample(&self, table: usize) -> &[Row] {
        self.inner.samples[table].get_or_init(|| stream(self.inner.scale, table).take(SAMPLE_ROWS as usize).collect())
    }

    /// A plausible row for a key outside the loaded set: the generated row at position
    /// `key mod min(rows, SAMPLE_ROWS)` (kept in memory, so this is a clone: ops are
    /// generated on the benchmark's hot path) with its primary key replaced by `key`.
    pub fn new_row(&self, table: usize, key: i64) -> Row {
        let sample = self.sample(table);
        let mut row = sample[key.rem_euclid(sample.len() as i64) as usize].clone();
        row[0] = Value::Int(key);
        row
    }

    /// Exact `min..=max` of a column over the generated rows, as integers (hundredths for
    /// Decimal, days for Date). The indexed columns (`l_orderkey`, `o_custkey`,
    /// `ps_partkey`) and every key column are computed without generating rows; any
    /// other column streams its table once.
    pub fn column_domain(&self, table: usize, column: usize) -> RangeInclusive<i64> {
        let n = self.rows(table);
        match (table, column) {
            (_, 0) => self.key_at(table, 0)..=self.key_at(table, n - 1),
            // Every order has at least one lineitem.
            (LINEITEM, 1) => self.key_at(ORDERS, 0)..=self.key_at(ORDERS, self.orders() - 1),
            // Every part has four partsupp rows.
            (PARTSUPP, 1) => 1..=self.parts() as i64,
            (ORDERS, 1) => {
                let (lo, hi) = *self.inner.custkeys.get_or_init(|| self.custkey_bounds());
                lo..=hi
            }
            _ => {
                let mut lo = i64::MAX;
                let mut hi = i64::MIN;
                for row in stream(self.inner.scale, table) {
                    let v = match &row[column] {
                        Value::Int(v) => *v,
                        Value::Decimal(d) => d.0,
                        Value::Date(d) => d.0.into(),
                        other => panic!("column #{column} of {} is not numeric: {other:?}", TABLE_NAMES[table]),
                    };
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
                lo..=hi
            }
        }
    }

    /// Min and max `o_custkey`, replayed from tpchgen's customer-key random stream with
    /// its rule that skips every third customer (TPC-H's "customer mortality").
    fn custkey_bounds(&self) -> (i64, i64) {
        let sf = self.inner.scale;
        let max_customer = CustomerGenerator::calculate_row_count(sf, 1, 1);
        let mut keys = RandomBoundedLong::new(851_767_375, sf >= 30000.0, 1, max_customer);
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for _ in 0..self.orders() {
            let mut key = keys.next_value();
            keys.row_finished();
            let mut delta = 1;
            while key % 3 == 0 {
                key = (key + delta).min(max_customer);
                delta = -delta;
            }
            lo = lo.min(key);
            hi = hi.max(key);
        }
        (lo, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artificial_keys_come_first_and_indexed_columns_are_the_studys() {
        let defs = table_defs();
        let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, TABLE_NAMES);
        assert_eq!(defs[PARTSUPP].columns[0].name, "ps_pk");
        assert_eq!(defs[LINEITEM].columns[0].name, "l_pk");
        assert_eq!(defs[LINEITEM].columns[defs[LINEITEM].indexed[0]].name, "l_orderkey");
        assert_eq!(defs[ORDERS].columns[defs[ORDERS].indexed[0]].name, "o_custkey");
        assert_eq!(defs[PARTSUPP].columns[defs[PARTSUPP].indexed[0]].name, "ps_partkey");
        assert!(defs.iter().all(|d| d.columns[0].ty == ColumnType::Int));
    }

    #[test]
    fn scale_checks() {
        assert!(check_scale(0.01).is_ok());
        assert!(check_scale(0.0).is_err());
        assert!(check_scale(f64::NAN).is_err());
        assert!(check_scale(0.00001).is_err());
    }

    #[test]
    fn order_keys_are_sparse_like_tpchgen() {
        let g = TpchGen::new(0.01);
        let keys: Vec<i64> = (0..10).map(|i| g.key_at(ORDERS, i)).collect();
        assert_eq!(keys, [1, 2, 3, 4, 5, 6, 7, 32, 33, 34]);
    }
}
