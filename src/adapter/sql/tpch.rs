//! The SQL text of the analytic queries (TPC-H Q1, Q3, Q6, Q14) for every SQL dialect dbsweep
//! drives.
//!
//! Owns the query texts and how each storage layout reaches a column (plain columns;
//! hstore/jsonb attributes cast back to their types; SQLite's integer hundredths and
//! days). Must not execute anything: adapters run these texts and decode rows into the
//! types of [`crate::data::tpch_queries::answer_columns`] (sums and averages: the SQL
//! casts to double, SQLite divides by a float). Q3's ORDER BY adds
//! `l_orderkey` after TPC-H's `revenue DESC, o_orderdate` so ties have one answer.
//! Q14 casts its two sums to double before dividing (engines divide decimals with
//! different scales; the sums themselves stay exact), and the quotient once more so
//! every engine returns a double.
//! No text ends in a semicolon (HyPer takes one statement per query string).

use super::dialect::{Dialect, Storage};
use crate::base::op::QueryId;
use crate::base::table::ColumnType;
use crate::data::tpch_queries::{
    Q1_SHIPDATE_MAX, Q3_DATE, Q3_LIMIT, Q3_SEGMENT, Q6_DATE, Q6_DATE_END, Q6_DISCOUNT, Q6_QUANTITY, Q14_DATE, Q14_DATE_END,
    Q14_TYPE_PREFIX, days,
};

/// A date constant as the dialect compares it.
fn date_lit(dialect: &dyn Dialect, iso: &str) -> String {
    match dialect.storage() {
        Storage::Integers => days(iso).to_string(),
        Storage::Typed | Storage::Document { .. } => format!("DATE '{iso}'"),
    }
}

/// The FROM item for a table: its name, or for hstore/jsonb a derived table that exposes
/// the needed attributes as typed columns under their TPC-H names. `key` is the table's
/// column 0 (stored as `pk` in the document layouts).
fn from_item(dialect: &dyn Dialect, table: &mut dyn FnMut(&str) -> String, name: &str, key: &str, cols: &[(&str, ColumnType)]) -> String {
    let Storage::Document { arrow } = dialect.storage() else {
        return table(name);
    };
    let items: Vec<String> = cols
        .iter()
        .map(|(c, ty)| {
            if *c == key {
                return format!("pk AS {c}");
            }
            let cast = match ty {
                ColumnType::Int => "::int8",
                ColumnType::Float => "::float8",
                ColumnType::Decimal => "::numeric",
                ColumnType::Date => "::date",
                ColumnType::Text => "",
            };
            format!("(v {arrow} '{c}'){cast} AS {c}")
        })
        .collect();
    format!("(SELECT {} FROM {}) AS {name}", items.join(", "), table(name))
}

/// The SQL of `query` for `dialect`; `table("lineitem")` gives the adapter's qualified
/// table name. See the module docs for result types.
pub fn sql(query: QueryId, dialect: &dyn Dialect, table: &mut dyn FnMut(&str) -> String) -> String {
    match query {
        QueryId::TpchQ1 => q1(dialect, table),
        QueryId::TpchQ3 => q3(dialect, table),
        QueryId::TpchQ6 => q6(dialect, table),
        QueryId::TpchQ14 => q14(dialect, table),
    }
}

/// TPC-H Q1. Pricing summary: lineitem aggregates by return flag and line status.
fn q1(dialect: &dyn Dialect, table: &mut dyn FnMut(&str) -> String) -> String {
    use ColumnType::{Date as D, Decimal as M, Text as T};
    let dbl = dialect.double();
    let integers = dialect.storage() == Storage::Integers;
    let mut from = |name: &str, key: &str, cols: &[(&str, ColumnType)]| from_item(dialect, table, name, key, cols);
    let lineitem = from(
        "lineitem",
        "l_pk",
        &[
            ("l_returnflag", T),
            ("l_linestatus", T),
            ("l_quantity", M),
            ("l_extendedprice", M),
            ("l_discount", M),
            ("l_tax", M),
            ("l_shipdate", D),
        ],
    );
    let aggregates = if integers {
        "sum(l_quantity) / 100.0 AS sum_qty, \
         sum(l_extendedprice) / 100.0 AS sum_base_price, \
         sum(l_extendedprice * (100 - l_discount)) / 10000.0 AS sum_disc_price, \
         sum(l_extendedprice * (100 - l_discount) * (100 + l_tax)) / 1000000.0 AS sum_charge, \
         avg(l_quantity) / 100.0 AS avg_qty, \
         avg(l_extendedprice) / 100.0 AS avg_price, \
         avg(l_discount) / 100.0 AS avg_disc"
            .to_string()
    } else {
        format!(
            "CAST(sum(l_quantity) AS {dbl}) AS sum_qty, \
             CAST(sum(l_extendedprice) AS {dbl}) AS sum_base_price, \
             CAST(sum(l_extendedprice * (1 - l_discount)) AS {dbl}) AS sum_disc_price, \
             CAST(sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS {dbl}) AS sum_charge, \
             CAST(avg(l_quantity) AS {dbl}) AS avg_qty, \
             CAST(avg(l_extendedprice) AS {dbl}) AS avg_price, \
             CAST(avg(l_discount) AS {dbl}) AS avg_disc"
        )
    };
    format!(
        "SELECT l_returnflag, l_linestatus, {aggregates}, count(*) AS count_order \
         FROM {lineitem} \
         WHERE l_shipdate <= {} \
         GROUP BY l_returnflag, l_linestatus \
         ORDER BY l_returnflag, l_linestatus",
        date_lit(dialect, Q1_SHIPDATE_MAX)
    )
}

