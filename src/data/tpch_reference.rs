//! The reference answers of TPC-H Q1, Q3, Q6 and Q14, computed exactly in Rust from the
//! generated rows, and TPC-H's published answers at scale factor 1.
//!
//! Owns the oracle the study's answer verification uses at any scale factor: sums are
//! exact integers (hundredths and their products, in i128), turned into f64 only at the
//! end; averages are f64. Rows come out in the query's order with the same columns and
//! types as [`super::tpch_queries::answer_columns`]. Must not know about backends.

use super::tpch_queries::{self, Q3_LIMIT};
use crate::base::op::{Answer, QueryId};
use crate::base::table::{Date, Row, Value};
use std::collections::{BTreeMap, HashMap};
use tpchgen::generators::{CustomerGenerator, LineItemGenerator, OrderGenerator, PartGenerator};

/// TPC-H's answers at scale factor 1 (the TPC-H Tools answer set, `answers/q1.out`,
/// `q3.out`, `q6.out`, `q14.out` of the official distribution, as also shipped by the
/// `tpchgen` crate 4.0.0 in `src/q_and_a/answers_sf1.rs`; the spec's Q6 answer is
/// 123141078.2283, its Q14 answer 16.38).
/// Money printed with two decimals, so compare with [`Answer::agrees_with`].
pub mod official_sf1 {
    /// One Q1 row: returnflag, linestatus, sum_qty, sum_base_price, sum_disc_price,
    /// sum_charge, avg_qty, avg_price, avg_disc, count_order.
    pub type Q1Row = (&'static str, &'static str, f64, f64, f64, f64, f64, f64, f64, i64);
    pub const Q1: [Q1Row; 4] = [
        ("A", "F", 37734107.00, 56586554400.73, 53758257134.87, 55909065222.83, 25.52, 38273.13, 0.05, 1478493),
        ("N", "F", 991417.00, 1487504710.38, 1413082168.05, 1469649223.19, 25.52, 38284.47, 0.05, 38854),
        ("N", "O", 74476040.00, 111701729697.74, 106118230307.61, 110367043872.50, 25.50, 38249.12, 0.05, 2920374),
        ("R", "F", 37719753.00, 56568041380.90, 53741292684.60, 55889619119.83, 25.51, 38250.85, 0.05, 1478870),
    ];
    /// l_orderkey, revenue, o_orderdate, o_shippriority.
    pub const Q3: [(i64, f64, &str, i64); 10] = [
        (2456423, 406181.01, "1995-03-05", 0),
        (3459808, 405838.70, "1995-03-04", 0),
        (492164, 390324.06, "1995-02-19", 0),
        (1188320, 384537.94, "1995-03-09", 0),
        (2435712, 378673.06, "1995-02-26", 0),
        (4878020, 378376.80, "1995-03-12", 0),
        (5521732, 375153.92, "1995-03-13", 0),
        (2628192, 373133.31, "1995-02-22", 0),
        (993600, 371407.46, "1995-03-05", 0),
        (2300070, 367371.15, "1995-03-13", 0),
    ];
    /// revenue.
    pub const Q6: f64 = 123141078.23;
    /// promo_revenue.
    pub const Q14: f64 = 16.38;
}

/// The official SF 1 answer of `query` as an [`Answer`] in our column types.
pub fn official_sf1_answer(query: QueryId) -> Answer {
    use official_sf1 as o;
    Answer::Table(match query {
        QueryId::TpchQ1 => o::Q1
            .iter()
            .map(|r| {
                vec![
                    Value::Text(r.0.into()),
                    Value::Text(r.1.into()),
                    Value::Float(r.2),
                    Value::Float(r.3),
                    Value::Float(r.4),
                    Value::Float(r.5),
                    Value::Float(r.6),
                    Value::Float(r.7),
                    Value::Float(r.8),
                    Value::Int(r.9),
                ]
            })
            .collect(),
        QueryId::TpchQ3 => o::Q3
            .iter()
            .map(|r| vec![Value::Int(r.0), Value::Float(r.1), Value::Date(Date::from_iso(r.2).unwrap()), Value::Int(r.3)])
            .collect(),
        QueryId::TpchQ6 => vec![vec![Value::Float(o::Q6)]],
        QueryId::TpchQ14 => vec![vec![Value::Float(o::Q14)]],
    })
}

/// Exact aggregates of one Q1 group, in integer units.
#[derive(Debug, Default, Clone, Copy)]
struct Q1Group {
    /// Whole units (TPC-H quantities are integers).
    qty: i128,
    /// Hundredths.
    base: i128,
    /// 10^-4.
    disc_price: i128,
    /// 10^-6.
    charge: i128,
    /// Hundredths.
    discount: i128,
    count: i64,
}

