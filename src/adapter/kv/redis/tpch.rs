//! TPC-H Q1 and Q6 on Redis as server-side Lua scripts, the way the kv-vs-relational study
//! ran them (seed 000, §3.4: "the declarative SQL statements are translated into procedural
//! UDFs").
//!
//! Owns the two scripts, the `EVALSHA` commands that call them and the decoding of their
//! replies into the query's [`Answer`]. Must not write anything: both scripts only read.
//!
//! Each script walks the `lineitem` primary-key sorted set by rank, [`CHUNK`] members per
//! `ZRANGE`, `HMGET`s the fields it needs from each row hash, filters and aggregates, and
//! returns only the small result. Dates are stored as ISO text, so they are compared as
//! strings (same length, same layout: string order is date order). Decimals are stored as
//! text like `12.34` and turned into whole hundredths in Lua; every sum is kept exact as two
//! integer-valued doubles (`hi * 10^14 + lo`), which is exact while one row's term stays
//! below 2^53 - 10^14 (Q1's charge term, `price * (100 - disc) * (100 + tax)`, is below
//! 1.2 * 10^11). Redis turns Lua numbers into integer replies (dropping fractions), so the
//! scripts return every number as a decimal string and Rust divides and averages.
//!
//! Rows whose needed fields are missing (NULL) are skipped; generated TPC-H rows have none.
//! The joins (Q3, Q14) are not Redis queries: no script, refused as unsupported.
//!
//! Blocking: a script runs to completion while Redis serves nobody else (the study's
//! point). After `busy-reply-threshold` (`lua-time-limit`, 5 s by default) other clients get
//! `BUSY` errors until the script ends; the script is read-only, so `SCRIPT KILL` could stop
//! it. When the runner's per-op timeout fires, the client stops waiting but the script keeps
//! running on the server. Cost is linear in lineitem rows: with Redis 7.0.15 on the 2-core
//! build machine Q1 took 0.17 s and Q6 0.10 s at SF 0.01, Q1 1.7-2.1 s and Q6 1.0-1.5 s at
//! SF 0.1 (tests/library/redis_tpch.rs), so about 20 s and 10 s at SF 1: past the BUSY threshold,
//! within the runner's default 60 s per-op timeout.

use crate::base::op::{Answer, ErrorClass, OpError, QueryId};
use crate::base::table::{Row, Value};
use crate::data::tpch_queries;
use redis::{Cmd, Script};

/// Primary keys per `ZRANGE` inside the scripts.
pub(super) const CHUNK: usize = 1000;

/// The lineitem table and the fields the scripts read.
pub(super) const LINEITEM: &str = "lineitem";
const SHIPDATE: &str = "l_shipdate";
const RETURNFLAG: &str = "l_returnflag";
const LINESTATUS: &str = "l_linestatus";
const QUANTITY: &str = "l_quantity";
const EXTENDEDPRICE: &str = "l_extendedprice";
const DISCOUNT: &str = "l_discount";
const TAX: &str = "l_tax";

/// The base of the exact two-limb sums.
const LIMB: i128 = 100_000_000_000_000;