/// TPC-H Q3. Shipping priority: the top unshipped orders of one market segment by revenue.
fn q3(dialect: &dyn Dialect, table: &mut dyn FnMut(&str) -> String) -> String {
    use ColumnType::{Date as D, Decimal as M, Int as I, Text as T};
    let dbl = dialect.double();
    let integers = dialect.storage() == Storage::Integers;
    let mut from = |name: &str, key: &str, cols: &[(&str, ColumnType)]| from_item(dialect, table, name, key, cols);
    let customer = from("customer", "c_custkey", &[("c_custkey", I), ("c_mktsegment", T)]);
    let orders = from("orders", "o_orderkey", &[("o_orderkey", I), ("o_custkey", I), ("o_orderdate", D), ("o_shippriority", I)]);
    let lineitem = from("lineitem", "l_pk", &[("l_orderkey", I), ("l_extendedprice", M), ("l_discount", M), ("l_shipdate", D)]);
    let revenue = if integers {
        "sum(l_extendedprice * (100 - l_discount)) / 10000.0".to_string()
    } else {
        format!("CAST(sum(l_extendedprice * (1 - l_discount)) AS {dbl})")
    };
    let day = date_lit(dialect, Q3_DATE);
    format!(
        "SELECT l_orderkey, {revenue} AS revenue, o_orderdate, o_shippriority \
         FROM {customer}, {orders}, {lineitem} \
         WHERE c_mktsegment = '{Q3_SEGMENT}' AND c_custkey = o_custkey AND l_orderkey = o_orderkey \
         AND o_orderdate < {day} AND l_shipdate > {day} \
         GROUP BY l_orderkey, o_orderdate, o_shippriority \
         ORDER BY revenue DESC, o_orderdate, l_orderkey \
         LIMIT {Q3_LIMIT}"
    )
}

/// TPC-H Q6. Forecasting revenue change: one year of discounted lineitems.
fn q6(dialect: &dyn Dialect, table: &mut dyn FnMut(&str) -> String) -> String {
    use ColumnType::{Date as D, Decimal as M};
    let dbl = dialect.double();
    let integers = dialect.storage() == Storage::Integers;
    let mut from = |name: &str, key: &str, cols: &[(&str, ColumnType)]| from_item(dialect, table, name, key, cols);
    let lineitem = from("lineitem", "l_pk", &[("l_quantity", M), ("l_extendedprice", M), ("l_discount", M), ("l_shipdate", D)]);
    let (lo, hi) = (Q6_DISCOUNT - 1, Q6_DISCOUNT + 1);
    let (revenue, discount, quantity) = if integers {
        ("sum(l_extendedprice * l_discount) / 10000.0".to_string(), format!("{lo} AND {hi}"), (Q6_QUANTITY * 100).to_string())
    } else {
        (format!("CAST(sum(l_extendedprice * l_discount) AS {dbl})"), format!("0.{lo:02} AND 0.{hi:02}"), Q6_QUANTITY.to_string())
    };
    format!(
        "SELECT {revenue} AS revenue FROM {lineitem} \
         WHERE l_shipdate >= {} AND l_shipdate < {} \
         AND l_discount BETWEEN {discount} AND l_quantity < {quantity}",
        date_lit(dialect, Q6_DATE),
        date_lit(dialect, Q6_DATE_END)
    )
}