/// Q1 and Q6 answers from one pass over `lineitem`.
pub fn q1_q6(scale: f64) -> (Answer, Answer) {
    let q1_max = tpch_queries::days(tpch_queries::Q1_SHIPDATE_MAX);
    let (q6_lo, q6_hi) = (tpch_queries::days(tpch_queries::Q6_DATE), tpch_queries::days(tpch_queries::Q6_DATE_END));
    let disc = (tpch_queries::Q6_DISCOUNT - 1)..=(tpch_queries::Q6_DISCOUNT + 1);
    let mut groups: BTreeMap<(&'static str, &'static str), Q1Group> = BTreeMap::new();
    let mut q6: i128 = 0;
    for l in LineItemGenerator::new(scale, 1, 1).iter() {
        let ship = l.l_shipdate.to_unix_epoch();
        let (ep, d, t) = (l.l_extendedprice.0 as i128, l.l_discount.0 as i128, l.l_tax.0 as i128);
        if ship <= q1_max {
            let g = groups.entry((l.l_returnflag, l.l_linestatus)).or_default();
            g.qty += l.l_quantity as i128;
            g.base += ep;
            g.disc_price += ep * (100 - d);
            g.charge += ep * (100 - d) * (100 + t);
            g.discount += d;
            g.count += 1;
        }
        if ship >= q6_lo && ship < q6_hi && disc.contains(&l.l_discount.0) && l.l_quantity < tpch_queries::Q6_QUANTITY {
            q6 += ep * d;
        }
    }
    let rows = groups
        .into_iter()
        .map(|((flag, status), g)| {
            let n = g.count as f64;
            vec![
                Value::Text(flag.into()),
                Value::Text(status.into()),
                Value::Float(g.qty as f64),
                Value::Float(g.base as f64 / 100.0),
                Value::Float(g.disc_price as f64 / 1e4),
                Value::Float(g.charge as f64 / 1e6),
                Value::Float(g.qty as f64 / n),
                Value::Float(g.base as f64 / 100.0 / n),
                Value::Float(g.discount as f64 / 100.0 / n),
                Value::Int(g.count),
            ]
        })
        .collect();
    (Answer::Table(rows), Answer::Table(vec![vec![Value::Float(q6 as f64 / 1e4)]]))
}

/// Q3: customers of the segment, their orders before the date, lineitems shipped after it.
pub fn q3(scale: f64) -> Answer {
    let day = tpch_queries::days(tpch_queries::Q3_DATE);
    let customers = CustomerGenerator::calculate_row_count(scale, 1, 1) as usize;
    let mut in_segment = vec![false; customers + 1];
    for c in CustomerGenerator::new(scale, 1, 1).iter() {
        if c.c_mktsegment == tpch_queries::Q3_SEGMENT {
            in_segment[c.c_custkey as usize] = true;
        }
    }
    let mut orders: HashMap<i64, (i32, i32)> = HashMap::new();
    for o in OrderGenerator::new(scale, 1, 1).iter() {
        let date = o.o_orderdate.to_unix_epoch();
        if date < day && in_segment[o.o_custkey as usize] {
            orders.insert(o.o_orderkey, (date, o.o_shippriority));
        }
    }
    // Revenue in 10^-4 per order.
    let mut revenue: HashMap<i64, i128> = HashMap::new();
    for l in LineItemGenerator::new(scale, 1, 1).iter() {
        if l.l_shipdate.to_unix_epoch() > day && orders.contains_key(&l.l_orderkey) {
            *revenue.entry(l.l_orderkey).or_default() += l.l_extendedprice.0 as i128 * (100 - l.l_discount.0 as i128);
        }
    }
    let mut rows: Vec<(i128, i32, i64, i32)> = revenue
        .into_iter()
        .map(|(key, rev)| {
            let (date, prio) = orders[&key];
            (rev, date, key, prio)
        })
        .collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let rows: Vec<Row> = rows
        .into_iter()
        .take(Q3_LIMIT)
        .map(|(rev, date, key, prio)| {
            vec![Value::Int(key), Value::Float(rev as f64 / 1e4), Value::Date(Date(date)), Value::Int(prio.into())]
        })
        .collect();
    Answer::Table(rows)
}

/// Q14: the share of one month's discounted revenue that comes from promoted part types.
/// One row; NULL when no lineitem shipped in the month (SQL's sum over no rows).
pub fn q14(scale: f64) -> Answer {
    let (lo, hi) = (tpch_queries::days(tpch_queries::Q14_DATE), tpch_queries::days(tpch_queries::Q14_DATE_END));
    let parts = PartGenerator::calculate_row_count(scale, 1, 1) as usize;
    let mut promo = vec![false; parts + 1];
    for p in PartGenerator::new(scale, 1, 1).iter() {
        promo[p.p_partkey as usize] = p.p_type.starts_with(tpch_queries::Q14_TYPE_PREFIX);
    }
    // Discounted revenue in 10^-4: of promoted parts, and of all parts.
    let (mut promoted, mut total) = (0i128, 0i128);
    for l in LineItemGenerator::new(scale, 1, 1).iter() {
        let ship = l.l_shipdate.to_unix_epoch();
        if ship >= lo && ship < hi {
            let revenue = l.l_extendedprice.0 as i128 * (100 - l.l_discount.0 as i128);
            total += revenue;
            if promo[l.l_partkey as usize] {
                promoted += revenue;
            }
        }
    }
    let value = if total == 0 { Value::Null } else { Value::Float(100.0 * promoted as f64 / total as f64) };
    Answer::Table(vec![vec![value]])
}

/// The reference answer of one query at `scale`.
pub fn answer(query: QueryId, scale: f64) -> Answer {
    match query {
        QueryId::TpchQ1 => q1_q6(scale).0,
        QueryId::TpchQ6 => q1_q6(scale).1,
        QueryId::TpchQ3 => q3(scale),
        QueryId::TpchQ14 => q14(scale),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn official_answers_have_the_query_shapes() {
        for q in [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14] {
            let Answer::Table(rows) = official_sf1_answer(q) else { panic!() };
            let types = tpch_queries::answer_columns(q);
            assert!(rows.iter().all(|r| r.len() == types.len()), "{q:?}");
        }
    }
}
