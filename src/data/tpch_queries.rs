//! The analytic queries dbsweep runs (TPC-H Q1, Q3, Q6, Q14): their substitution
//! parameters (TPC-H's validation values) and the types of their result columns.
//!
//! Owns what every system's text of a query must compute and what its answer looks like:
//! group keys are Text, every sum and average is a Float, counts are Int, Q3's
//! `l_orderkey`/`o_shippriority` are Int and `o_orderdate` is a Date. Must not hold any
//! system's query text (SQL: `adapter::sql::tpch`; Redis: Lua in `adapter::kv::redis::tpch`).

use crate::base::op::QueryId;
use crate::base::table::{ColumnType, Date};

/// Q1: `l_shipdate <= date '1998-12-01' - interval '90' day` (validation DELTA = 90).
pub const Q1_SHIPDATE_MAX: &str = "1998-09-02";
/// Q3 validation parameters: SEGMENT and DATE.
pub const Q3_SEGMENT: &str = "BUILDING";
pub const Q3_DATE: &str = "1995-03-15";
/// Q6 validation parameters: DATE (a one-year window), DISCOUNT ± 0.01, QUANTITY.
pub const Q6_DATE: &str = "1994-01-01";
pub const Q6_DATE_END: &str = "1995-01-01";
/// Hundredths.
pub const Q6_DISCOUNT: i64 = 6;
pub const Q6_QUANTITY: i64 = 24;
/// Q14 validation parameter: DATE (a one-month window; `Q14_DATE_END` is DATE + 1 month).
pub const Q14_DATE: &str = "1995-09-01";
pub const Q14_DATE_END: &str = "1995-10-01";
/// Q14's part types on promotion: `p_type LIKE 'PROMO%'`.
pub const Q14_TYPE_PREFIX: &str = "PROMO";
/// Q3 returns the first 10 rows.
pub const Q3_LIMIT: usize = 10;

/// The result column types of `query`, in order.
pub fn answer_columns(query: QueryId) -> Vec<ColumnType> {
    use ColumnType::{Date as D, Float as F, Int as I, Text as T};
    match query {
        // returnflag, linestatus, sum_qty, sum_base_price, sum_disc_price, sum_charge,
        // avg_qty, avg_price, avg_disc, count_order
        QueryId::TpchQ1 => vec![T, T, F, F, F, F, F, F, F, I],
        // l_orderkey, revenue, o_orderdate, o_shippriority
        QueryId::TpchQ3 => vec![I, F, D, I],
        // revenue
        QueryId::TpchQ6 => vec![F],
        // promo_revenue
        QueryId::TpchQ14 => vec![F],
    }
}

/// Days since 1970-01-01 of an ISO date constant.
pub fn days(iso: &str) -> i32 {
    Date::from_iso(iso).expect("query constants are valid dates").0
}