/// Q1. KEYS[1] lineitem pk set. ARGV: row-key prefix, max shipdate (ISO, inclusive), chunk
/// size, then the field names shipdate, returnflag, linestatus, quantity, extendedprice,
/// discount, tax. Returns one array per group, in no particular order: returnflag,
/// linestatus, then hi and lo limbs (decimal strings) of sum(qty) in hundredths,
/// sum(price) in hundredths, sum(price * (100 - disc)) in 10^-4, sum(price * (100 - disc)
/// * (100 + tax)) in 10^-6, sum(disc) in hundredths, then the row count.
const Q1_LUA: &str = r"
local LIMB = 1e14
local function cents(text) return math.floor(tonumber(text) * 100 + 0.5) end
local function fmt(x) return string.format('%.0f', x) end
local prefix, maxdate, chunk = ARGV[1], ARGV[2], tonumber(ARGV[3])
local groups, keys = {}, {}
local start = 0
while true do
  local pks = redis.call('ZRANGE', KEYS[1], start, start + chunk - 1)
  if #pks == 0 then break end
  for i = 1, #pks do
    local f = redis.call('HMGET', prefix .. pks[i], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10])
    local ship = f[1]
    if ship and ship <= maxdate and f[2] and f[3] and f[4] and f[5] and f[6] and f[7] then
      local key = f[2] .. '\0' .. f[3]
      local g = groups[key]
      if not g then
        g = {f[2], f[3], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
        groups[key] = g
        keys[#keys + 1] = key
      end
      local ep, d = cents(f[5]), cents(f[6])
      local dp = ep * (100 - d)
      g[4] = g[4] + cents(f[4])
      g[6] = g[6] + ep
      g[8] = g[8] + dp
      g[10] = g[10] + dp * (100 + cents(f[7]))
      g[12] = g[12] + d
      g[13] = g[13] + 1
      for s = 4, 12, 2 do
        local v = g[s]
        if v >= LIMB or v < 0 then
          local k = math.floor(v / LIMB)
          g[s - 1] = g[s - 1] + k
          g[s] = v - k * LIMB
        end
      end
    end
  end
  start = start + chunk
end
local out = {}
for _, key in ipairs(keys) do
  local g = groups[key]
  local row = {g[1], g[2]}
  for s = 3, 13 do row[s] = fmt(g[s]) end
  out[#out + 1] = row
end
return out
";

/// Q6. KEYS[1] lineitem pk set. ARGV: row-key prefix, first shipdate (inclusive), last
/// shipdate (exclusive), min and max discount in hundredths (inclusive), quantity bound in
/// hundredths (exclusive), chunk size, then the field names shipdate, discount, quantity,
/// extendedprice. Returns {hi, lo, matches}: the limbs of sum(price * disc) in 10^-4 and
/// the number of matching rows, as decimal strings.
const Q6_LUA: &str = r"
local LIMB = 1e14
local function cents(text) return math.floor(tonumber(text) * 100 + 0.5) end
local function fmt(x) return string.format('%.0f', x) end
local prefix, lo_date, hi_date = ARGV[1], ARGV[2], ARGV[3]
local dmin, dmax, qmax, chunk = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local hi, lo, n = 0, 0, 0
local start = 0
while true do
  local pks = redis.call('ZRANGE', KEYS[1], start, start + chunk - 1)
  if #pks == 0 then break end
  for i = 1, #pks do
    local f = redis.call('HMGET', prefix .. pks[i], ARGV[8], ARGV[9], ARGV[10], ARGV[11])
    local ship = f[1]
    if ship and ship >= lo_date and ship < hi_date and f[2] and f[3] and f[4] then
      local d = cents(f[2])
      if d >= dmin and d <= dmax and cents(f[3]) < qmax then
        lo = lo + cents(f[4]) * d
        n = n + 1
        if lo >= LIMB or lo < 0 then
          local k = math.floor(lo / LIMB)
          hi = hi + k
          lo = lo - k * LIMB
        end
      end
    end
  end
  start = start + chunk
end
return {fmt(hi), fmt(lo), fmt(n)}
";

/// The query scripts, loaded once per server by `prepare`/`connect`, called by `EVALSHA`.
pub(super) struct Scripts {
    pub q1: Script,
    pub q6: Script,
}

impl Scripts {
    pub fn new() -> Self {
        Scripts { q1: Script::new(Q1_LUA), q6: Script::new(Q6_LUA) }
    }

    pub fn all(&self) -> [&Script; 2] {
        [&self.q1, &self.q6]
    }

    /// The `EVALSHA` that runs `query` over the lineitem rows `<row_prefix><pk>` listed in
    /// `pk_set`; `None` for queries Redis does not run.
    pub fn command(&self, query: QueryId, row_prefix: &str, pk_set: &str) -> Option<Cmd> {
        let mut cmd = redis::cmd("EVALSHA");
        match query {
            QueryId::TpchQ1 => {
                cmd.arg(self.q1.get_hash()).arg(1).arg(pk_set).arg(row_prefix).arg(tpch_queries::Q1_SHIPDATE_MAX).arg(CHUNK);
                cmd.arg(&[SHIPDATE, RETURNFLAG, LINESTATUS, QUANTITY, EXTENDEDPRICE, DISCOUNT, TAX]);
            }
            QueryId::TpchQ6 => {
                cmd.arg(self.q6.get_hash())
                    .arg(1)
                    .arg(pk_set)
                    .arg(row_prefix)
                    .arg(tpch_queries::Q6_DATE)
                    .arg(tpch_queries::Q6_DATE_END)
                    .arg(tpch_queries::Q6_DISCOUNT - 1)
                    .arg(tpch_queries::Q6_DISCOUNT + 1)
                    .arg(tpch_queries::Q6_QUANTITY * 100)
                    .arg(CHUNK);
                cmd.arg(&[SHIPDATE, DISCOUNT, QUANTITY, EXTENDEDPRICE]);
            }
            // Joins: not offered.
            QueryId::TpchQ3 | QueryId::TpchQ14 => return None,
        }
        Some(cmd)
    }
}

fn wrong(query: QueryId, what: impl std::fmt::Display) -> OpError {
    OpError::new(ErrorClass::WrongResult, format!("redis: {query:?} script reply: {what}"))
}

fn text(query: QueryId, v: &redis::Value) -> Result<&str, OpError> {
    match v {
        redis::Value::BulkString(bytes) => std::str::from_utf8(bytes).map_err(|_| wrong(query, "not UTF-8")),
        redis::Value::SimpleString(s) => Ok(s),
        other => Err(wrong(query, format_args!("expected a string, got {other:?}"))),
    }
}

fn int(query: QueryId, v: &redis::Value) -> Result<i128, OpError> {
    let t = text(query, v)?;
    t.parse().map_err(|_| wrong(query, format_args!("'{t}' is not an integer")))
}

/// The exact sum held in a (hi, lo) pair of limbs.
fn limbs(query: QueryId, hi: &redis::Value, lo: &redis::Value) -> Result<i128, OpError> {
    Ok(int(query, hi)? * LIMB + int(query, lo)?)
}

fn items(query: QueryId, v: &redis::Value) -> Result<&[redis::Value], OpError> {
    match v {
        redis::Value::Array(items) => Ok(items),
        other => Err(wrong(query, format_args!("expected an array, got {other:?}"))),
    }
}

/// Decodes a script reply into the query's answer (columns and types of
/// [`tpch_queries::answer_columns`], rows in the query's order).
pub(super) fn decode(query: QueryId, reply: &redis::Value) -> Result<Answer, OpError> {
    match query {
        QueryId::TpchQ1 => {
            let mut rows: Vec<(String, String, Row)> = Vec::new();
            for group in items(query, reply)? {
                let g = items(query, group)?;
                if g.len() != 13 {
                    return Err(wrong(query, format_args!("a group has {} fields, expected 13", g.len())));
                }
                let sum = |i: usize| limbs(query, &g[i], &g[i + 1]);
                let (qty, base, disc_price, charge, disc) = (sum(2)?, sum(4)?, sum(6)?, sum(8)?, sum(10)?);
                let count = int(query, &g[12])?;
                if count <= 0 {
                    return Err(wrong(query, "a group without rows"));
                }
                let n = count as f64;
                let (flag, status) = (text(query, &g[0])?.to_string(), text(query, &g[1])?.to_string());
                rows.push((
                    flag.clone(),
                    status.clone(),
                    vec![
                        Value::Text(flag.into()),
                        Value::Text(status.into()),
                        Value::Float(qty as f64 / 100.0),
                        Value::Float(base as f64 / 100.0),
                        Value::Float(disc_price as f64 / 1e4),
                        Value::Float(charge as f64 / 1e6),
                        Value::Float(qty as f64 / 100.0 / n),
                        Value::Float(base as f64 / 100.0 / n),
                        Value::Float(disc as f64 / 100.0 / n),
                        Value::Int(count as i64),
                    ],
                ));
            }
            // ORDER BY l_returnflag, l_linestatus.
            rows.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
            Ok(Answer::Table(rows.into_iter().map(|(_, _, row)| row).collect()))
        }
        QueryId::TpchQ6 => {
            let r = items(query, reply)?;
            if r.len() != 3 {
                return Err(wrong(query, format_args!("{} values, expected 3", r.len())));
            }
            // SUM over no rows is NULL in SQL.
            let revenue = if int(query, &r[2])? == 0 { Value::Null } else { Value::Float(limbs(query, &r[0], &r[1])? as f64 / 1e4) };
            Ok(Answer::Table(vec![vec![revenue]]))
        }
        QueryId::TpchQ3 | QueryId::TpchQ14 => Err(OpError::new(ErrorClass::Unsupported, format!("redis does not run {query:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> redis::Value {
        redis::Value::BulkString(x.as_bytes().to_vec())
    }

    #[test]
    fn q1_groups_are_decoded_exactly_and_ordered() {
        // Two groups out of order; the charge sum needs its high limb.
        let group = |flag: &str, status: &str, charge_hi: &str| {
            redis::Value::Array(vec![
                s(flag),
                s(status),
                s("0"),
                s("300"), // qty 3.00
                s("0"),
                s("1050"), // price 10.50
                s("0"),
                s("99750"), // 9.975
                s(charge_hi),
                s("5"),
                s("0"),
                s("10"), // discounts: 0.10 in total
                s("2"),
            ])
        };
        let reply = redis::Value::Array(vec![group("R", "F", "0"), group("A", "F", "3")]);
        let Answer::Table(rows) = decode(QueryId::TpchQ1, &reply).unwrap() else { panic!() };
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0][0], Value::Text("A".into()));
        assert_eq!(rows[1][0], Value::Text("R".into()));
        assert_eq!(rows[0][2], Value::Float(3.0));
        assert_eq!(rows[0][3], Value::Float(10.5));
        assert_eq!(rows[0][4], Value::Float(9.975));
        // 3 * 10^14 + 5 millionths.
        assert_eq!(rows[0][5], Value::Float((3 * LIMB + 5) as f64 / 1e6));
        assert_eq!(rows[1][5], Value::Float(5e-6));
        assert_eq!(rows[0][6], Value::Float(1.5));
        assert_eq!(rows[0][8], Value::Float(0.05));
        assert_eq!(rows[0][9], Value::Int(2));
        assert_eq!(rows[0].len(), tpch_queries::answer_columns(QueryId::TpchQ1).len());
    }

    #[test]
    fn q6_revenue_and_empty_sum() {
        let reply = redis::Value::Array(vec![s("1"), s("12345"), s("7")]);
        let expected = Answer::Table(vec![vec![Value::Float((LIMB + 12345) as f64 / 1e4)]]);
        assert_eq!(decode(QueryId::TpchQ6, &reply).unwrap(), expected);
        let none = redis::Value::Array(vec![s("0"), s("0"), s("0")]);
        assert_eq!(decode(QueryId::TpchQ6, &none).unwrap(), Answer::Table(vec![vec![Value::Null]]));
        // Redis truncating a Lua number to an integer reply would be caught, not misread.
        let truncated = redis::Value::Array(vec![redis::Value::Int(0), s("1"), s("1")]);
        assert_eq!(decode(QueryId::TpchQ6, &truncated).unwrap_err().class, ErrorClass::WrongResult);
    }

    #[test]
    fn joins_are_not_redis_queries() {
        for q in [QueryId::TpchQ3, QueryId::TpchQ14] {
            assert!(Scripts::new().command(q, "dbsweep:lineitem", "dbsweep:lineitem:pk").is_none(), "{q:?}");
            assert_eq!(decode(q, &redis::Value::Nil).unwrap_err().class, ErrorClass::Unsupported, "{q:?}");
        }
    }
}