/// TPC-H Q14. Promotion effect: the share of promotional parts in one month's revenue.
fn q14(dialect: &dyn Dialect, table: &mut dyn FnMut(&str) -> String) -> String {
    use ColumnType::{Date as D, Decimal as M, Int as I, Text as T};
    let dbl = dialect.double();
    let integers = dialect.storage() == Storage::Integers;
    let mut from = |name: &str, key: &str, cols: &[(&str, ColumnType)]| from_item(dialect, table, name, key, cols);
    let lineitem = from("lineitem", "l_pk", &[("l_partkey", I), ("l_extendedprice", M), ("l_discount", M), ("l_shipdate", D)]);
    let part = from("part", "p_partkey", &[("p_partkey", I), ("p_type", T)]);
    let promo = format!("p_type LIKE '{Q14_TYPE_PREFIX}%'");
    let promo_revenue = if integers {
        format!(
            "100.0 * sum(CASE WHEN {promo} THEN l_extendedprice * (100 - l_discount) ELSE 0 END) \
             / sum(l_extendedprice * (100 - l_discount))"
        )
    } else {
        format!(
            "CAST(100.00 * CAST(sum(CASE WHEN {promo} THEN l_extendedprice * (1 - l_discount) ELSE 0 END) AS {dbl}) \
             / CAST(sum(l_extendedprice * (1 - l_discount)) AS {dbl}) AS {dbl})"
        )
    };
    format!(
        "SELECT {promo_revenue} AS promo_revenue \
         FROM {lineitem}, {part} \
         WHERE l_partkey = p_partkey AND l_shipdate >= {} AND l_shipdate < {}",
        date_lit(dialect, Q14_DATE),
        date_lit(dialect, Q14_DATE_END)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::sql::dialects::{self, DUCKDB, HYPER, MYSQL, PG_HSTORE, PG_JSONB, PG_ROW, SQLITE};
    use crate::data::tpch_queries::answer_columns;

    fn plain(query: QueryId, dialect: &dyn Dialect) -> String {
        sql(query, dialect, &mut |name: &str| name.to_string())
    }

    #[test]
    fn every_dialect_has_every_query_without_semicolons() {
        for d in dialects::all() {
            for q in [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14] {
                let text = plain(q, d);
                assert!(text.starts_with("SELECT "), "{} {q:?}: {text}", d.name());
                assert!(!text.contains(';'), "{} {q:?}", d.name());
                assert!(text.contains("lineitem"));
            }
        }
    }

    #[test]
    fn sqlite_uses_days_and_hundredths() {
        let q6 = plain(QueryId::TpchQ6, &SQLITE);
        assert!(q6.contains("l_shipdate >= 8766 AND l_shipdate < 9131"), "{q6}");
        assert!(q6.contains("BETWEEN 5 AND 7 AND l_quantity < 2400"), "{q6}");
        let q1 = plain(QueryId::TpchQ1, &SQLITE);
        assert!(q1.contains("l_shipdate <= 10471"), "{q1}");
        let pg = plain(QueryId::TpchQ6, &PG_ROW);
        assert!(pg.contains("BETWEEN 0.05 AND 0.07 AND l_quantity < 24"), "{pg}");
        assert!(pg.contains("DATE '1994-01-01'"));
    }

    #[test]
    fn q14_joins_part_over_one_month_in_every_dialect() {
        assert_eq!(days(Q14_DATE_END) - days(Q14_DATE), 30, "September has 30 days");
        let lite = plain(QueryId::TpchQ14, &SQLITE);
        assert!(lite.contains("l_shipdate >= 9374 AND l_shipdate < 9404"), "{lite}");
        assert!(lite.contains("THEN l_extendedprice * (100 - l_discount) ELSE 0"), "{lite}");
        assert!(lite.starts_with("SELECT 100.0 * sum("), "{lite}");
        for d in [&PG_ROW as &dyn Dialect, &MYSQL, &DUCKDB, &HYPER] {
            let text = plain(QueryId::TpchQ14, d);
            assert!(text.contains("FROM lineitem, part WHERE l_partkey = p_partkey"), "{}: {text}", d.name());
            assert!(text.contains("l_shipdate >= DATE '1995-09-01' AND l_shipdate < DATE '1995-10-01'"), "{}: {text}", d.name());
            assert!(text.contains("CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END"), "{}", d.name());
        }
        assert!(plain(QueryId::TpchQ14, &MYSQL).contains("AS DOUBLE)"));
        let j = plain(QueryId::TpchQ14, &PG_JSONB);
        assert!(j.contains("(SELECT pk AS p_partkey, (v ->> 'p_type') AS p_type FROM part) AS part"), "{j}");
        assert!(j.contains("(v ->> 'l_partkey')::int8 AS l_partkey"), "{j}");
        assert_eq!(answer_columns(QueryId::TpchQ14), vec![ColumnType::Float]);
    }

    #[test]
    fn document_layouts_extract_typed_attributes_and_keys() {
        let q = |d: &dyn Dialect| sql(QueryId::TpchQ3, d, &mut |t: &str| format!("dbsweep.\"{t}_x\""));
        let h = q(&PG_HSTORE);
        assert!(h.contains("(v -> 'l_shipdate')::date AS l_shipdate"), "{h}");
        assert!(h.contains("pk AS o_orderkey"), "{h}");
        assert!(h.contains("FROM dbsweep.\"customer_x\") AS customer"), "{h}");
        let j = q(&PG_JSONB);
        assert!(j.contains("(v ->> 'l_discount')::numeric AS l_discount"), "{j}");
        assert_eq!(answer_columns(QueryId::TpchQ1).len(), 10);
    }
}
